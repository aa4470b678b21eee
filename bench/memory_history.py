"""What a memory version costs: bytes stored per version and time added per memory write.

    python bench/memory_history.py [--writes 200] [--pg postgresql://postgres@127.0.0.1:5432/postgres]

Writes a realistic MEMORY.md (entries of ~80 characters, kept near 1.5-2 KB by removing the
oldest entry once full, as the model consolidates) through the memory tool's `change_notes`,
once with history off and once on, per backend, and prints a table. PostgreSQL is measured
in a scratch database made and dropped here (skipped when none answers).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
import uuid
from pathlib import Path

from hermes.config.settings import Settings
from hermes.memory.history import Actor
from hermes.memory.notes import NotesStore, open_notes
from hermes.memory.tool import Operation, change_notes
from hermes.store.base import Store
from hermes.store.postgres.store import PostgresStore
from hermes.store.sqlite import SQLiteStore

ACTOR = Actor("tool", session_id="bench-session", turn=3)


def _entry(i: int) -> str:
    return f"Fact {i:04d}: the user prefers concise answers about project {uuid.uuid4().hex[:24]}"


def _timed_history(notes: NotesStore, took: list[float]) -> NotesStore:
    """Time what history adds to a write: the audit under the lock and the record."""
    history = notes.history
    assert history is not None
    for name in ("audit", "record"):
        method = getattr(history, name)

        def timed(*args: object, _method: object = method, **kw: object) -> object:
            start = time.perf_counter()
            try:
                return _method(*args, **kw)  # type: ignore[operator]
            finally:
                took.append(time.perf_counter() - start)

        setattr(history, name, timed)
    return notes


def _writes(notes: NotesStore, count: int) -> list[float]:
    """Seconds per write, after filling the note to a steady size (warm-up not counted)."""
    for i in range(20):
        change_notes(notes, "memory", [Operation("add", _entry(10_000 + i))], ACTOR)
    took = []
    for i in range(count):
        ops = [Operation("add", _entry(i))]
        state = notes.read("memory")
        if state.chars > 1_600:
            ops.insert(0, Operation("remove", old_text=state.entries[0]))
        start = time.perf_counter()
        change_notes(notes, "memory", ops, ACTOR)
        took.append(time.perf_counter() - start)
    return took


def _sqlite_bytes(store: SQLiteStore) -> int:
    conn = store.connection
    with store.lock:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        rows = conn.execute(
            "SELECT sum(pgsize) FROM dbstat WHERE name IN ('note_versions', 'note_versions_target')"
        ).fetchall()
    return int(rows[0][0] or 0)


def _pg_bytes(url: str) -> int:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("VACUUM note_versions")
        row = conn.execute("SELECT pg_total_relation_size('note_versions')").fetchone()
    return int(row[0]) if row else 0


def _measure(name: str, open_store: callable, size: callable, settings: Settings, n: int) -> dict:  # type: ignore[valid-type]
    store: Store = open_store()
    try:
        plain = NotesStore(settings.home, "bench-off", settings.memory)  # no history
        off = (
            _writes(plain, n)
            if isinstance(store, SQLiteStore)
            else _writes(_without_history(open_notes(settings, "bench-off", store)), n)
        )
        parts: list[float] = []
        on = _writes(_timed_history(open_notes(settings, "bench-on", store), parts), n)
        assert store.note_history is not None
        versions = len(store.note_history.list_versions("bench-on", limit=100_000))
        stored = size(store)
        text = sum(
            len(v.before.encode()) + len(v.after.encode())
            for v in store.note_history.list_versions("bench-on", limit=100_000)
        )
    finally:
        store.close()
    return {
        "backend": name,
        "versions": versions,
        "text_bytes": text / versions,
        "stored_bytes": stored / versions,
        "off_ms": statistics.median(off) * 1000,
        "on_ms": statistics.median(on) * 1000,
        "history_ms": sum(parts) * 1000 / (len(on) + 20),
    }


def _without_history(notes: NotesStore) -> NotesStore:
    notes.history = None
    return notes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--writes", type=int, default=200)
    parser.add_argument("--pg", default="postgresql://postgres@127.0.0.1:5432/postgres")
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        settings = Settings(home=Path(tmp))
        settings.memory.history_retention = args.writes + 10
        db = Path(tmp) / "state.db"
        rows.append(
            _measure("sqlite", lambda: SQLiteStore(db), _sqlite_bytes, settings, args.writes)
        )
        rows += _postgres(args.pg, settings, args.writes)
    print(f"{args.writes} memory writes per run; MEMORY.md kept near 1.6 KB; medians\n")
    head = f"{'backend':<10} {'versions':>8} {'text B/version':>15} {'stored B/version':>17} "
    print(head + f"{'write, no history':>18} {'write, history':>15} {'history part':>13}")
    for r in rows:
        print(
            f"{r['backend']:<10} {r['versions']:>8} {r['text_bytes']:>15,.0f} "
            f"{r['stored_bytes']:>17,.0f} {r['off_ms']:>15.2f} ms {r['on_ms']:>12.2f} ms "
            f"{r['history_ms']:>10.2f} ms"
        )


def _postgres(admin: str, settings: Settings, n: int) -> list[dict]:
    try:
        import psycopg

        name = f"hermes_bench_{uuid.uuid4().hex[:8]}"
        with psycopg.connect(admin, autocommit=True, connect_timeout=3) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
    except Exception as exc:  # no server: measure SQLite only
        print(f"(PostgreSQL skipped: {exc})")
        return []
    url = admin.rsplit("/", 1)[0] + f"/{name}"
    try:
        return [
            _measure(
                "postgresql", lambda: PostgresStore(url), lambda _s: _pg_bytes(url), settings, n
            )
        ]
    finally:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


if __name__ == "__main__":
    main()
