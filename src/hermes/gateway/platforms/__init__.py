"""The messaging platforms: what the core asks of one (`PlatformSpec`) and where they come from.

Every platform is registered through the plugin registry (`Registry.platform`), the built-in
ones by `hermes.gateway.part` exactly as a third-party plugin would: a platform module defines
`PLATFORM` (a `PlatformSpec`) and its `gateway.<name>` config model, and is imported only when
needed, so a platform's optional library is required only once its credentials are set."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from hermes.config.fields import comma_list
from hermes.config.settings import Settings
from hermes.errors import HermesError
from hermes.gateway.base import PlatformAdapter

if TYPE_CHECKING:
    from hermes.plugins import Registry

BUILTIN: dict[str, str] = {
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
"""The platforms Hermes ships, registered by the gateway part (name → module)."""


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
        listed = comma_list(settings.gateway.platform(self.name).get(self.allow_key) or [])
        return frozenset(self.normalize_sender(s.strip()) for s in listed if s.strip())


def needs(platform: str, *keys: str) -> Callable[[Settings], bool]:
    """A `configured` check: every one of `keys` is set in `gateway.<platform>`."""

    def configured(settings: Settings) -> bool:
        section = settings.gateway.platform(platform)
        return all(section.get(key) for key in keys)

    return configured


class UnknownPlatformError(HermesError, LookupError):
    """A platform name no part registers; the message lists the known ones."""


def _registry(registry: Registry | None, settings: Settings | None) -> Registry:
    if registry is not None:
        return registry
    from hermes.plugins import load_registry

    return load_registry(settings)


def names(registry: Registry | None = None, settings: Settings | None = None) -> list[str]:
    """Every registered platform's name, built-ins first."""
    return list(_registry(registry, settings).platforms)


def spec(
    name: str, registry: Registry | None = None, settings: Settings | None = None
) -> PlatformSpec:
    """The platform `name` (its module imported now, if registered by module path)."""
    found = _registry(registry, settings).platforms.get(name)
    if found is None:
        known = ", ".join(names(registry, settings))
        raise UnknownPlatformError(
            f"{name!r} is not a messaging platform Hermes knows; known: {known} "
            "(a plugin's platform shows in `hermes plugins list`)"
        )
    if isinstance(found, str):
        loaded: PlatformSpec = importlib.import_module(found).PLATFORM
        return loaded
    return found


def all_specs(
    registry: Registry | None = None, settings: Settings | None = None
) -> list[PlatformSpec]:
    registry = _registry(registry, settings)
    return [spec(name, registry) for name in registry.platforms]


def configured_specs(settings: Settings, registry: Registry | None = None) -> list[PlatformSpec]:
    """The platforms whose credentials are set. A built-in one with an empty `gateway.<name>`
    section is not asked: its module, and the HTTP and mail libraries it imports, would load
    on every server start only to say no."""
    registry = _registry(registry, settings)
    return [
        found
        for name, where in registry.platforms.items()
        if not (BUILTIN.get(name) == where and not settings.gateway.platform(name))
        and (found := spec(name, registry)).configured(settings)
    ]
