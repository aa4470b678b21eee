"""The agent core: context building, the tool loop, per-session serialisation.

`Agent` and its turn types load on first use: the tool loop pulls in the model client and
every tool, which a command that only reads the store (`hermes sessions import`) never
needs (a second of start-up)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hermes.agent.loop import Agent
    from hermes.agent.turn import TurnObserver, TurnRequest, TurnResult

__all__ = ["Agent", "TurnObserver", "TurnRequest", "TurnResult"]


def __getattr__(name: str) -> Any:
    if name == "Agent":
        from hermes.agent import loop

        return loop.Agent
    if name in __all__:
        from hermes.agent import turn

        return getattr(turn, name)
    raise AttributeError(f"module 'hermes.agent' has no attribute {name!r}")
