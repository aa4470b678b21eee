"""Which model names a request may name: the advertised one and the configured upstream one.

A client that names a model Hermes does not offer gets OpenAI's 404 `model_not_found`, not an
answer from another model under the name it asked for; `GET /v1/models/{id}` and the turn
endpoints agree because both ask this module.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from hermes.config.settings import ServerSettings, Settings
from hermes.models.images import ImageLimits
from hermes.server.errors import APIError

if TYPE_CHECKING:
    from hermes.runtime import Runtime

_SHOWN_CHARS = 100
HERMES = ServerSettings.model_fields["model_name"].default
_IMAGE_PART_TYPES = (b'"image_url"', b'"input_image"')
OFF_LOOP_BYTES = 256_000
"""A body with images larger than this is parsed in a worker thread (base64 decode, hashing)."""


async def image_limits(runtime: Runtime, raw: bytes) -> ImageLimits | None:
    """The limits a request's images are taken under, None when the model does not see. Only
    a body naming an image part asks (so a text request never waits on `GET /models`)."""
    if not any(kind in raw for kind in _IMAGE_PART_TYPES):
        return None
    return await runtime.agent.vision.limits()


def offered_models(settings: Settings) -> list[str]:
    """The advertised name (`server.model_name`, listed by /v1/models) first, then the model
    Hermes actually calls (`model.name`), which clients configured for it may send, and in a
    named profile advertising its own name, `hermes` (what clients of the default send)."""
    names = [settings.server.model_name]
    upstream = settings.model.name
    if upstream and upstream not in names:
        names.append(upstream)
    if settings.server.model_name == settings.profile and HERMES not in names:
        names.append(HERMES)  # a named profile advertises its name; `hermes` still works
    return names


def model_or_404(requested: str | None, settings: Settings) -> str:
    """The name a response reports: the requested one when offered, the advertised one when
    the request named none; any other name is a 404 in OpenAI's shape."""
    offered = offered_models(settings)
    if not requested:
        return offered[0]
    if requested in offered:
        return requested
    shown = requested if len(requested) <= _SHOWN_CHARS else requested[:_SHOWN_CHARS] + "..."
    choices = " or ".join(f"'{name}'" for name in offered)
    raise APIError(
        404,
        f"The model '{shown}' does not exist on this server; send `model`: {choices} "
        "(GET /v1/models lists what is offered).",
        code="model_not_found",
        param="model",
    )
