"""A typed container of the long-lived objects a runtime shares (settings, store, scheduler, …).

Tools, memory providers and parts look collaborators up by their class, so a dependency is
named by its type instead of a string key in a dict: `ctx.services.get(Scheduler)`.
"""

from __future__ import annotations

from typing import Any, TypeVar

from hermes.errors import HermesError

T = TypeVar("T")


class ServiceMissingError(HermesError, LookupError):
    """Asked for a collaborator this runtime does not have; the message names it."""


class Services:
    """Instances keyed by type; `derive` makes a copy with additions for one context."""

    def __init__(self, *instances: object) -> None:
        self._items: dict[type[Any], object] = {}
        for instance in instances:
            self.provide(instance)

    def provide(self, instance: T, kind: type[T] | None = None) -> T:
        """Register `instance` under `kind` (default: its own class); replaces an earlier one."""
        self._items[kind or type(instance)] = instance
        return instance

    def find(self, kind: type[T]) -> T | None:
        """The instance registered as `kind` or as a subclass of it, else None."""
        found = self._items.get(kind)
        if found is None and not getattr(kind, "_is_protocol", False):
            # Protocols are registered under their own name (`provide(store, Store)`)
            found = next((v for k, v in self._items.items() if issubclass(k, kind)), None)
        return found  # type: ignore[return-value]

    def get(self, kind: type[T]) -> T:
        found = self.find(kind)
        if found is None:
            raise ServiceMissingError(
                f"{kind.__name__} is not available here (this surface was started without it)"
            )
        return found

    def derive(self, *instances: object) -> Services:
        """A copy with `instances` added or replaced; the original is left as it was."""
        child = Services()
        child._items = dict(self._items)
        for instance in instances:
            child.provide(instance)
        return child

    def __contains__(self, kind: object) -> bool:
        return isinstance(kind, type) and self.find(kind) is not None
