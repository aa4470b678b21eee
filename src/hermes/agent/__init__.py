"""The agent core: context building, the tool loop, per-session serialisation."""

from hermes.agent.loop import Agent, TurnObserver, TurnRequest, TurnResult

__all__ = ["Agent", "TurnObserver", "TurnRequest", "TurnResult"]
