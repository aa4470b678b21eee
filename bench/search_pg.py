"""Words search at 1M messages in one scope on PostgreSQL: p50/p95 of `match_messages`.

    python bench/search_pg.py                         # 1M messages, a fresh database, dropped after
    python bench/search_pg.py --messages 200000       # a smaller corpus
    python bench/search_pg.py --keep hermes_search_1m # load once into that database and keep it;
                                                      # later runs with the same name reuse it

The corpus is `bench/scale.py`'s (12 words a message from 36 common ones plus one rare
`noteN`, so a common word matches about a third of the scope: the worst case for a ranked
search). It is loaded the fast way: the schema from Hermes' migrations, the search indexes
dropped, sessions and messages streamed with COPY, the three search vectors computed by the
store's own indexing statement in one pass, then the indexes built again and ANALYZE. Queries
are 1-3 common words, every fourth with a rare one, in each of the views.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from pathlib import Path

import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parent))
from scale import ADMIN, WORDS, create_db, drop_db, url_of  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from hermes.store import open_store  # noqa: E402
from hermes.store.postgres.search_index import index_sessions  # noqa: E402

PER_SESSION = 50
SCOPE = "default"


def exists(name: str) -> bool:
    with psycopg.connect(ADMIN, autocommit=True) as conn:
        return bool(
            conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone()
        )


def load(url: str, total: int) -> float:
    """Fill an empty Hermes database with `total` messages in one scope; seconds taken."""
    open_store(url).close()  # the migrations
    rng = random.Random(7)
    started = time.perf_counter()
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("SET maintenance_work_mem = '512MB'")
        indexes = [
            (str(r[0]), str(r[1]))
            for r in conn.execute(
                "SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'messages' "
                "AND indexdef ILIKE '%% USING gin %%'"
            )
        ]
        for name, _ in indexes:
            conn.execute(f'DROP INDEX "{name}"')
        sessions = total // PER_SESSION
        with conn.cursor() as cur:
            with cur.copy(
                "COPY sessions (scope, id, source, started_at, updated_at, message_count, "
                "user_turns) FROM STDIN"
            ) as copy:
                for n in range(sessions):
                    at = 1.7e9 + n * 60
                    copy.write_row(
                        (SCOPE, f"s{n}", "import", at, at + PER_SESSION, PER_SESSION, 25)
                    )
            with cur.copy(
                "COPY messages (scope, session_id, idx, role, content, timestamp) FROM STDIN"
            ) as copy:
                for n in range(sessions):
                    for i in range(PER_SESSION):
                        text = " ".join(rng.choices(WORDS, k=12)) + f" note{rng.randrange(total)}"
                        role = "user" if i % 2 == 0 else "assistant"
                        copy.write_row((SCOPE, f"s{n}", i, role, text, 1.7e9 + n * 60 + i))
        print(
            f"  copied {sessions * PER_SESSION:,} messages in {time.perf_counter() - started:.0f} s"
        )
        ids = [f"s{n}" for n in range(sessions)]
        for i in range(0, len(ids), 2000):
            index_sessions(conn, SCOPE, ids[i : i + 2000])
        print(f"  vectors computed at {time.perf_counter() - started:.0f} s")
        for _, definition in indexes:
            conn.execute(definition)
        conn.execute("VACUUM ANALYZE")
    return time.perf_counter() - started


def queries(count: int, total: int) -> list[list[str]]:
    rng = random.Random(11)
    out = []
    for q in range(count):
        terms = rng.sample(WORDS, k=1 + q % 3)
        if q % 4 == 0:
            terms.append(f"note{rng.randrange(total)}")
        out.append(terms)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--messages", type=int, default=1_000_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--keep", help="database name to load once and reuse")
    parser.add_argument("--views", default="window,message,exact")
    args = parser.parse_args()
    name = args.keep or create_db()
    try:
        if not args.keep or not exists(name) or not _loaded(url_of(name)):
            if args.keep and not exists(name):
                with psycopg.connect(ADMIN, autocommit=True) as conn:
                    conn.execute(f'CREATE DATABASE "{name}"')
            print(f"loading {args.messages:,} messages into {name}")
            took = load(url_of(name), args.messages)
            print(f"  loaded in {took:.0f} s ({args.messages / took:,.0f} msg/s)")
        store = open_store(url_of(name))
        searcher = getattr(store, "search", store)  # the Searcher, where the store serves one
        try:
            count = store.count_messages()
            print(f"\nwords search, {count:,} messages in one scope, {args.queries} queries")
            print(f"{'view':<9}{'p50 ms':>9}{'p95 ms':>9}{'max ms':>9}")
            for view in args.views.split(","):
                asked = queries(args.queries, count)
                searcher.match_messages(SCOPE, asked[0], view=view, limit=50)  # warm the cache
                timings = []
                for terms in asked:
                    started = time.perf_counter()
                    searcher.match_messages(SCOPE, terms, view=view, limit=50)
                    timings.append((time.perf_counter() - started) * 1000)
                timings.sort()
                p95 = timings[int(len(timings) * 0.95)]
                print(f"{view:<9}{statistics.median(timings):>9.1f}{p95:>9.1f}{timings[-1]:>9.1f}")
        finally:
            store.close()
    finally:
        if not args.keep:
            drop_db(name)


def _loaded(url: str) -> bool:
    try:
        with psycopg.connect(url) as conn:
            row = conn.execute("SELECT count(*) FROM messages").fetchone()
            return bool(row and row[0])
    except psycopg.Error:
        return False


if __name__ == "__main__":
    main()
