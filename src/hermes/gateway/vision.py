"""Photos from a chat as images the model sees (`model.vision`), read from the files the
adapters saved.

Each photo (an attachment of kind "photo", or any image file) up to `model.images_per_message`
and `model.image_max_bytes` becomes an image marker line in the message text (see
`hermes.models.images`), so the caption and the marker are what is stored and searched, and
the bytes join the turn's images. A photo that is too large or not a readable image stays an
ordinary described file, as every attachment is without vision.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import replace

from hermes.gateway.base import Attachment, Inbound
from hermes.models.images import ImageBlob, ImageLimits, ImageRefused, blob_from_bytes

log = logging.getLogger(__name__)


def _is_image(attachment: Attachment) -> bool:
    return attachment.kind == "photo" or (attachment.mime or "").startswith("image/")


def has_photos(msg: Inbound) -> bool:
    return any(_is_image(a) for a in msg.attachments)


async def seen(msg: Inbound, limits: ImageLimits | None) -> tuple[Inbound, dict[str, ImageBlob]]:
    """The message with its photos as image markers, and their bytes by name."""
    if limits is None:
        return msg, {}
    blobs: dict[str, ImageBlob] = {}
    markers: list[str] = []
    for photo in (a for a in msg.attachments if _is_image(a)):
        if len(markers) == limits.per_message:
            break
        if photo.size is not None and photo.size > limits.max_bytes:
            log.info("a photo from %s is over model.image_max_bytes; sent as a file", msg.platform)
            continue
        try:
            data = await asyncio.to_thread(photo.path.read_bytes)
            blob = blob_from_bytes(data, limits, f"The photo {photo.name!r}")
        except (OSError, ImageRefused) as exc:
            log.info("a photo from %s reaches the model as a file: %s", msg.platform, exc)
            continue
        blobs[blob.name] = blob
        markers.append(f"[image: {blob.name}]")
    if not markers:
        return msg, {}
    text = "\n".join([msg.text.strip(), *markers] if msg.text.strip() else markers)
    return replace(msg, text=text), blobs
