"""Fallback models: when the model endpoint fails in a way another endpoint may not (timeout,
unreachable, 429, 5xx, a broken answer, or a prompt too long for its window where the next has
a larger one), the call goes on with the next model of `model.fallbacks`.

A model that failed rests for `model.fallback_cooldown` seconds, so the turns that follow go
straight to one that answers instead of waiting out the same timeout again; the rest periods
are kept in the store (shared by every replica on PostgreSQL), so a restart does not send the
first turns back to a model that was just down. When every model rests, they are tried anyway, in order. A call
whose answer already began streaming is not repeated elsewhere (the text shown would be said
twice): its error stands.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hermes.fileio import atomic_write
from hermes.models.client import ModelClient
from hermes.models.errors import (
    ContextLengthExceededError,
    ModelError,
    ModelRateLimitError,
    ModelUnavailableError,
)
from hermes.models.types import Completion
from hermes.scopes import DEFAULT_SCOPE

if TYPE_CHECKING:
    from hermes.store.base import RecordStore

log = logging.getLogger(__name__)


@dataclass
class Candidate:
    """One model of the chain: its client, a name for logs and records, its window if known."""

    client: ModelClient
    label: str
    context_length: int | None = None


class Cooldowns:
    """Until when each model rests: in the store's shared records once the runtime hands them
    over (`share_state`: every replica then skips a model one of them saw fail), else in
    this process and a small JSON file."""

    KIND = "model_cooldown"

    def __init__(self, path: Path | None, clock: Callable[[], float] = time.time) -> None:
        self.path = path
        self.clock = clock
        self.records: RecordStore | None = None
        self._lock = threading.Lock()
        self._until = self._read()

    def share_state(self, records: RecordStore | None) -> None:
        self.records = records

    def resting(self, label: str) -> bool:
        if self.records is not None:
            try:
                return self.records.get_record(self.KIND, DEFAULT_SCOPE, label) is not None
            except Exception as exc:  # the store down: rest periods are a hint, not a rule
                log.warning("could not read model cooldowns: %s", exc)
        with self._lock:
            return self._until.get(label, 0.0) > self.clock()

    def rest(self, label: str, seconds: float) -> None:
        if self.records is not None and seconds > 0:
            try:
                self.records.put_record(
                    self.KIND, DEFAULT_SCOPE, label, {"seconds": seconds}, ttl=seconds
                )
            except Exception as exc:
                log.warning("could not save a model cooldown: %s", exc)
        with self._lock:
            self._until[label] = self.clock() + seconds
            now = self.clock()
            self._until = {k: v for k, v in self._until.items() if v > now}
            snapshot = dict(self._until)
        if self.path is not None and self.records is None:
            try:
                atomic_write(self.path, json.dumps(snapshot))
            except OSError as exc:  # the rest still holds in this process
                log.warning("could not save model cooldowns: %s", exc)

    def _read(self) -> dict[str, float]:
        if self.path is None:
            return {}
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        if not isinstance(data, dict):
            return {}
        return {str(k): float(v) for k, v in data.items() if isinstance(v, int | float)}


def _next_worth_trying(exc: ModelError, order: Sequence[Candidate], failed: int) -> int | None:
    """The index of the next model that may succeed where `order[failed]` just did not: the
    next one for an outage or a rate limit, the next with a larger window for a prompt too long
    (a smaller or unknown window would refuse it too)."""
    if isinstance(exc, ContextLengthExceededError):
        window = order[failed].context_length or exc.limit
        for j in range(failed + 1, len(order)):
            larger = order[j].context_length
            if larger is not None and (window is None or larger > window):
                return j
        return None
    if isinstance(exc, ModelUnavailableError | ModelRateLimitError) and failed + 1 < len(order):
        return failed + 1
    return None


class FallbackClient(ModelClient):
    """`ModelClient` over a chain of models; `model`, `base_url` and `warm_up` are the first's."""

    def __init__(
        self, candidates: Sequence[Candidate], cooldowns: Cooldowns, cooldown_seconds: float
    ) -> None:
        if not candidates:
            raise ValueError("a fallback chain needs at least one model")
        self.candidates = list(candidates)
        self.cooldowns = cooldowns
        self.cooldown_seconds = cooldown_seconds
        self.switches = 0  # calls answered by another model than the first they tried
        self.model = self.primary.model
        self.base_url = self.primary.base_url

    def share_state(self, records: RecordStore | None) -> None:
        """Rest periods go to the store's records (shared by replicas, kept across restarts)."""
        self.cooldowns.share_state(records)

    @property
    def primary(self) -> ModelClient:
        return self.candidates[0].client

    async def complete(
        self,
        messages: list[dict],
        *,
        tools: list[dict] | None = None,
        model: str | None = None,
        on_delta: Callable[[str], None] | None = None,
        max_tokens: int | None = None,
        temperature: float | None = None,
        options: Mapping[str, Any] | None = None,
    ) -> Completion:
        if model is not None:  # a caller that names its model gets that model, nothing else
            return await self.primary.complete(
                messages,
                tools=tools,
                model=model,
                on_delta=on_delta,
                max_tokens=max_tokens,
                temperature=temperature,
                options=options,
            )
        streamed = False

        def delta(text: str) -> None:
            nonlocal streamed
            streamed = True
            assert on_delta is not None
            on_delta(text)

        order = self._order()
        i = 0
        while True:
            candidate = order[i]
            try:
                completion = await candidate.client.complete(
                    messages,
                    tools=tools,
                    on_delta=delta if on_delta is not None else None,
                    max_tokens=max_tokens,
                    temperature=temperature,
                    options=options,
                )
            except ModelError as exc:
                following = _next_worth_trying(exc, order, i)
                if following is None or streamed:
                    raise
                if not isinstance(exc, ContextLengthExceededError):
                    self.cooldowns.rest(candidate.label, self.cooldown_seconds)
                log.warning(
                    "model %s failed (%s); going on with %s",
                    candidate.label,
                    exc,
                    order[following].label,
                )
                i = following
                continue
            if candidate is not self.candidates[0]:
                self.switches += 1
            return completion

    def _order(self) -> list[Candidate]:
        """Models that are not resting, in their order; all of them when every one rests."""
        ready = [c for c in self.candidates if not self.cooldowns.resting(c.label)]
        return ready or list(self.candidates)

    async def list_models(self) -> list[dict]:
        return await self.primary.list_models()

    async def warm_up(self) -> None:
        await self.primary.warm_up()

    async def aclose(self) -> None:
        for candidate in self.candidates:
            await candidate.client.aclose()
