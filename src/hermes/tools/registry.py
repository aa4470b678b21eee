"""A tool is a typed Python function; its JSON schema comes from its signature and docstring."""

from __future__ import annotations

import asyncio
import inspect
import json
import logging
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Protocol, TypeVar, get_type_hints, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model

from hermes.config.settings import Settings
from hermes.errors import HermesError
from hermes.models.wire import FrozenMessage
from hermes.redact import Redactor, redact
from hermes.services import ServiceMissingError, Services
from hermes.store.base import Store
from hermes.tools.approval import Approver
from hermes.tools.schema import tool_parameters

log = logging.getLogger(__name__)

MAX_RESULT_CHARS = 50_000
T = TypeVar("T")


class ToolError(HermesError):
    """Raised by a tool to tell the model, in one sentence, why the call failed."""


@dataclass
class ToolContext:
    """What a tool may know about the call: whose data (scope), which session, where from, the
    runtime's typed services, and who can approve a dangerous action (None: nobody to ask)."""

    scope: str
    session_id: str
    services: Services
    platform: str = "cli"
    approver: Approver | None = None
    turn: int | None = None
    """Index of the session's message making the current tool calls (recorded with memory
    versions, so a change links back to the message that made it)."""
    reason: str | None = None
    """What the caller says its tool calls are for (the memory review's summary)."""

    @property
    def settings(self) -> Settings:
        return self.services.get(Settings)

    @property
    def store(self) -> Store:
        return self.services.get(Store)  # type: ignore[type-abstract]

    def service(self, kind: type[T]) -> T:
        """`services.get(kind)`, with a missing service reported to the model as a tool error."""
        try:
            return self.services.get(kind)
        except ServiceMissingError as exc:
            raise ToolError(str(exc)) from None


@dataclass(frozen=True)
class ToolOutcome:
    text: str
    ok: bool


_ARG_LINE = re.compile(r"^\s{2,}(\w+)\s*(?:\([^)]*\))?:\s*(.+)$")


def _parse_docstring(doc: str) -> tuple[str, dict[str, str]]:
    """Split a Google-style docstring into its description and per-argument text."""
    description_lines: list[str] = []
    args: dict[str, str] = {}
    in_args = False
    current: str | None = None
    for line in (doc or "").splitlines():
        stripped = line.strip()
        if stripped in ("Args:", "Arguments:", "Parameters:"):
            in_args = True
            continue
        if in_args:
            match = _ARG_LINE.match(line)
            if match:
                current = match.group(1)
                args[current] = match.group(2).strip()
            elif stripped and current and line.startswith("      "):
                args[current] += " " + stripped
            elif stripped and not line.startswith(" "):
                in_args = False
            continue
        description_lines.append(stripped)
    description = " ".join(" ".join(description_lines).split())
    return description, args


class Tool:
    """A callable the model can request, with its validated argument model."""

    def __init__(self, func: Callable[..., Any], *, name: str | None = None) -> None:
        self.func = func
        self.name = name or func.__name__
        self.is_async = inspect.iscoroutinefunction(func)
        signature = inspect.signature(func)
        hints = get_type_hints(func)
        self.description, arg_docs = _parse_docstring(inspect.getdoc(func) or "")
        params = list(signature.parameters.values())
        self.takes_context = bool(params) and hints.get(params[0].name) is ToolContext
        if self.takes_context:
            params = params[1:]
        self._fields: dict[str, Any] = {}
        for p in params:
            annotation = hints.get(p.name, Any)
            default = ... if p.default is inspect.Parameter.empty else p.default
            self._fields[p.name] = (annotation, Field(default, description=arg_docs.get(p.name)))
        self._schema: FrozenMessage | None = None

    # The argument model and its JSON schema are built when first asked for (the first turn's
    # request, or a call), not when the module defining the tool is imported: ~1-2 ms a tool
    # on the path of every start.
    @cached_property
    def args_model(self) -> type[BaseModel]:
        return create_model(
            f"{self.name}_args", __config__=ConfigDict(extra="forbid"), **self._fields
        )

    @cached_property
    def parameters(self) -> dict[str, Any]:
        return tool_parameters(self.args_model.model_json_schema())

    def schema(self) -> dict[str, Any]:
        """The OpenAI function schema; built once and frozen so its JSON is encoded once."""
        if self._schema is None:
            self._schema = FrozenMessage(
                type="function",
                function={
                    "name": self.name,
                    "description": self.description,
                    "parameters": self.parameters,
                },
            )
        return self._schema

    async def invoke(self, ctx: ToolContext, arguments: dict[str, Any]) -> Any:
        validated = self.args_model.model_validate(arguments)
        kwargs = {name: getattr(validated, name) for name in type(validated).model_fields}
        call_args = (ctx,) if self.takes_context else ()
        if self.is_async:
            return await self.func(*call_args, **kwargs)
        return await asyncio.to_thread(self.func, *call_args, **kwargs)


def tool(func: Callable[..., Any] | None = None, *, name: str | None = None) -> Any:
    """Decorator: turn a typed function (docstring = description + Args) into a Tool."""

    def wrap(f: Callable[..., Any]) -> Tool:
        return Tool(f, name=name)

    return wrap(func) if func is not None else wrap


def _render(result: Any) -> str:
    if isinstance(result, str):
        text = result
    else:
        text = json.dumps(result, ensure_ascii=False, default=str)
    if len(text) > MAX_RESULT_CHARS:
        text = text[:MAX_RESULT_CHARS] + f"\n[... truncated {len(text) - MAX_RESULT_CHARS} chars]"
    return text


def _validation_message(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors()[:5]:
        loc = ".".join(str(p) for p in err["loc"]) or "arguments"
        parts.append(f"{loc}: {err['msg']}")
    return "; ".join(parts)


@runtime_checkable
class ToolSource(Protocol):
    """Tools that come and go while the process runs (an MCP server connects, reconnects, or
    dies). A toolset holding a source asks it for its current tools each time it is read, so
    tools that appear after startup reach the next turn without rebuilding anything."""

    def current_tools(self) -> list[Tool]: ...

    async def prepare(self) -> None:
        """Called before a turn reads the tools: start connecting (bounded, never hangs)."""


def _allow_all(_name: str) -> bool:
    return True


class Toolset:
    """An ordered set of tools; compose by filtering rather than by flags. Its fixed tools never
    change; tools from a `ToolSource` are read live and pass through the same filters."""

    def __init__(
        self,
        tools: Iterable[Tool] = (),
        *,
        sources: Iterable[ToolSource] = (),
        allow: Callable[[str], bool] = _allow_all,
    ) -> None:
        self._tools: dict[str, Tool] = {}
        for t in tools:
            if t.name in self._tools:
                raise ValueError(f"two tools are named {t.name!r}")
            self._tools[t.name] = t
        self._sources = tuple(sources)
        self._allow = allow

    def _current(self) -> dict[str, Tool]:
        if not self._sources:
            return self._tools
        merged = dict(self._tools)
        for source in self._sources:
            for t in source.current_tools():
                if t.name not in merged and self._allow(t.name):
                    merged[t.name] = t
        return merged

    def __contains__(self, name: object) -> bool:
        return name in self._current()

    def __len__(self) -> int:
        return len(self._current())

    def names(self) -> list[str]:
        return list(self._current())

    def get(self, name: str) -> Tool | None:
        return self._current().get(name)

    def schemas(self) -> list[dict[str, Any]]:
        return [t.schema() for t in self._current().values()]

    def _derive(self, tools: Iterable[Tool], allow: Callable[[str], bool]) -> Toolset:
        return Toolset(tools, sources=self._sources, allow=allow)

    def only(self, names: Iterable[str]) -> Toolset:
        wanted = set(names)
        allow = self._allow
        return self._derive(
            (t for t in self._tools.values() if t.name in wanted),
            lambda name: name in wanted and allow(name),
        )

    def without(self, names: Iterable[str]) -> Toolset:
        unwanted = set(names)
        allow = self._allow
        return self._derive(
            (t for t in self._tools.values() if t.name not in unwanted),
            lambda name: name not in unwanted and allow(name),
        )

    def plus(self, tools: Iterable[Tool]) -> Toolset:
        return self._derive([*self._tools.values(), *tools], self._allow)

    async def prepare(self) -> None:
        """Let the live sources get ready before a turn reads them."""
        for source in self._sources:
            await source.prepare()

    def plus_source(self, source: ToolSource) -> Toolset:
        """This toolset, with `source`'s live tools after its fixed ones (fixed names win)."""
        return Toolset(self._tools.values(), sources=(*self._sources, source), allow=self._allow)

    async def call(self, name: str, arguments: str, ctx: ToolContext) -> ToolOutcome:
        """Run one tool call; every failure becomes error text for the model, never a crash.
        The text is bounded and key-shaped secrets are masked (the runtime's `Redactor` also
        knows this install's own secrets)."""
        outcome = await self._call(name, arguments, ctx)
        masker = ctx.services.find(Redactor) or redact
        return ToolOutcome(masker(outcome.text), outcome.ok)

    async def _call(self, name: str, arguments: str, ctx: ToolContext) -> ToolOutcome:
        current = self._current()
        found = current.get(name)
        if found is None:
            return ToolOutcome(
                f"Error: there is no tool named {name!r}. Available: "
                f"{', '.join(current) or 'none'}.",
                ok=False,
            )
        try:
            parsed = json.loads(arguments) if arguments and arguments.strip() else {}
        except json.JSONDecodeError as exc:
            return ToolOutcome(f"Error: the arguments are not valid JSON ({exc.msg}).", ok=False)
        if not isinstance(parsed, dict):
            return ToolOutcome("Error: the arguments must be a JSON object.", ok=False)
        try:
            result = await found.invoke(ctx, parsed)
        except ValidationError as exc:
            return ToolOutcome(f"Error: invalid arguments: {_validation_message(exc)}.", ok=False)
        except ToolError as exc:
            return ToolOutcome(_render(f"Error: {exc}"), ok=False)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # a broken tool must not end the turn
            log.warning("tool %s raised %s", name, type(exc).__name__, exc_info=True)
            return ToolOutcome(f"Error: {name} failed: {type(exc).__name__}: {exc}", ok=False)
        return ToolOutcome(_render(result), ok=True)
