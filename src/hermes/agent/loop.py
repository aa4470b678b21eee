"""One agent turn: build context → call the model → run tools (bounded) → persist → after-turn."""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any
from zoneinfo import ZoneInfo

from hermes.agent.client_tools import (
    ClientTools,
    call_name,
    closing_results,
    resume_results,
)
from hermes.agent.context import PromptBlock, PromptContext, build_system_prompt
from hermes.agent.images import ImageView, has_images, save_images
from hermes.agent.locks import HeldSession, SessionLocks, settle
from hermes.agent.memory_providers import FenceScrubber, MemoryLayers, MemoryProvider, scrub_fences
from hermes.agent.policy import CallState, ContextPolicy, FullHistory
from hermes.agent.tokens import estimate_text_tokens
from hermes.agent.tool_loop import Limits, run_tool_loop
from hermes.agent.turn import TurnObserver, TurnRequest, TurnResult
from hermes.config.settings import Settings
from hermes.models.client import ModelClient
from hermes.models.errors import ContextLengthExceededError, ModelError
from hermes.models.outcome import ModelCalls
from hermes.models.types import Completion, ToolCall, Usage, tool_result
from hermes.models.vision import VisionSupport
from hermes.observability import context as ids
from hermes.observability import spans, tracing
from hermes.observability import usage as usage_records
from hermes.randomid import uuid4_hex
from hermes.services import Services
from hermes.store.base import MessageRecord, NewMessage, Store
from hermes.tools.registry import ToolContext, Toolset
from hermes.tools.toolsets import ToolGroups, select_toolset

log = logging.getLogger(__name__)

ITERATION_LIMIT_NOTE = (
    "You have used the maximum number of tool steps for this turn. Do not call tools; answer "
    "the user now with what you have, and say what is left undone."
)


AfterTurnHook = Callable[[TurnResult, "Agent"], Awaitable[None]]


@dataclass
class _Turn:
    """Mutable progress of one turn, so a cancelled turn can keep what was already said."""

    state: CallState
    new: list[NewMessage]
    held: HeldSession
    partial: list[str] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    new_system_prompt: str | None = None
    """Built for a session that had none; stored (frozen) with the turn's messages."""
    options: dict[str, Any] = field(default_factory=dict)
    client: ClientTools | None = None
    tool_steps: int = 0
    """Steps of this request that ran tools; a forcing tool_choice applies before the first."""
    by_model: dict[str, tuple[Usage, int]] = field(default_factory=dict)
    images: ImageView | None = None
    model: ModelClient | None = None
    """The turn's own model client (`TurnRequest.model`); None: the agent's."""


@dataclass
class _Outcome:
    """How the tool loop ended: a final answer, or a pause on the caller's tool calls."""

    content: str
    finish_reason: str
    iterations: int
    client_calls: list[ToolCall] = field(default_factory=list)


def _add_usage(a: Usage, b: Usage | None) -> Usage:
    if b is None:
        return a
    return Usage(
        a.prompt_tokens + b.prompt_tokens,
        a.completion_tokens + b.completion_tokens,
        a.total_tokens + b.total_tokens,
    )


def _count_model(
    by_model: dict[str, tuple[Usage, int]], model: str, completion: Completion
) -> None:
    """Add one call's tokens to its model's."""
    usage, calls = by_model.get(model, (Usage(), 0))
    by_model[model] = (_add_usage(usage, completion.usage), calls + 1)


def _take_steering(req: TurnRequest, turn: _Turn) -> None:
    """Move text queued on `req.steering` into the turn, as the user's words, before a call."""
    while req.steering is not None and not req.steering.empty():
        text = req.steering.get_nowait()
        turn.state.turn.append({"role": "user", "content": text})
        turn.new.append(
            NewMessage(role="user", content=text, token_count=estimate_text_tokens(text))
        )


def _stream_rest(turn: _Turn, observer: TurnObserver, text: str) -> None:
    """Stream the text a fence scrubber held back until the end of a call."""
    turn.partial.append(text)
    observer.on_delta(text)


def _new_message(message: dict[str, Any], history: list[dict[str, Any]]) -> NewMessage:
    """A turn's opening message (user text, a tool result, a seeded history message) as it
    is stored."""
    raw = message.get("content")
    content = raw if isinstance(raw, str) else ("" if raw is None else str(raw))
    call_id = message.get("tool_call_id")
    return NewMessage(
        role=message["role"],
        content=None if raw is None and message.get("tool_calls") else content,
        tool_calls=message.get("tool_calls"),
        tool_call_id=call_id,
        tool_name=call_name(history, call_id) if call_id else None,
        token_count=estimate_text_tokens(content),
    )


class Agent:
    """The agent core shared by the CLI, the API server, cron and the gateway."""

    def __init__(
        self,
        *,
        settings: Settings,
        store: Store,
        model: ModelClient,
        toolset: Toolset | None = None,
        memory: Sequence[MemoryProvider] = (),
        prompt_blocks: Sequence[PromptBlock] = (),
        policy: ContextPolicy | None = None,
        after_turn: Sequence[AfterTurnHook] = (),
        services: Services | None = None,
    ) -> None:
        self.settings = settings
        self.store = store
        self.model = model
        self.toolset = toolset or Toolset()
        self.memory = MemoryLayers(memory)
        self.prompt_blocks = list(prompt_blocks)
        self.policy: ContextPolicy = policy or FullHistory(store)
        self.vision = VisionSupport(settings, model)
        self.after_turn = list(after_turn)
        self.services = (services or Services()).derive(settings, self)
        self.services.provide(store, Store)  # type: ignore[type-abstract]
        self.services.provide(model, ModelClient)  # type: ignore[type-abstract]
        self.services.provide(self.memory, MemoryLayers)
        self.locks = SessionLocks(store)
        self._background: set[asyncio.Task[None]] = set()
        self.usage = usage_records.UsageRecorder(store)
        self.model_calls = ModelCalls()  # the model part of /health/detailed
        tracing.configure(settings.observability)

    # -- public ---------------------------------------------------------------------------

    async def run_turn(self, req: TurnRequest, observer: TurnObserver | None = None) -> TurnResult:
        observer = observer or TurnObserver()
        if req.client_tools is not None:
            toolset = req.toolset if req.toolset is not None else self.toolset
            req.client_tools.check_against(toolset.names())
        stateless = req.session_id is None
        session_id = req.session_id or f"{req.source}-{uuid4_hex()[:16]}"
        run_id = ids.run_id.get() or f"turn_{uuid4_hex()[:16]}"
        attributes = spans.turn_attributes(
            req.scope, session_id, req.source, req.user_message, stateless
        )
        with (
            ids.bound(session_id=session_id, run_id=run_id),
            tracing.span("hermes.turn", **attributes) as span,
        ):
            async with self.locks.hold(req.scope, session_id, source=req.source) as held:
                result = await self._run_locked(req, held, stateless, observer)
            spans.end_turn(
                span,
                prompt_tokens=result.usage.prompt_tokens,
                completion_tokens=result.usage.completion_tokens,
                iterations=result.iterations,
                finish_reason=result.finish_reason,
                output=result.content,
            )
            self._record_usage(req, result)
            self._spawn(self.memory.sync_turn(result))
            for hook in self.after_turn:
                self._spawn(hook(result, self))
        return result

    def end_session(self, scope: str, session_id: str) -> None:
        """A conversation is over (`/new`, leaving the chat, the session deleted): the memory
        providers hear it in the background, drained with the rest of the after-turn work.
        Compression is no session end: the session keeps its id and goes on."""
        self._spawn(self.memory.on_session_end(scope, session_id))

    def start(self) -> None:
        """Hand the providers the runtime's services; called once the runtime is wired."""
        self.memory.initialize(self.services)

    def toolset_for(self, scope: str, surface: str) -> Toolset:
        """The tools a turn of `scope` on `surface` is offered (`hermes.tools.toolsets`)."""
        groups = self.services.find(ToolGroups)
        return select_toolset(self.settings, scope, surface, self.toolset, groups)

    def now(self) -> datetime:
        tz = ZoneInfo(self.settings.timezone) if self.settings.timezone else None
        return datetime.now(UTC).astimezone(tz)

    def system_prompt_for(
        self, scope: str, toolset: Toolset, platform: str, user_message: str = ""
    ) -> str:
        ctx = PromptContext(
            scope=scope,
            user_message=user_message,
            platform=platform,
            tool_names=tuple(toolset.names()),
        )
        return build_system_prompt(
            home=self.settings.home,
            ctx=ctx,
            memory_blocks=self.memory.prompt_blocks(ctx),
            blocks=self.prompt_blocks,
            now=self.now(),
        )

    async def drain(self) -> None:
        """Wait for background after-turn work (memory review) to finish, then write the
        usage records still buffered."""
        while self._background:
            await asyncio.gather(*list(self._background), return_exceptions=True)
        await self.usage.flush()

    # -- steps ----------------------------------------------------------------------------

    async def _run_locked(
        self, req: TurnRequest, held: HeldSession, stateless: bool, observer: TurnObserver
    ) -> TurnResult:
        await self.toolset.prepare()  # live tool sources (MCP servers) connect on first use
        toolset = (
            req.toolset if req.toolset is not None else self.toolset_for(req.scope, req.source)
        )
        session = held.session
        with tracing.span("hermes.context"):
            turn = await self._build_context(req, held, stateless, toolset)
        try:
            outcome = await self._tool_loop(req, turn, toolset, observer)
        except asyncio.CancelledError:
            await asyncio.shield(self._persist_interrupted(req, turn))
            raise
        stored = await self._persist(req.scope, turn)
        return TurnResult(
            session_id=session.id,
            scope=req.scope,
            content=outcome.content,
            stored=stored,
            usage=turn.usage,
            iterations=outcome.iterations,
            finish_reason=outcome.finish_reason,
            user_turn_number=session.user_turns + (0 if req.tool_results is not None else 1),
            source=session.source,
            message_count=stored[-1].index + 1 if stored else session.message_count,
            tool_calls=outcome.client_calls,
            usage_by_model=turn.by_model,
        )

    def _record_usage(self, req: TurnRequest, result: TurnResult) -> None:
        """Tokens by model for cost reports (`GET /api/usage`), written in batches."""
        self.usage.add(
            usage_records.turn_records(
                self.settings,
                scope=result.scope,
                session_id=None if req.session_id is None else result.session_id,
                source=req.source,
                by_model=result.usage_by_model,
                at=time.time(),
            )
        )

    async def _build_context(
        self, req: TurnRequest, held: HeldSession, stateless: bool, toolset: Toolset
    ) -> _Turn:
        session = held.session
        system_prompt = new_system_prompt = session.system_prompt
        if system_prompt is None:
            system_prompt = new_system_prompt = await asyncio.to_thread(
                self.system_prompt_for, req.scope, toolset, req.source, req.user_message
            )
        system = [{"role": "system", "content": system_prompt}]
        if req.system_extra:
            system.append({"role": "system", "content": req.system_extra})

        # a new session may be seeded with the caller's history (Responses input items)
        seeded = not stateless and bool(req.history) and session.message_count == 0
        if stateless or seeded:
            history = list(req.history or [])
        else:
            history = await self.policy.load_history(session)
        opening = await self._opening_messages(req, session.id, history)
        client = req.client_tools
        state = CallState(
            scope=req.scope,
            session_id=session.id,
            system=system,
            history=history,
            turn=opening,
            tools=toolset.schemas() + (client.schemas if client else []),
            stateless=stateless,
            source=req.source,
            on_pre_compress=self.memory.on_pre_compress,
        )
        if not stateless:
            state.refresh_system = self._refresher(req, session.id, toolset)
        if session.last_prompt_tokens and history and not stateless:
            # the previous turn's last call covered everything but its final answer
            state.anchor_tokens = session.last_prompt_tokens
            state.anchor_len = len(system) + len(history) - 1
        kept = [*history, *opening] if seeded else opening
        new = [_new_message(m, history) for m in kept if m["role"] != "system"]
        if req.images and not stateless:
            keep = self.settings.model.images_kept
            await asyncio.to_thread(
                save_images, self.settings.home, req.scope, req.images.values(), keep
            )
        model = self.settings.model
        return _Turn(
            state=state,
            new=new,
            held=held,
            new_system_prompt=new_system_prompt,
            options=dict(req.model_options),
            client=client,
            images=ImageView(self.settings.home, req.scope, model.image_turns, req.images),
            model=req.model,
        )

    async def _opening_messages(
        self, req: TurnRequest, session_id: str, history: list[dict[str, Any]]
    ) -> list[dict[str, Any]]:
        """What the turn adds before its first model call: the caller's tool results (a
        resumed turn), or notes closing calls left unanswered, memory recalled for this turn
        (system messages, never stored) and the user's message."""
        if req.tool_results is not None:
            return resume_results(history, req.tool_results)
        recalled = [
            {"role": "system", "content": text}
            for text in await self.memory.prefetch(
                req.scope, session_id, req.user_message, source=req.source
            )
        ]
        user = {"role": "user", "content": req.user_message}
        return [*closing_results(history), *recalled, user]

    def _refresher(
        self, req: TurnRequest, session_id: str, toolset: Toolset
    ) -> Callable[[], Awaitable[str]]:
        async def refresh() -> str:
            text = await asyncio.to_thread(
                self.system_prompt_for, req.scope, toolset, req.source, req.user_message
            )
            await asyncio.to_thread(self.store.set_system_prompt, req.scope, session_id, text)
            return text

        return refresh

    async def _call_model(self, turn: _Turn, observer: TurnObserver, *, tools: bool) -> Completion:
        state = turn.state
        retried = False
        while True:
            await self.policy.before_call(state)
            turn.partial.clear()
            scrubber = FenceScrubber()  # recalled memory the model echoes is not streamed
            timer = spans.ModelCallTimer()

            def on_delta(
                piece: str, scrubber: FenceScrubber = scrubber, timer: spans.ModelCallTimer = timer
            ) -> None:
                timer.delta()
                text = scrubber.feed(piece)
                if text:
                    turn.partial.append(text)
                    observer.on_delta(text)

            messages = state.messages()
            sent = messages
            if turn.images is not None and has_images(messages):
                sees = await self.vision.enabled()
                sent = await asyncio.to_thread(turn.images.for_model, messages, sees)
            # stream from upstream only when someone is watching the text arrive
            streaming = type(observer).on_delta is not TurnObserver.on_delta
            offered = self._offered_tools(turn, tools)
            client = turn.model or self.model
            requested = getattr(client, "model", None)
            try:
                with tracing.span(
                    "hermes.model.call",
                    **{"gen_ai.request.model": requested, "hermes.model.streaming": streaming},
                ) as span:
                    completion = await client.complete(
                        sent,
                        tools=offered,
                        on_delta=on_delta if streaming else None,
                        options=self._call_options(turn, offered is not None),
                    )
                    timer.end(span, completion, requested)
            except ContextLengthExceededError as exc:
                if retried or not await self.policy.on_context_error(state, exc):
                    raise
                retried = True
                continue
            except ModelError as exc:
                self.model_calls.failed(exc, requested)
                raise
            self.model_calls.answered()
            rest = scrubber.flush()
            if rest and streaming:
                _stream_rest(turn, observer, rest)
            turn.usage = _add_usage(turn.usage, completion.usage)
            completion.model = completion.model or requested or ""  # stored on its message
            _count_model(turn.by_model, completion.model or "unknown", completion)
            if completion.usage is not None and completion.usage.prompt_tokens:
                state.anchor_tokens = completion.usage.prompt_tokens
                state.anchor_len = len(messages)
            await self.policy.after_response(state, completion.usage)
            return completion

    @staticmethod
    def _offered_tools(turn: _Turn, tools: bool) -> list[dict[str, Any]] | None:
        """The tools one call offers. While the caller's `tool_choice` forces a call, only the
        caller's tools are offered: with Hermes' own next to them, "required" could be met by
        one of those and the caller would never get the call it demanded."""
        state = turn.state
        if not tools or not state.tools:
            return None
        client = turn.client
        if client is not None and client.schemas and client.forces() and not turn.tool_steps:
            return client.schemas
        return state.tools

    @staticmethod
    def _call_options(turn: _Turn, offers_tools: bool) -> dict[str, Any]:
        """The caller's options for one call; tool_choice only when the call offers tools.

        A forcing choice ("required", a named function) holds until the model has called a
        tool: forced on every step it would loop Hermes' own tools to the iteration limit."""
        if offers_tools and turn.client is not None:
            tool_options = turn.client.call_options()
            if turn.tool_steps and tool_options.get("tool_choice") not in (None, "auto", "none"):
                del tool_options["tool_choice"]
            return {**turn.options, **tool_options}
        return turn.options

    async def _tool_loop(
        self, req: TurnRequest, turn: _Turn, toolset: Toolset, observer: TurnObserver
    ) -> _Outcome:
        limit = self.settings.agent.max_iterations
        ctx = ToolContext(
            scope=req.scope,
            session_id=turn.state.session_id,
            platform=req.source,
            services=self.services,
            approver=req.approver,
        )
        theirs = turn.client.names() if turn.client is not None else set()
        turn.state.notice = observer.on_notice

        async def ask(tools: bool) -> Completion:
            if tools:
                _take_steering(req, turn)
            return await self._call_model(turn, observer, tools=tools)

        async def act(completion: Completion) -> bool:
            await self._run_tools(turn, completion, toolset, ctx, observer, skip=theirs)
            # the caller runs its own tools' calls; its next request resumes the turn
            return any(c.name in theirs for c in completion.tool_calls)

        # bounded: past the limit, one last call without tools so the user still gets an answer
        end = await run_tool_loop(ask, act, Limits(limit, ITERATION_LIMIT_NOTE), turn.state.turn)
        completion = end.completion
        assert completion is not None  # a closing call is always made
        if end.how == "stopped":
            paused = [c for c in completion.tool_calls if c.name in theirs]
            return _Outcome(completion.content or "", "tool_calls", end.steps, paused)
        content = self._finish(turn, completion)
        if end.how == "closed":
            return _Outcome(content, "length", end.steps + 1)
        return _Outcome(content, completion.finish_reason or "stop", end.steps)

    def _finish(self, turn: _Turn, completion: Completion) -> str:
        content = scrub_fences(completion.content or "")
        turn.state.turn.append({"role": "assistant", "content": content})
        turn.new.append(
            NewMessage(
                role="assistant",
                content=content,
                token_count=completion.usage.completion_tokens if completion.usage else None,
                model=completion.model or None,
            )
        )
        turn.partial.clear()
        return content

    async def _run_tools(
        self,
        turn: _Turn,
        completion: Completion,
        toolset: Toolset,
        ctx: ToolContext,
        observer: TurnObserver,
        skip: frozenset[str] | set[str] = frozenset(),
    ) -> None:
        """Run Hermes' own calls of one step; calls named in `skip` (the caller's tools) are
        recorded in the step but left for the caller to answer."""
        assistant = completion.assistant_message()
        calls = [c for c in completion.tool_calls if c.name not in skip]
        ctx.turn = turn.held.session.message_count + len(turn.new)  # this step's message
        for call in calls:
            observer.on_tool_arguments(call.id, call.name, call.arguments)
            observer.on_tool_start(call.id, call.name)

        async def run(call: ToolCall) -> str:
            with tracing.span(
                "hermes.tool",
                **{
                    "hermes.tool.name": call.name,
                    "hermes.tool.arguments": tracing.content(call.arguments),
                },
            ) as span:
                outcome = await toolset.call(call.name, call.arguments, ctx)
                span.set_attribute("hermes.tool.ok", outcome.ok)
            observer.on_tool_end(call.id, call.name, outcome.ok)
            return outcome.text

        results = await asyncio.gather(*(run(c) for c in calls))
        turn.tool_steps += 1
        turn.partial.clear()
        turn.state.turn.append(assistant)
        turn.new.append(
            NewMessage(
                role="assistant",
                content=completion.content,
                tool_calls=assistant["tool_calls"],
                model=completion.model or None,
            )
        )
        for call, text in zip(calls, results, strict=True):
            turn.state.turn.append(tool_result(call.id, text))
            turn.new.append(
                NewMessage(
                    role="tool",
                    content=text,
                    tool_call_id=call.id,
                    tool_name=call.name,
                    token_count=estimate_text_tokens(text),
                )
            )

    # -- persistence ----------------------------------------------------------------------

    async def _persist(self, scope: str, turn: _Turn) -> list[MessageRecord]:
        """Store the turn, its usage and a new system prompt, and give up the session lease,
        all in one write."""
        session_id = turn.state.session_id
        records = await settle(
            self.store,
            functools.partial(
                self.store.append_messages,
                scope,
                session_id,
                turn.new,
                prompt_tokens=turn.usage.prompt_tokens,
                completion_tokens=turn.usage.completion_tokens,
                last_prompt_tokens=turn.state.anchor_tokens,
                system_prompt=turn.new_system_prompt,
                release=turn.held.lease,
            ),
            here=self.locks.alone,
        )
        turn.held.released = True
        if not turn.state.stateless:
            self.policy.note_persisted(scope, session_id, records)
        return records

    async def _persist_interrupted(self, req: TurnRequest, turn: _Turn) -> None:
        """Keep what was said before a cancel: the user turn, finished steps, partial text.

        The lease is left to `SessionLocks.hold`: a second cancel may abandon this write
        midway, and it must not give up a lease the session's next turn has taken since.
        """
        session_id = turn.state.session_id
        new = list(turn.new)
        partial = "".join(turn.partial)
        if partial:
            new.append(NewMessage(role="assistant", content=partial + " [interrupted]"))
        try:
            await asyncio.to_thread(
                functools.partial(
                    self.store.append_messages,
                    req.scope,
                    session_id,
                    new,
                    system_prompt=turn.new_system_prompt,
                )
            )
        except Exception:
            log.exception("could not store the interrupted turn of session %s", session_id)

    def _spawn(self, coro: Awaitable[None]) -> None:
        async def guarded() -> None:
            started = time.monotonic()
            try:
                await coro
            except Exception:
                log.exception("after-turn task failed after %.1fs", time.monotonic() - started)

        task = asyncio.get_running_loop().create_task(guarded())
        self._background.add(task)
        task.add_done_callback(self._background.discard)
