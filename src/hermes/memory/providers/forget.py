"""Forgetting a user at the external provider (SPEC §13 `DELETE /api/users/{id}`).

When this process runs the provider (a server), the deletion goes through its worker, after
the turns already queued for that user, so nothing queued re-adds them afterwards. Otherwise
(a CLI command) the provider's client is opened just for this.
"""

from __future__ import annotations

import importlib
import threading
from pathlib import Path
from typing import TYPE_CHECKING

from hermes.config.settings import Settings
from hermes.memory.providers.backend import Backend, ProviderError
from hermes.memory.providers.identity import provider_user

if TYPE_CHECKING:
    from hermes.memory.providers.external import ExternalMemory

FORGET_TIMEOUT_S = 60.0

_live: dict[tuple[Path, str], ExternalMemory] = {}
_guard = threading.Lock()


def track(provider: ExternalMemory) -> None:
    with _guard:
        _live[(provider.settings.home, provider.name)] = provider


def untrack(provider: ExternalMemory) -> None:
    with _guard:
        key = (provider.settings.home, provider.name)
        if _live.get(key) is provider:
            del _live[key]


def forget_provider_memory(settings: Settings, scope: str) -> int:
    """Delete everything the configured provider keeps about `scope`; the number of items
    removed (0 when no provider is configured). Blocking: call it from a thread. Raises
    ProviderError with a sentence when the provider did not do it (down, failing, too slow):
    forgetting is idempotent, so the sentence says to run it again."""
    with _guard:  # the provider running here, whichever it is (a plugin's too)
        live = next((p for (home, _), p in _live.items() if home == settings.home), None)
    name = live.name if live is not None else settings.memory.provider
    if name is None:
        return 0
    try:
        if live is not None:
            return live.forget(scope, FORGET_TIMEOUT_S)
        backend = make_backend(settings)
        try:
            return backend.forget(provider_user(scope))
        finally:
            backend.close()
    except Exception as exc:
        why = str(exc) or type(exc).__name__
        raise ProviderError(
            f"{name} did not delete what it keeps of this user ({why}); everything else is "
            f"forgotten: forget the user again once {name} answers"
        ) from None


def make_backend(settings: Settings) -> Backend:
    """The configured provider's backend, opened directly (CLI commands, setup)."""
    name = settings.memory.provider
    if name is None:
        raise ProviderError("no external memory provider is configured (memory.provider)")
    adapter = importlib.import_module(f"hermes.memory.providers.{name}")
    backend: Backend = adapter.BACKEND(settings)
    return backend
