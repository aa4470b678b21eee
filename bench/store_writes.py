"""What a turn's store write costs, and what indexing its messages for search costs: one
command, a table.

    .venv/bin/python bench/store_writes.py                 # SQLite and PostgreSQL
    .venv/bin/python bench/store_writes.py --ab f70fead    # this build against another
    .venv/bin/python bench/store_writes.py --backend sqlite --turns 400

Each turn appends a user message and an answer (about 90 characters each) to its session, as
`hermes serve` does at a turn's end, through the store's public API, in-process. Two shapes:
one long session (1,000 turns stored first), and 32 sessions taking turns. `write` is the
append's own time (what a turn waits for); `index` is the search index catching up
afterwards, every 16 turns (`search.catch_up()`, the work the store's writer does when idle;
zero for a build that indexes inside the write); `total` is their sum per turn. PostgreSQL
runs on this machine's server (127.0.0.1:5432, user postgres), a database per run.

A/B mode (`--ab REV`, a git revision or a folder holding `src/hermes`) runs the same
measurements on that build in a subprocess, alternating with this one, and prints both.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
USER = "I was thinking about going hiking in the mountains next weekend with my sister Anna, {n}"
ANSWER = "That sounds lovely! The forecast says sunny skies; remember to bring water and a map."
EVERY = 16  # turns between two catch-ups, as the writer's backlog has it at DUE_AT messages
PG_ADMIN = "postgresql://postgres@127.0.0.1:5432/postgres"


def _catch_up(store: Any) -> None:
    catch_up = getattr(store.search, "catch_up", None)
    if catch_up is not None:
        catch_up()


def _turns(store: Any, sessions: list[str], turns: int, start: int) -> tuple[float, float]:
    """Seconds spent in appends and in catch-ups over `turns` turns (round-robin)."""
    from hermes.store.base import NewMessage

    write = index = 0.0
    for n in range(start, start + turns):
        pair = [NewMessage("user", USER.format(n=n)), NewMessage("assistant", ANSWER)]
        began = time.perf_counter()
        store.append_messages("bench", sessions[n % len(sessions)], pair)
        write += time.perf_counter() - began
        if (n + 1) % EVERY == 0:
            began = time.perf_counter()
            _catch_up(store)
            index += time.perf_counter() - began
    return write, index


def measure(backend: str, turns: int) -> dict[str, list[float]]:
    """µs per turn (write, index) for each shape; runs in the build under test."""
    from hermes.store import open_store

    out: dict[str, list[float]] = {}
    for shape, count, history in (("1 long session", 1, 1000), ("32 sessions", 32, 0)):
        with tempfile.TemporaryDirectory() as tmp:
            url, drop = _database(backend, Path(tmp))
            try:
                store = open_store(url)
                names = [f"s{i}" for i in range(count)]
                for name in names:
                    store.ensure_session("bench", name, source="api")
                _turns(store, names, history, 0)
                _catch_up(store)
                write, index = _turns(store, names, turns, history)
                out[shape] = [write / turns * 1e6, index / turns * 1e6]
                store.close()
            finally:
                drop()
    return out


def _database(backend: str, tmp: Path) -> tuple[str, Any]:
    if backend == "sqlite":
        return "sqlite:///" + str(tmp / "state.db").lstrip("/"), lambda: None
    import psycopg

    name = f"bench_writes_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(PG_ADMIN, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')

    def drop() -> None:
        with psycopg.connect(PG_ADMIN, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    return PG_ADMIN.rsplit("/", 1)[0] + "/" + name, drop


def _other_build(rev: str, tmp: Path) -> Path:
    folder = Path(rev)
    if (folder / "src" / "hermes").is_dir():
        return folder / "src"
    out = tmp / "build"
    out.mkdir()
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", rev, "src"], check=True, capture_output=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(out)], input=archive, check=True)
    return out / "src"


def _run_build(src: Path, backend: str, turns: int) -> dict[str, list[float]]:
    env = {**os.environ, "PYTHONPATH": str(src)}
    code = (
        f"import json, sys; sys.path.insert(0, {str(Path(__file__).parent)!r}); "
        f"import store_writes as b; print(json.dumps(b.measure({backend!r}, {turns})))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, check=True, capture_output=True, text=True
    )
    result: dict[str, list[float]] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", choices=("sqlite", "postgresql", "both"), default="both")
    parser.add_argument("--turns", type=int, default=800)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--ab", help="another build: a git revision or a folder with src/")
    args = parser.parse_args()
    backends = ["sqlite", "postgresql"] if args.backend == "both" else [args.backend]
    tmp = Path(tempfile.mkdtemp())
    try:
        builds = {"this build": ROOT / "src"}
        if args.ab:
            builds[args.ab] = _other_build(args.ab, tmp)
        rows = []
        for backend in backends:
            runs: dict[str, list[dict[str, list[float]]]] = {b: [] for b in builds}
            order = list(builds)
            for r in range(args.rounds):
                for build in order if r % 2 == 0 else order[::-1]:
                    runs[build].append(_run_build(builds[build], backend, args.turns))
            for shape in runs[order[0]][0]:
                cells = []
                for build in order:
                    write = statistics.median(x[shape][0] for x in runs[build])
                    index = statistics.median(x[shape][1] for x in runs[build])
                    cells.append(f"{write:6.0f} + {index:4.0f} = {write + index:6.0f}")
                rows.append((f"{backend}, {shape}", *cells))
        header = ("µs per turn (median of rounds): write + index = total", *builds)
        widths = [max(len(str(c)) for c in col) for col in zip(header, *rows, strict=True)]
        for line in (header, tuple("-" * w for w in widths), *rows):
            print(" | ".join(str(c).ljust(w) for c, w in zip(line, widths, strict=True)))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
