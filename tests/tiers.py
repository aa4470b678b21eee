"""The `integration` marker, applied at collection by what a test uses, so a new test that
needs a real server is marked without its author knowing: `pytest -m "not integration"` is
the fast tier, the whole suite is the full one.

A test is an integration test when it, or any fixture it uses, needs a real server: a
PostgreSQL database, Dovecot, Synapse, Chromium, or Hermes (or another process) started as a
subprocess; and when it is marked `semantic` (it runs the real embedding model). Fixtures are recognised by name; helpers that start processes by the names a
test's or fixture's code refers to, so indirect use through a fixture counts too.
"""

from __future__ import annotations

import sys
import types
from collections.abc import Callable, Iterable, Iterator

import pytest

# Fixtures whose value is (or reaches) a real server.
SERVER_FIXTURES = frozenset(
    {
        "pg_database",  # PostgreSQL (pg_url and on_each_backend's postgresql case go through it)
        "private_pg",  # a throwaway PostgreSQL cluster
        "dovecot",  # IMAP
        "synapse",  # Matrix homeserver
        "browser",  # headless Chromium
        "chromium",  # Chromium must be here: a test starting its own (a phone-sized window)
    }
)

# Helpers that start a real server or another process (`sys.executable`: another Python,
# such as the `hermes` CLI or a stdio MCP server; `Popen`, multiprocessing's `Process`): a
# test or fixture naming one in its code is an integration test.
SERVER_HELPERS = frozenset(
    {
        "executable",
        "Process",
        "hermes_serve",
        "run_cli_subprocess",
        "spawn_chat",
        "chat_in_pty",
        "start_dovecot",
        "Synapse",
        "pexpect",
        "Popen",
        "create_subprocess_exec",
        "create_subprocess_shell",
    }
)


def _code_objects(code: types.CodeType) -> Iterator[types.CodeType]:
    yield code
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from _code_objects(const)


def names_used(func: Callable[..., object], seen: set[int] | None = None) -> set[str]:
    """Global and attribute names `func`'s code refers to, with those of its nested functions
    and of the test-suite functions it calls (a helper that starts a server counts)."""
    func = getattr(func, "__wrapped__", func)
    code = getattr(func, "__code__", None)
    seen = set() if seen is None else seen
    if code is None or id(code) in seen:
        return set()
    seen.add(id(code))
    names = {name for c in _code_objects(code) for name in c.co_names}
    scope = getattr(func, "__globals__", {})
    for name in list(names):
        called = scope.get(name)
        if isinstance(called, types.FunctionType) and called.__module__.startswith("tests"):
            names |= names_used(called, seen)
        elif _names_the_interpreter(called):
            names.add("executable")  # a command line in a constant (an MCP server's config)
    return names


# by value, in a set (not looked into): naming `sys.executable` here, or keeping it in a
# string or tuple, would mark every test that calls into this module
_INTERPRETER = frozenset({sys.executable})


def _names_the_interpreter(value: object, depth: int = 0) -> bool:
    """Whether a constant (a dict, list or tuple, nested) holds `sys.executable`: a command
    something will start as a process."""
    if isinstance(value, str):
        return value in _INTERPRETER
    if depth > 4:
        return False
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, list | tuple):
        return any(_names_the_interpreter(v, depth + 1) for v in value)
    return False


def _fixture_funcs(item: pytest.Item) -> Iterable[Callable[..., object]]:
    info = getattr(item, "_fixtureinfo", None)
    for defs in getattr(info, "name2fixturedefs", {}).values():
        for fixturedef in defs:
            yield fixturedef.func


def needs_a_real_server(item: pytest.Item) -> bool:
    """Whether `item` (through its fixtures, parameters or own code) needs a real server,
    or the real embedding model (`semantic`: seconds of CPU to load and run, as much as
    the rest of the fast tier)."""
    get_marker = getattr(item, "get_closest_marker", None)
    if get_marker is not None and get_marker("semantic") is not None:
        return True
    if SERVER_FIXTURES & set(getattr(item, "fixturenames", ())):
        return True
    callspec = getattr(item, "callspec", None)
    if callspec is not None and callspec.params.get("store_url") == "postgresql":
        return True
    funcs = [getattr(item, "function", None), *_fixture_funcs(item)]
    return any(SERVER_HELPERS & names_used(f) for f in funcs if f is not None)


def mark_integration(items: list[pytest.Item]) -> None:
    for item in items:
        if item.get_closest_marker("integration") is None and needs_a_real_server(item):
            item.add_marker(pytest.mark.integration)
