"""Saving a file a chat user sent: streamed to `~/.hermes/gateway/files/<platform>/<chat>/`,
private to the owner, and bounded so one upload cannot fill the disk.

Adapters whose platform hands out a download URL (Slack, Discord) use this; the kind names
what the core does with the file: a "photo" may reach a vision model (`gateway.vision`), an
"audio" is transcribed (`gateway.voice`), anything else is described to the model by path.
"""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import TYPE_CHECKING

from hermes.gateway.base import AdapterError, Attachment

if TYPE_CHECKING:
    import httpx

MAX_FILE_BYTES = 25_000_000
"""Larger files are not downloaded (OpenAI's transcription limit; far above any photo's)."""
_SAFE = re.compile(r"[^A-Za-z0-9._-]")


def kind_of(mime: str | None) -> str:
    mime = (mime or "").lower()
    if mime.startswith("image/"):
        return "photo"
    if mime.startswith("audio/"):
        return "audio"
    return "video" if mime.startswith("video/") else "document"


def safe_name(name: str) -> str:
    return _SAFE.sub("_", name)[:120].lstrip(".") or "file"


async def fetch(
    client: httpx.AsyncClient,
    url: str,
    path: Path,
    *,
    name: str,
    mime: str | None,
    max_bytes: int = MAX_FILE_BYTES,
) -> Attachment:
    """Download `url` to `path` (0600, folders 0700); AdapterError when it fails or is too big."""
    import httpx  # here, not at import: it pulls rich and click (cold start)

    chunks: list[bytes] = []
    size = 0
    try:
        async with client.stream("GET", url) as response:
            response.raise_for_status()
            async for chunk in response.aiter_bytes():
                size += len(chunk)
                if size > max_bytes:
                    raise AdapterError(f"{name!r} is over {max_bytes} bytes; not downloaded")
                chunks.append(chunk)
            mime = mime or response.headers.get("content-type", "").split(";")[0] or None
    except httpx.HTTPError as exc:
        raise AdapterError(f"{name!r} could not be downloaded: {exc}", retryable=True) from None
    data = b"".join(chunks)
    await asyncio.to_thread(_write_private, path, data)
    return Attachment(path, kind_of(mime), name, mime, len(data))


def _write_private(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    path.touch(mode=0o600, exist_ok=True)
    path.write_bytes(data)
