"""A big SQLite store for bench/ui.py, built in-process with the store's bulk import.

    build(home, messages=1_000_000)  # → HERMES_HOME/state.db with that many messages

Sessions of PER_SESSION messages (user/assistant turns whose words follow Zipf's law over a
vocabulary of VOCABULARY words, as real text does, so the full-text index is realistic),
plus one LONG session ("long-session", LONG messages) for the transcript screen. The import pauses the search triggers and
indexes each batch once, as `hermes sessions import` does.
"""

from __future__ import annotations

import random
import time
from pathlib import Path

from hermes.store.base import NewMessage, NewSession
from hermes.store.sqlite import SQLiteStore

SCOPE = "default"
PER_SESSION = 100
LONG = 20_000
LONG_ID = "long-session"
BATCH = 50_000  # messages per transaction
START = 1.7e9

NOUNS = (
    "garden tomato printer invoice kettle bicycle passport harbor violin ledger "
    "compiler router spreadsheet recipe mortgage glacier telescope orchard lantern "
    "backpack meeting deadline concert museum vaccine battery thermostat pipeline "
    "database migration ticket holiday flight hotel dentist birthday marathon"
).split()
VERBS = "fix book plan water call pay sort check tune move cook rent clean train renew".split()
PLACES = "Lisbon Oslo Kyoto Denver Nairobi Quito Porto Hanoi Perth Tallinn".split()
VOCABULARY = 5_000
SYLLABLES = "ka lo mi ren tu sa vel or in da pe qui zan ro ful ne".split()


def _vocabulary(rng: random.Random) -> tuple[list[str], list[float]]:
    """Words (the named nouns and places among made-up ones) and Zipf cumulative weights."""
    made = {
        "".join(rng.choice(SYLLABLES) for _ in range(rng.randint(2, 4)))
        for _ in range(VOCABULARY * 2)
    }
    words = sorted(made)[: VOCABULARY - len(NOUNS) - len(PLACES)] + NOUNS + PLACES
    rng.shuffle(words)
    total, cum = 0.0, []
    for rank in range(len(words)):
        total += 1.0 / (rank + 1)
        cum.append(total)
    return words, cum


def _text(rng: random.Random, vocab: tuple[list[str], list[float]], n: int) -> str:
    w = rng.choices(vocab[0], cum_weights=vocab[1], k=8)
    return (
        f"Can you {rng.choice(VERBS)} the {w[0]} near {w[1]} before the {w[2]}? "
        f"Note {n}: {w[3]} {w[4]} and {w[5]}, then {w[6]} with {w[7]}."
    )


def _session(
    rng: random.Random,
    vocab: tuple[list[str], list[float]],
    sid: str,
    size: int,
    started: float,
    n0: int,
) -> NewSession:
    msgs = [
        NewMessage(
            role="user" if i % 2 == 0 else "assistant",
            content=_text(rng, vocab, n0 + i),
            timestamp=started + i * 30,
        )
        for i in range(size)
    ]
    title = f"{rng.choice(VERBS).title()} the {rng.choice(NOUNS)} ({sid})"
    return NewSession(id=sid, source="api", messages=msgs, title=title, started_at=started)


def build(home: Path, messages: int = 1_000_000, seed: int = 7) -> tuple[int, float]:
    """(messages stored, seconds taken) into home/state.db."""
    home.mkdir(parents=True, exist_ok=True)
    rng = random.Random(seed)
    vocab = _vocabulary(rng)
    store = SQLiteStore(home / "state.db")
    started = time.perf_counter()
    try:
        long = min(LONG, messages // 2)
        batch: list[NewSession] = [_session(rng, vocab, LONG_ID, long, START, 0)] if long else []
        size, n, done = long, 0, long
        while done < messages:
            count = min(PER_SESSION, messages - done)
            batch.append(_session(rng, vocab, f"s{n:06d}", count, START + n * 3600, done))
            n, done, size = n + 1, done + count, size + count
            if size >= BATCH:
                store.import_sessions(SCOPE, batch)
                batch, size = [], 0
        if batch:
            store.import_sessions(SCOPE, batch)
        store.connection.execute("ANALYZE")
        total = store.count_messages()
    finally:
        store.close()
    return total, time.perf_counter() - started


if __name__ == "__main__":
    import sys

    target = Path(sys.argv[1])
    count = int(sys.argv[2]) if len(sys.argv) > 2 else 1_000_000
    total, took = build(target, count)
    print(f"{total:,} messages in {took:.0f} s")
