"""What the agent loop writes on its spans, kept here so the loop reads as its steps: the
turn's attributes and outcome, and one model call's (OpenTelemetry's `gen_ai.*` names where
they exist, `hermes.*` for the rest)."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from hermes.observability import tracing
from hermes.observability.tracing import AttributeValue, Span

if TYPE_CHECKING:
    from hermes.models.types import Completion


def turn_attributes(
    scope: str, session_id: str, source: str, user_message: str, stateless: bool
) -> dict[str, AttributeValue | None]:
    return {
        "hermes.scope.hash": tracing.scope_hash(scope),
        "hermes.session.hash": tracing.scope_hash(session_id),
        "hermes.platform": source,
        "hermes.stateless": stateless,
        "hermes.turn.input_chars": len(user_message),
        "hermes.turn.input": tracing.content(user_message),
    }


def end_turn(
    span: Span,
    *,
    prompt_tokens: int,
    completion_tokens: int,
    iterations: int,
    finish_reason: str,
    output: str,
) -> None:
    span.set_attribute("gen_ai.usage.input_tokens", prompt_tokens)
    span.set_attribute("gen_ai.usage.output_tokens", completion_tokens)
    span.set_attribute("hermes.turn.iterations", iterations)
    span.set_attribute("hermes.turn.finish_reason", finish_reason)
    span.set_attribute("hermes.turn.output_chars", len(output))
    text = tracing.content(output)
    if text is not None:
        span.set_attribute("hermes.turn.output", text)


class ModelCallTimer:
    """Times one model call and its first streamed text (time to first token)."""

    __slots__ = ("first", "started")

    def __init__(self) -> None:
        self.started = time.perf_counter()
        self.first: float | None = None

    def delta(self) -> None:
        if self.first is None:
            self.first = time.perf_counter()

    def end(self, span: Span, completion: Completion, requested: str | None) -> None:
        if not tracing.enabled():
            return
        usage = completion.usage
        if usage is not None:
            span.set_attribute("gen_ai.usage.input_tokens", usage.prompt_tokens)
            span.set_attribute("gen_ai.usage.output_tokens", usage.completion_tokens)
        if completion.model:
            span.set_attribute("gen_ai.response.model", completion.model)
        if requested and completion.model and completion.model != requested:
            span.set_attribute("hermes.model.fallback", True)
        if completion.finish_reason:
            span.set_attribute("gen_ai.response.finish_reasons", completion.finish_reason)
        span.set_attribute("hermes.model.tool_calls", len(completion.tool_calls))
        if self.first is not None:
            span.set_attribute("hermes.model.ttft_ms", round(1000 * (self.first - self.started), 2))
        text = tracing.content(completion.content)
        if text is not None:
            span.set_attribute("hermes.model.output", text)
