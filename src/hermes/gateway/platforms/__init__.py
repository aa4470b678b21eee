"""The platform registry. A new platform is one module here that defines `PLATFORM` (a
`PlatformSpec`) plus one line in `MODULES`; modules are imported only when needed, so a
platform's optional library is required only once its credentials are set."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass

from hermes.config.settings import Settings
from hermes.errors import HermesError
from hermes.gateway.base import PlatformAdapter

MODULES: dict[str, str] = {
    "telegram": "hermes.gateway.platforms.telegram",
    "email": "hermes.gateway.platforms.email",
    "whatsapp": "hermes.gateway.platforms.whatsapp",
    "sms": "hermes.gateway.platforms.sms",
    "slack": "hermes.gateway.platforms.slack",
    "discord": "hermes.gateway.platforms.discord",
    "matrix": "hermes.gateway.platforms.matrix",
    "signal": "hermes.gateway.platforms.signal_cli",
    "mattermost": "hermes.gateway.platforms.mattermost",
}


@dataclass(frozen=True)
class PlatformSpec:
    """How the core finds out whether a platform is set up, who may use it, and builds it."""

    name: str
    configured: Callable[[Settings], bool]
    """True when the credentials are set (the runner then starts the adapter)."""
    create: Callable[[Settings], PlatformAdapter]
    allow_key: str = "allowed_users"
    """The key of `gateway.<name>` that lists allowed sender ids."""
    normalize_sender: Callable[[str], str] = str

    def allowed_senders(self, settings: Settings) -> frozenset[str]:
        listed = settings.gateway.platform(self.name).get(self.allow_key) or []
        if isinstance(listed, str):
            listed = listed.split(",")
        return frozenset(self.normalize_sender(str(s).strip()) for s in listed if str(s).strip())


class UnknownPlatformError(HermesError, LookupError):
    """A platform name no module provides; the message lists the known ones."""


def spec(name: str) -> PlatformSpec:
    module = MODULES.get(name)
    if module is None:
        raise UnknownPlatformError(
            f"{name!r} is not a messaging platform Hermes knows; known: {', '.join(MODULES)}"
        )
    found: PlatformSpec = importlib.import_module(module).PLATFORM
    return found


def all_specs() -> list[PlatformSpec]:
    return [spec(name) for name in MODULES]


def configured_specs(settings: Settings) -> list[PlatformSpec]:
    return [s for s in all_specs() if s.configured(settings)]
