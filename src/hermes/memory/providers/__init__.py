"""External memory providers (SPEC §5 layer 3, §15): Honcho, Mem0 and Supermemory, one at a
time (`memory.provider`), beside the built-in notes and search, never instead of them.

Each adapter is a `Backend` (backend.py) registered with `plugin.add_provider`, the same call a
third-party plugin makes; `ExternalMemory` (external.py) keeps every provider off the turn's
path. This part adds what they share: the `/health/detailed` entry and a clean stop that
drains the provider's queued work.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from hermes.plugins import Registry

if TYPE_CHECKING:
    from hermes.memory.providers.external import ExternalMemory
    from hermes.runtime import Runtime

NAMES = ("mem0", "honcho", "supermemory")


def active(runtime: Runtime) -> ExternalMemory | None:
    from hermes.memory.providers.external import ExternalMemory

    found = (p for p in runtime.agent.memory.providers if isinstance(p, ExternalMemory))
    return next(found, None)


async def provider_health(runtime: Runtime) -> dict[str, Any]:
    """The active provider's state: reachable, queue, drops, slow prefetches skipped."""
    provider = active(runtime)
    if provider is None:
        return {"status": "off", "detail": "no external memory provider (memory.provider)"}
    return provider.health()


class _Closer:
    """Drains the provider's worker when the runtime closes (a clean stop)."""

    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime

    async def aclose(self) -> None:
        provider = active(self.runtime)
        if provider is not None:
            await asyncio.to_thread(provider.close)


def register(hermes: Registry) -> None:
    import importlib

    hermes.health("memory_provider", provider_health)
    hermes.component(_Closer)
    for name in NAMES:
        importlib.import_module(f"hermes.memory.providers.{name}").register(hermes)
