"""Test helpers that ship with Hermes: `FakeModel`, a scripted OpenAI-compatible server."""

from hermes.testing.fake_model import Error, FakeModel, Hang, Text, ToolCalls

__all__ = ["Error", "FakeModel", "Hang", "Text", "ToolCalls"]
