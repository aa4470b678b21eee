"""Whether the model can see images: `model.vision` when set, else what the endpoint's model
list says about the model (asked once, on the first image).

Servers say it in different words: OpenRouter `architecture.input_modalities: ["text",
"image"]`, others `input_modalities`, `modalities.input`, `capabilities: ["vision"]` or
`type: "vlm"` (LM Studio). An endpoint that says none of these, or cannot be asked, is taken
not to see; an unreachable endpoint is asked again after a minute.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import TYPE_CHECKING, Any

from hermes.models.errors import ModelError
from hermes.models.images import ImageLimits

if TYPE_CHECKING:
    from hermes.config.settings import Settings
    from hermes.models.client import ModelClient

log = logging.getLogger(__name__)

RETRY_AFTER = 60.0


def sees_images(entry: dict[str, Any]) -> bool:
    """Whether one `GET /models` entry says its model takes images."""
    architecture = entry.get("architecture")
    modalities = entry.get("modalities")
    inputs = [
        entry.get("input_modalities"),
        architecture.get("input_modalities") if isinstance(architecture, dict) else None,
        modalities.get("input") if isinstance(modalities, dict) else None,
    ]
    if any(isinstance(v, list) and "image" in v for v in inputs):
        return True
    capabilities = entry.get("capabilities")
    if isinstance(capabilities, list) and "vision" in capabilities:
        return True
    if isinstance(capabilities, dict) and capabilities.get("vision") is True:
        return True
    return entry.get("type") == "vlm"


class VisionSupport:
    def __init__(self, settings: Settings, model: ModelClient) -> None:
        self.settings = settings
        self.model = model
        self._known: bool | None = None
        self._asked_at = 0.0
        self._lock = asyncio.Lock()

    async def enabled(self) -> bool:
        setting = self.settings.model.vision
        if setting is not None:
            return setting
        async with self._lock:
            if self._known is None or (
                not self._known and time.monotonic() - self._asked_at > RETRY_AFTER
            ):
                self._known = await self._ask()
                self._asked_at = time.monotonic()
        return self._known

    async def limits(self) -> ImageLimits | None:
        """The limits images are taken under; None when the model does not see."""
        if not await self.enabled():
            return None
        model = self.settings.model
        return ImageLimits(model.image_max_bytes, model.images_per_message)

    async def _ask(self) -> bool:
        name = self.settings.model.name
        try:
            entries = await self.model.list_models()
        except (ModelError, OSError, ValueError) as exc:
            log.info("could not ask the model endpoint whether it sees images: %s", exc)
            return False
        for entry in entries:
            if isinstance(entry, dict) and (name is None or entry.get("id") == name):
                found = sees_images(entry)
                log.info(
                    "model %s %s images (from GET /models)",
                    entry.get("id"),
                    "sees" if found else "does not see",
                )
                return found
        return False
