"""Several replicas: turns/s and p99 with 1 vs 2 `hermes serve` replicas, on PostgreSQL and on
SQLite, at 32 concurrent sessions; and `session_search` latency at 1M messages on PostgreSQL.
One command, prints a table:

    .venv/bin/python bench/scale.py                   # full run (a few minutes: 1M messages)
    .venv/bin/python bench/scale.py --quick           # small counts, a smoke test
    .venv/bin/python bench/scale.py --messages 200000 # a smaller search corpus

Replicas are real `hermes serve` subprocesses with their own homes, sharing only the database
(`HERMES_DATABASE_URL`); with SQLite the "second replica" is a second process on the same
state.db file (one machine only). The model is `bench/instant_model.py` answering at once, so
the figures are Hermes' own cost. Sessions are spread round-robin over the replicas. The
search corpus is bulk-imported (`Store.import_sessions`) into a fresh database made for the
run (dropped at the end), then `match_messages` in the `window` view (what `session_search`
asks first) is timed for 200 queries of 1-3 words of varying frequency.

On 2 shared cores two replicas cannot double throughput: they compete with each other, the
client and PostgreSQL for the same cores. See README "Running several replicas".
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import statistics
import sys
import tempfile
import time
import uuid
from contextlib import AsyncExitStack
from pathlib import Path

import aiohttp
import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parent))
from api import body, hermes_serve  # noqa: E402
from instant_model import InstantModel  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from hermes.store import NewMessage, NewSession, open_store  # noqa: E402

ADMIN = os.environ.get("HERMES_BENCH_PG", "postgresql://postgres@127.0.0.1:5432/postgres")
WORDS = [
    "kettle garden invoice python deploy puppy biscuit marathon oslo tulip green tea "
    "meeting budget quarterly server database replica backup restore migrate schema "
    "holiday flight hotel booking refund receipt printer network router firewall"
].pop().split()


def create_db() -> str:
    name = f"hermes_bench_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(ADMIN, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    return name


def drop_db(name: str) -> None:
    with psycopg.connect(ADMIN, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def url_of(name: str) -> str:
    return ADMIN.rsplit("/", 1)[0] + "/" + name


async def turns(
    http: aiohttp.ClientSession, bases: list[str], sessions: int, each: int
) -> tuple[float, float, float]:
    """(turns/s, p50 ms, p99 ms) for `sessions` concurrent sessions of `each` turns."""
    latencies: list[float] = []
    run = uuid.uuid4().hex[:6]

    async def session(n: int) -> None:
        base = bases[n % len(bases)]
        for t in range(each):
            started = time.perf_counter()
            async with http.post(
                f"{base}/v1/chat/completions",
                data=body(f"turn {t} of session {n}"),
                headers={"Content-Type": "application/json", "X-Hermes-Session-Id": f"{run}-{n}"},
            ) as r:
                await r.read()
                if r.status != 200:
                    raise SystemExit(f"turn failed with {r.status}")
            latencies.append(time.perf_counter() - started)

    started = time.perf_counter()
    await asyncio.gather(*(session(n) for n in range(sessions)))
    wall = time.perf_counter() - started
    latencies.sort()
    p99 = latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))]
    return len(latencies) / wall, statistics.median(latencies) * 1000, p99 * 1000


async def throughput(
    backend: str, replicas: int, sessions: int, each: int
) -> tuple[float, float, float]:
    model = await InstantModel().start()
    db = create_db() if backend == "postgresql" else None
    try:
        with tempfile.TemporaryDirectory() as tmp:
            url = url_of(db) if db else "sqlite:///" + str(Path(tmp) / "state.db").lstrip("/")
            os.environ["HERMES_DATABASE_URL"] = url
            async with aiohttp.ClientSession() as http, AsyncExitStack() as stack:
                bases = []
                for n in range(replicas):
                    home = Path(tmp) / f"replica-{n}"
                    home.mkdir()
                    (home / "config.yaml").write_text("memory:\n  review_interval: 0\n")
                    _, base, _ = await stack.enter_async_context(
                        hermes_serve(home, model.base_url, http)
                    )
                    bases.append(base)
                await turns(http, bases, 4, 2)  # warm up
                return await turns(http, bases, sessions, each)
    finally:
        os.environ.pop("HERMES_DATABASE_URL", None)
        await model.stop()
        if db:
            drop_db(db)


def corpus(
    total: int, scopes: int = 4, per_session: int = 50
) -> list[tuple[str, list[NewSession]]]:
    rng = random.Random(7)
    out = []
    sessions_per_scope = max(1, total // (scopes * per_session))
    for s in range(scopes):
        batch = []
        for n in range(sessions_per_scope):
            messages = [
                NewMessage(
                    "user" if i % 2 == 0 else "assistant",
                    " ".join(rng.choices(WORDS, k=12)) + f" note{rng.randrange(total)}",
                    timestamp=1.7e9 + n * 60 + i,
                )
                for i in range(per_session)
            ]
            batch.append(NewSession(f"s{n}", "import", messages))
        out.append((f"user:{s}" if s else "default", batch))
    return out


def search(messages: int, queries: int) -> tuple[int, float, float, float]:
    """(messages stored, seconds to load, p50 ms, p95 ms) of window-view searches."""
    db = create_db()
    try:
        store = open_store(url_of(db))
        try:
            started = time.perf_counter()
            for scope, sessions in corpus(messages):
                for i in range(0, len(sessions), 100):
                    store.import_sessions(scope, sessions[i : i + 100])
            loaded = time.perf_counter() - started
            with psycopg.connect(url_of(db), autocommit=True) as conn:
                conn.execute("ANALYZE")
            rng = random.Random(11)
            timings = []
            for q in range(queries):
                terms = rng.sample(WORDS, k=1 + q % 3)
                if q % 4 == 0:
                    terms.append(f"note{rng.randrange(messages)}")  # a rare word
                started = time.perf_counter()
                store.search.match_messages("default", terms, view="window", limit=50)
                timings.append((time.perf_counter() - started) * 1000)
            timings.sort()
            return (
                store.count_messages(),
                loaded,
                statistics.median(timings),
                timings[int(len(timings) * 0.95)],
            )
        finally:
            store.close()
    finally:
        drop_db(db)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--messages", type=int, default=1_000_000)
    parser.add_argument("--sessions", type=int, default=32)
    args = parser.parse_args()
    each = 3 if args.quick else 12
    messages = 20_000 if args.quick else args.messages
    print(f"turns: {args.sessions} concurrent sessions x {each} turns, instant model")
    print(f"{'backend':<12}{'replicas':>9}{'turns/s':>10}{'p50 ms':>9}{'p99 ms':>9}")
    for backend in ("postgresql", "sqlite"):
        for replicas in (1, 2):
            rate, p50, p99 = await throughput(backend, replicas, args.sessions, each)
            print(f"{backend:<12}{replicas:>9}{rate:>10.1f}{p50:>9.1f}{p99:>9.1f}", flush=True)
    count, loaded, p50, p95 = await asyncio.to_thread(search, messages, 40 if args.quick else 200)
    print(f"\nsession_search (window view) on PostgreSQL, {count:,} messages in 4 scopes")
    print(
        f"  bulk load {loaded:.1f} s ({count / loaded:,.0f} msg/s); query p50 {p50:.1f} ms, p95 {p95:.1f} ms (target <= 50 ms)"
    )


if __name__ == "__main__":
    asyncio.run(main())
