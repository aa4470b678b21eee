"""The compressing context policy: bounded prompts for sessions that live for months.

Stored messages are never touched. A compaction records "head, summary, tail from message N",
and the prompt is built from that view; every original stays in state.db and searchable.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from hermes.agent import compression as cx
from hermes.agent.policy import CallState, visible
from hermes.agent.tokens import (
    estimate_messages_tokens,
    estimate_text_tokens,
    estimate_tools_tokens,
)
from hermes.config.settings import Settings
from hermes.models.client import ModelClient
from hermes.models.errors import ContextLengthExceededError, ModelError
from hermes.models.types import Usage
from hermes.models.wire import freeze
from hermes.observability import tracing
from hermes.store.base import MessageRecord, SessionRecord, Store

log = logging.getLogger(__name__)

DEFAULT_CONTEXT_WINDOW = 128_000
COOLDOWN_STEPS = (60.0, 300.0, 900.0)
CACHE_SESSIONS = 256


@dataclass
class _View:
    """A session's prompt view: head + optional summary + tail, with stored message indexes."""

    started_at: float
    count: int
    head: list[dict[str, Any]] = field(default_factory=list)
    summary: str | None = None
    tail: list[dict[str, Any]] = field(default_factory=list)
    tail_idx: list[int | None] = field(default_factory=list)
    hidden: list[tuple[int, int]] = field(default_factory=list)
    """Ranges left out of the prompt (/undo); a change reloads the view."""

    def messages(self) -> list[dict[str, Any]]:
        if self.summary is None:
            return [*self.head, *self.tail]
        return cx.assemble(self.head, self.summary, self.tail)


@dataclass
class CompressionStats:
    """Counters for benchmarks and `hermes doctor`-style reporting."""

    compressions: int = 0
    summary_calls: int = 0
    summary_failures: int = 0
    fallbacks: int = 0
    flushes: int = 0


def refuse_what_cannot_fit(state: CallState, window: int) -> None:
    """No compression shrinks the system prompt, the tools or the user's new message: when
    those alone exceed the window, say so before calling the model (which would only refuse,
    after being sent megabytes)."""
    user = [m for m in state.turn if m.get("role") == "user"]
    if not user:
        return
    own = estimate_messages_tokens(user)
    fixed = own + estimate_messages_tokens(state.system) + estimate_tools_tokens(state.tools)
    if fixed > window:
        raise ContextLengthExceededError(
            f"The new message is about {own:,} tokens ({fixed:,} with Hermes' instructions "
            f"and tools), more than the model's context window of {window:,} tokens",
            limit=window,
            tokens=fixed,
        )


class CompressingHistory:
    """ContextPolicy that compresses before a call crosses the threshold or after a
    context-length error, and caches each session's view so turns don't re-read history."""

    def __init__(
        self,
        *,
        settings: Settings,
        store: Store,
        model: ModelClient,
    ) -> None:
        self.settings = settings
        self.store = store
        self.model = model
        self.stats = CompressionStats()
        self._views: OrderedDict[tuple[str, str], _View] = OrderedDict()
        self._window: int | None = None
        self._window_lock = asyncio.Lock()
        self._cooldown: dict[tuple[str, str], tuple[int, float]] = {}

    # -- ContextPolicy --------------------------------------------------------------------

    async def load_history(self, session: SessionRecord) -> list[dict[str, Any]]:
        key = (session.scope, session.id)
        view = self._views.get(key)
        hidden = session.hidden
        if hidden is None:  # a record not read by begin_turn
            hidden = await asyncio.to_thread(self.store.hidden_ranges, session.scope, session.id)
        if (
            view is None
            or view.started_at != session.started_at
            or view.count > session.message_count
            or view.hidden != hidden
        ):
            view = await asyncio.to_thread(self._load_view, session)
        elif view.count < session.message_count:
            rows = await asyncio.to_thread(
                self.store.get_messages, session.scope, session.id, start=view.count
            )
            rows = visible(rows, hidden)
            view.tail.extend(freeze(r.to_openai()) for r in rows)
            view.tail_idx.extend(r.index for r in rows)
            view.count = session.message_count
        self._views[key] = view
        self._views.move_to_end(key)
        while len(self._views) > CACHE_SESSIONS:
            self._views.popitem(last=False)
        return view.messages()

    def note_persisted(self, scope: str, session_id: str, records: list[MessageRecord]) -> None:
        """Extend the cached view with what the turn just stored (saves a read next turn)."""
        view = self._views.get((scope, session_id))
        if view is None or not records or records[0].index != view.count:
            return
        view.tail.extend(freeze(r.to_openai()) for r in records)
        view.tail_idx.extend(r.index for r in records)
        view.count += len(records)

    async def before_call(self, state: CallState) -> None:
        window = await self.context_window()
        refuse_what_cannot_fit(state, window)
        if not self.settings.compression.enabled:
            return
        if self.estimate(state) > self.settings.compression.threshold * window:
            await self.compress(state, reason="threshold")

    async def on_context_error(self, state: CallState, error: ContextLengthExceededError) -> bool:
        if error.limit:
            await self.learn_limit(error.limit)
        return await self.compress(state, reason="context_length_error")

    async def after_response(self, state: CallState, usage: Usage | None) -> None:
        return None

    # -- accounting -----------------------------------------------------------------------

    def estimate(self, state: CallState) -> int:
        """Provider's count for what it has seen, plus chars/4 for everything added since."""
        messages = state.messages()
        if state.anchor_tokens is not None and state.anchor_len <= len(messages):
            return state.anchor_tokens + estimate_messages_tokens(messages[state.anchor_len :])
        return estimate_messages_tokens(messages) + estimate_tools_tokens(state.tools)

    async def context_window(self) -> int:
        """Config, else /v1/models metadata, else 128,000 — and never above a learned limit."""
        if self._window is None:
            async with self._window_lock:
                if self._window is None:
                    self._window = await self._discover_window()
        return self._window

    async def _discover_window(self) -> int:
        name = self.settings.model.name
        window = self.settings.model.context_length
        if window is None:
            window = await self._window_from_metadata(name)
        learned = await asyncio.to_thread(self.store.get_model_limit, name) if name else None
        return min(window, learned) if learned else window

    async def _window_from_metadata(self, name: str | None) -> int:
        try:
            entries = await self.model.list_models()
        except ModelError:
            return DEFAULT_CONTEXT_WINDOW
        for entry in entries:
            if name is None or entry.get("id") == name:
                for key in (
                    "context_length",
                    "context_window",
                    "max_model_len",
                    "max_context_length",
                ):
                    value = entry.get(key)
                    if isinstance(value, int) and value > 0:
                        return value
        return DEFAULT_CONTEXT_WINDOW

    async def learn_limit(self, limit: int) -> None:
        """Keep a smaller window the provider told us about, in memory and in state.db."""
        current = await self.context_window()
        if limit < current:
            self._window = limit
            log.info("learned a smaller context window: %d tokens", limit)
        if self.settings.model.name:
            await asyncio.to_thread(self.store.set_model_limit, self.settings.model.name, limit)

    # -- the pass -------------------------------------------------------------------------

    def _load_view(self, session: SessionRecord) -> _View:
        view = _View(started_at=session.started_at, count=session.message_count)
        view.hidden = hidden = self.store.hidden_ranges(session.scope, session.id)
        compaction = self.store.latest_compaction(session.scope, session.id)
        if compaction is None:
            rows = visible(self.store.get_messages(session.scope, session.id), hidden)
        else:
            head = self.store.get_messages(session.scope, session.id, end=compaction.head_end)
            view.head = [freeze(r.to_openai()) for r in visible(head, hidden)]
            view.summary = compaction.summary
            rows = self.store.get_messages(session.scope, session.id, start=compaction.upto_idx)
            rows = visible(rows, hidden)
        view.tail = [freeze(r.to_openai()) for r in rows]
        view.tail_idx = [r.index for r in rows]
        return view

    def _view_for(self, state: CallState) -> _View:
        view = None if state.stateless else self._views.get((state.scope, state.session_id))
        if view is None:  # stateless: compress the body's history in memory only
            view = _View(
                started_at=0.0,
                count=len(state.history),
                tail=list(state.history),
                tail_idx=[None] * len(state.history),
            )
        return view

    @tracing.traced("hermes.compression")
    async def compress(self, state: CallState, *, reason: str) -> bool:
        """Summarise the middle of the history; False when there is nothing left to compress."""
        window = await self.context_window()
        view = self._view_for(state)
        cfg = self.settings.compression
        head, rest, rest_idx = view.head, view.tail, view.tail_idx
        head_len = len(head)
        if view.summary is None:
            cut = cx.head_end_for(view.tail, cfg.protect_first_turns, int(0.1 * window))
            head, rest, rest_idx = view.tail[:cut], view.tail[cut:], view.tail_idx[cut:]
            head_len = cut
        tail_start = cx.tail_start_for(rest, 0, int(cfg.tail_ratio * window))
        middle = rest[:tail_start]
        if not middle:
            return False
        started = time.monotonic()
        recalled = await self._flush(state, middle)
        summary, kind = await self._summarise(state, view.summary, middle, window, recalled)
        new_tail, new_idx = rest[tail_start:], rest_idx[tail_start:]
        if not state.stateless:
            upto = new_idx[0] if new_idx else view.count
            await asyncio.to_thread(
                self.store.add_compaction,
                state.scope,
                state.session_id,
                head_end=head_len,
                upto_idx=upto if upto is not None else view.count,
                summary=summary,
                kind=kind,
            )
        view.head, view.summary, view.tail, view.tail_idx = head, summary, new_tail, new_idx
        state.history = view.messages()
        await self._refresh_system(state)
        state.anchor_tokens, state.anchor_len = None, 0
        self.stats.compressions += 1
        done: dict[str, tracing.AttributeValue | None] = {
            "hermes.compression.reason": reason,
            "hermes.compression.kind": kind,
            "hermes.compression.messages": len(middle),
        }
        tracing.annotate(**done)
        if state.notice is not None:
            state.notice(
                "compression",
                f"compressed {len(middle)} earlier messages into a summary ({reason})",
            )
        log.info(
            "compressed session %s (%s): %d messages summarised (%s) in %.2fs",
            state.session_id,
            reason,
            len(middle),
            kind,
            time.monotonic() - started,
        )
        return True

    async def _refresh_system(self, state: CallState) -> None:
        """The prompt is rewritten anyway: take a fresh notes snapshot with it."""
        if state.refresh_system is None or not state.system:
            return
        try:
            state.system[0] = {"role": "system", "content": await state.refresh_system()}
        except Exception:
            log.exception("refreshing the system prompt after compression failed; kept the old")

    async def _flush(self, state: CallState, middle: list[dict[str, Any]]) -> str | None:
        """The memory pass over the messages about to go; returns the providers' view."""
        if state.on_pre_compress is None or state.stateless or state.source == "cron":
            return None
        self.stats.flushes += 1
        try:
            return await state.on_pre_compress(state.scope, state.session_id, middle)
        except Exception:
            log.exception("memory flush before compression failed; compressing anyway")
            return None

    async def _summarise(
        self,
        state: CallState,
        previous: str | None,
        middle: list[dict[str, Any]],
        window: int,
        recalled: str | None = None,
    ) -> tuple[str, str]:
        budget = max(200, min(12_000, int(0.08 * window)))
        chunks = cx.chunk_for_budget(cx.clear_old_tool_outputs(middle), int(0.45 * window))
        summary, kind = previous, "model"
        for chunk in chunks:
            text = await self._summary_call(state, summary, chunk, budget, recalled)
            if text is None:
                summary, kind = cx.fallback_summary(summary, chunk, budget * 4), "fallback"
                self.stats.fallbacks += 1
            else:
                summary = text
        return summary or "", kind

    async def _summary_call(
        self,
        state: CallState,
        previous: str | None,
        chunk: list[dict[str, Any]],
        budget: int,
        recalled: str | None = None,
    ) -> str | None:
        key = (state.scope, state.session_id)
        failures, until = self._cooldown.get(key, (0, 0.0))
        if time.monotonic() < until:
            return None
        self.stats.summary_calls += 1
        try:
            completion = await self.model.complete(
                cx.summarizer_request(previous, cx.render_transcript(chunk), recalled),
                model=self.settings.compression.model,
                max_tokens=budget,
            )
        except ModelError as exc:
            step = COOLDOWN_STEPS[min(failures, len(COOLDOWN_STEPS) - 1)]
            self._cooldown[key] = (failures + 1, time.monotonic() + step)
            self.stats.summary_failures += 1
            log.warning(
                "summary call failed (%s); using a fallback summary, retrying in %.0fs", exc, step
            )
            return None
        self._cooldown.pop(key, None)
        text = (completion.content or "").strip()
        if not text or estimate_text_tokens(text) > budget * 2:
            return None if not text else text[: budget * 8]
        return text
