"""The semantic indexer of `hermes serve`: embeds new messages in the background.

Turns store their messages at once; this thread gives them vectors a moment later, so a
turn never waits for the model. It loads the model first (seconds), catches up on what
is missing, then follows new messages by id, with a full pass now and then for messages
whose text changed (their vectors were dropped); then the windows of messages that have
vectors (`hermes.recall.windows`). Only each scope's newest
`search.max_vectors` messages are embedded: no search by meaning looks further back.

Embedding is the heaviest work of a busy server (a third of its CPU at 32 sessions, profiled
in docs/perf/), and it can wait: after each step the thread rests three times as long as the
step took, so it keeps at most about a quarter of the time and turns keep the rest; under a
sustained load vectors fall behind and catch up when it ends. (A lower thread priority was
tried instead: the thread then holds the store's lock while descheduled, and turns stall
behind it.) `hermes serve` also starts it a moment late, so loading the model (numpy,
onnxruntime: a second of CPU) does not delay the first /health.
"""

from __future__ import annotations

import logging
import threading
import time

from hermes.config.settings import Settings
from hermes.memory import embeddings
from hermes.store.base import Store

log = logging.getLogger(__name__)

IDLE_S = 2.0
FULL_PASS_S = 600.0
STEP = 512  # messages per step, so a stop request is honoured within a second or two
DUTY = 0.25  # the share of wall time the indexer may spend embedding while there is work


class SemanticIndexer:
    """A daemon thread that keeps `store.vectors` filled for every scope."""

    def __init__(self, settings: Settings, store: Store) -> None:
        self.settings = settings
        self.store = store
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.embedded = 0

    def start(self, delay: float = 0.0) -> None:
        """Start the thread; it waits `delay` seconds before loading the model."""
        self._thread = threading.Thread(
            target=self._run, args=(delay,), name="hermes-indexer", daemon=True
        )
        self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)

    def _run(self, delay: float) -> None:
        if self._stop.wait(delay):
            return
        from hermes.recall.semantic import embed_pending  # numpy: not before there is work
        from hermes.recall.windows import embed_windows

        try:
            embedder = embeddings.load(self.settings)
        except embeddings.EmbeddingsUnavailableError as exc:
            log.warning("semantic indexer not started: %s", exc)
            return
        vectors = self.store.vectors
        if embedder is None or vectors is None:
            return
        cursor, window_cursor, last_full = 0, 0, time.monotonic()
        starts: dict[str, int] | None = None
        while not self._stop.is_set():
            began = time.monotonic()
            try:
                if time.monotonic() - last_full > FULL_PASS_S:
                    cursor, window_cursor, last_full, starts = 0, 0, time.monotonic(), None
                if starts is None:  # once a pass: newer messages are past a start anyway
                    starts = vectors.newest_starts(self.settings.search.max_vectors)
                seen_to = vectors.newest_message_id()
                done, cursor = embed_pending(
                    self.store,
                    embedder,
                    after_id=cursor,
                    starts=starts,
                    limit=STEP,
                    should_stop=self._stop.is_set,
                )
                self.embedded += done
                if done < STEP and not self._stop.is_set():
                    # nothing more to embed up to `seen_to`: the next look starts there,
                    # not where the last vector went (at 1M messages, re-walking the
                    # older ones every IDLE_S kept ~9% of a core busy)
                    cursor = max(cursor, seen_to)
                    # then the windows of what has vectors (`recall.windows`)
                    windowed, window_cursor = embed_windows(
                        self.store,
                        embedder,
                        after_id=window_cursor,
                        limit=STEP,
                        should_stop=self._stop.is_set,
                    )
                    done += windowed
            except embeddings.EmbeddingsUnavailableError as exc:  # an endpoint down: later
                log.warning("semantic indexer waits: %s", exc)
                done = 0
            except Exception:  # the store may be briefly unavailable; try again later
                log.exception("semantic indexer step failed")
                done = 0
            rest = (time.monotonic() - began) * (1 - DUTY) / DUTY if done else 0.0
            self._stop.wait(max(rest, IDLE_S) if done < STEP else rest)
