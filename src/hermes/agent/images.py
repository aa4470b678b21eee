"""Images of a session on disk, and the markers of its messages as model image parts.

A turn's images are written to `<scope root>/images/<sha256>.<ext>` (the default scope's root
is HERMES_HOME, a user's is `users/<dir>/`), so one scope never reads another's: a marker is
resolved in the directory of the scope whose turn it is. A stateless turn keeps its images in
memory only. At each model call (`for_model`) the markers of the last `model.image_turns`
user messages become OpenAI `image_url` parts (data URLs for stored images, the URL itself
for http(s) ones); older markers, and markers whose file is gone (another replica's disk, a
deleted file), become the text `[image]`. Without `model.vision` every marker is `[image]`.
A scope keeps at most `model.images_kept` images: the least recently sent are removed.
"""

from __future__ import annotations

import logging
import os
import re
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hermes.fileio import atomic_write
from hermes.models.images import (
    MARKER,
    MIME_OF_EXT,
    PLACEHOLDER,
    ImageBlob,
    strip_markers,
)
from hermes.models.wire import FrozenMessage, FrozenRuns
from hermes.scopes import scope_root

log = logging.getLogger(__name__)

STORED_NAME = re.compile(r"[0-9a-f]{64}\.(?:png|jpg|gif|webp)")
"""A stored image's file name: its sha256 and extension (what `ImageBlob.name` makes)."""


def image_dir(home: Path, scope: str) -> Path:
    return scope_root(home, scope) / "images"


_last_sent_ns = 0
_sent_lock = threading.Lock()


def _sent_now_ns() -> int:
    """A modification time later than any this process gave before. A file system's own
    times come from a coarse clock (a tick of some milliseconds on tmpfs and ext4), so two
    images sent in one tick would tie and the older could outlive the newer."""
    global _last_sent_ns
    with _sent_lock:
        _last_sent_ns = max(time.time_ns(), _last_sent_ns + 1)
        return _last_sent_ns


def save_images(home: Path, scope: str, blobs: Iterable[ImageBlob], keep: int) -> None:
    """Write each image once under its content address (an existing file is the same bytes,
    touched so it counts as recent), then keep only the `keep` most recently sent."""
    folder = image_dir(home, scope)
    for blob in blobs:
        path = folder / blob.name
        if not path.exists():
            folder.mkdir(parents=True, exist_ok=True, mode=0o700)
            atomic_write(path, blob.data)
        sent = _sent_now_ns()
        try:
            os.utime(path, ns=(sent, sent))
        except FileNotFoundError:  # pruned by another turn of this scope meanwhile
            atomic_write(path, blob.data)
            os.utime(path, ns=(sent, sent))
    prune_images(folder, keep)


def prune_images(folder: Path, keep: int) -> None:
    """Remove all but the `keep` newest images of `folder` (by modification time): the store
    of a scope is bounded in count, as each image is in size (`model.image_max_bytes`)."""
    try:
        entries = [
            (e.stat().st_mtime_ns, e.name)
            for e in os.scandir(folder)
            if STORED_NAME.fullmatch(e.name) and e.is_file()
        ]
    except OSError:
        return
    if len(entries) <= keep:
        return
    entries.sort(reverse=True)
    for _, name in entries[keep:]:
        (folder / name).unlink(missing_ok=True)  # another turn of this scope may be first
    log.info("removed %d image(s) past model.images_kept from %s", len(entries) - keep, folder)


@dataclass(frozen=True)
class ImageView:
    """How one turn shows images to its model."""

    home: Path
    scope: str
    keep_turns: int
    blobs: Mapping[str, ImageBlob]
    """This request's images, by name: found here before the disk (a stateless turn's only)."""

    def for_model(self, messages: list[dict[str, Any]], vision: bool) -> list[dict[str, Any]]:
        """`messages` with user markers as image parts (the newest `keep_turns` user messages,
        when the model sees) or `[image]`; the same list when no message holds a marker."""
        if not has_images(messages):
            return messages
        users = [i for i, m in enumerate(messages) if m.get("role") == "user"]
        shown = set(users[-self.keep_turns :]) if vision and self.keep_turns else set()
        out = []
        for i, message in enumerate(messages):
            if not _has_marker(message):
                out.append(message)
            elif i in shown:
                out.append({**message, "content": self._parts(message["content"])})
            else:
                out.append({**message, "content": strip_markers(message["content"])})
        return out

    def _parts(self, text: str) -> list[dict[str, Any]] | str:
        """Text with marker lines as image parts in between text parts."""
        parts: list[dict[str, Any]] = []
        lines: list[str] = []
        for line in text.split("\n"):
            match = MARKER.fullmatch(line)
            url = self._url(match["ref"]) if match else None
            if url is None:
                lines.append(PLACEHOLDER if match else line)
                continue
            if lines:
                parts.append({"type": "text", "text": "\n".join(lines)})
                lines = []
            parts.append({"type": "image_url", "image_url": {"url": url}})
        if not parts:  # no image could be shown: plain text, as without vision
            return "\n".join(lines)
        if lines and "\n".join(lines).strip():
            parts.append({"type": "text", "text": "\n".join(lines)})
        return parts

    def _url(self, ref: str) -> str | None:
        if ref.startswith(("http://", "https://")):
            return ref
        blob = self.blobs.get(ref)
        if blob is not None:
            return blob.data_url()
        path = image_dir(self.home, self.scope) / ref
        try:
            data = path.read_bytes()
        except OSError:
            log.info("image %s of scope %s is not on this disk; sent as [image]", ref, self.scope)
            return None
        mime = MIME_OF_EXT[ref.rsplit(".", 1)[1]]
        return ImageBlob(data, mime, ref.rsplit(".", 1)[1]).data_url()


def has_images(messages: Sequence[Mapping[str, Any]]) -> bool:
    """Whether any message holds an image marker (else `for_model` has nothing to do). Runs of
    frozen history messages are remembered, so a long session's turn checks only what is new."""
    i = 0
    while i < len(messages):
        if type(messages[i]) is FrozenMessage:
            found, i = _marked_runs.run(messages, i)
        else:
            found, i = _has_marker(messages[i]), i + 1
        if found:
            return True
    return False


def _any_marker(found: bool | None, messages: Sequence[Mapping[str, Any]]) -> bool:
    return bool(found) or any(_has_marker(m) for m in messages)


_marked_runs: FrozenRuns[bool] = FrozenRuns(_any_marker)


def _has_marker(message: Mapping[str, Any]) -> bool:
    content = message.get("content")
    return isinstance(content, str) and "[image: " in content
