"""Images in a conversation: checked once where they arrive, stored beside the transcript as
files, and carried in message text as one-line markers.

Why markers: every part of Hermes that reads a message (storage, search, compression, token
estimates, the dashboard) handles text. An image in a user message is kept there as the line
`[image: <ref>]`, where `<ref>` is `<sha256>.<ext>` (a file in the scope's `images/`
directory) or the http(s) URL the client sent. The base64 never enters the transcript, so
`session_search` finds the caption and never the bytes. Only at the model call are the
markers of the most recent user messages turned back into OpenAI `image_url` parts
(`hermes.agent.images`); older ones become the text `[image]`.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import re
from dataclasses import dataclass, field

from hermes.errors import HermesError

MARKER = re.compile(r"^\[image: (?P<ref>[0-9a-f]{64}\.(?:png|jpg|gif|webp)|https?://\S+)\]$", re.M)
PLACEHOLDER = "[image]"
MAX_URL_CHARS = 2048

_MAGIC: tuple[tuple[bytes, str, str], ...] = (
    (b"\x89PNG\r\n\x1a\n", "image/png", "png"),
    (b"\xff\xd8\xff", "image/jpeg", "jpg"),
    (b"GIF87a", "image/gif", "gif"),
    (b"GIF89a", "image/gif", "gif"),
)
_DATA_URL = re.compile(r"^data:(?P<mime>image/[A-Za-z0-9.+-]+);base64,(?P<data>.*)$", re.S)
MIME_OF_EXT = {"png": "image/png", "jpg": "image/jpeg", "gif": "image/gif", "webp": "image/webp"}


class ImageRefused(HermesError):
    """An image the request or chat sent cannot be used; `code` and `status` say how to answer
    over HTTP, the message names the limit or the fix."""

    def __init__(self, message: str, code: str = "invalid_image_url", status: int = 400) -> None:
        super().__init__(message)
        self.code = code
        self.status = status


@dataclass(frozen=True)
class ImageLimits:
    """`model.image_max_bytes` and `model.images_per_message`, as the parsers apply them."""

    max_bytes: int
    per_message: int


@dataclass(frozen=True)
class ImageBlob:
    """The decoded bytes of one image; `name` is its content address `<sha256>.<ext>`."""

    data: bytes
    mime: str
    ext: str

    @property
    def name(self) -> str:
        return f"{hashlib.sha256(self.data).hexdigest()}.{self.ext}"

    def data_url(self) -> str:
        return f"data:{self.mime};base64,{base64.b64encode(self.data).decode()}"


def sniff(data: bytes) -> tuple[str, str] | None:
    """(mime, ext) from an image's first bytes; None when it is no PNG, JPEG, GIF or WebP."""
    for magic, mime, ext in _MAGIC:
        if data.startswith(magic):
            return mime, ext
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp", "webp"
    return None


def blob_from_bytes(data: bytes, limits: ImageLimits, what: str = "The image") -> ImageBlob:
    if len(data) > limits.max_bytes:
        raise ImageRefused(
            f"{what} is {len(data)} bytes; images may be at most {limits.max_bytes} bytes "
            "(`model.image_max_bytes`). Send a smaller or more compressed image.",
            "image_too_large",
            413,
        )
    kind = sniff(data)
    if kind is None:
        raise ImageRefused(f"{what} is not a PNG, JPEG, GIF or WebP image.")
    return ImageBlob(data, *kind)


def blob_from_data_url(url: str, limits: ImageLimits, where: str) -> ImageBlob:
    match = _DATA_URL.match(url)
    if match is None:
        raise ImageRefused(
            f"{where} is a data URL Hermes cannot read; send data:image/<type>;base64,<data>."
        )
    encoded = match["data"]
    if len(encoded) * 3 // 4 > limits.max_bytes + 3:
        raise ImageRefused(
            f"{where} holds about {len(encoded) * 3 // 4} bytes; images may be at most "
            f"{limits.max_bytes} bytes (`model.image_max_bytes`). Send a smaller image.",
            "image_too_large",
            413,
        )
    try:
        data = base64.b64decode(encoded, validate=True)
    except (binascii.Error, ValueError):
        raise ImageRefused(f"{where} is not valid base64 image data.") from None
    return blob_from_bytes(data, limits, where)


@dataclass
class ImageSink:
    """The images one request brought, by name; what the turn stores and the model call reads."""

    limits: ImageLimits
    blobs: dict[str, ImageBlob] = field(default_factory=dict)

    def marker(self, url: object, where: str, count: int) -> str:
        """The marker line for one image part's URL, after checking it (`count`: images in this
        message so far, this one included)."""
        if self.limits.per_message == 0:
            raise ImageRefused(
                f"{where} is an image in a message that is not the user's; images are taken "
                "in user messages only.",
                "unsupported_content_type",
            )
        if count > self.limits.per_message:
            raise ImageRefused(
                f"{where}: a message may hold at most {self.limits.per_message} images "
                "(`model.images_per_message`).",
                "too_many_images",
            )
        if not isinstance(url, str) or not url:
            raise ImageRefused(f"{where} needs an image URL string (http(s) or data:image/...).")
        if url.startswith("data:"):
            blob = blob_from_data_url(url, self.limits, where)
            self.blobs[blob.name] = blob
            return f"[image: {blob.name}]"
        if not re.match(r"^https?://\S+$", url) or len(url) > MAX_URL_CHARS:
            raise ImageRefused(
                f"{where} must be an http(s) URL (at most {MAX_URL_CHARS} characters) or a "
                "data:image/...;base64 URL."
            )
        return f"[image: {url}]"

    def add(self, blob: ImageBlob) -> str:
        self.blobs[blob.name] = blob
        return f"[image: {blob.name}]"


def strip_markers(text: str) -> str:
    """The text with every image marker as `[image]` (what a model without vision sees)."""
    return MARKER.sub(PLACEHOLDER, text)
