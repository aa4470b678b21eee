"""Test helpers that ship with Hermes: `FakeModel`, a scripted OpenAI-compatible server.

The names are loaded on first use (PEP 562), not imported here: `python -m
hermes.testing.fake_model` imports this package first, and a package that had already
imported the module makes runpy warn ("found in sys.modules") at every start of the echo model.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hermes.testing.fake_model import Error, FakeModel, Hang, Text, ToolCalls

__all__ = ["Error", "FakeModel", "Hang", "Text", "ToolCalls"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        return getattr(import_module("hermes.testing.fake_model"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
