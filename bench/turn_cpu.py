"""Server CPU per turn, A/B, builds alternating server by server: the narrow harness for
per-turn changes (bench/api.py measures everything; this measures the one figure the
machine's load moves least, more times in the same minutes).

    .venv/bin/python bench/turn_cpu.py --ab main [--pairs 4] [--embeddings off]

Each build's `hermes serve` in turn (A B, B A, …) against the instant fake model: one session
to turn 1,200 (CPU of turns 1,000-1,199), then 32 sessions × 40 turns (CPU of those turns,
after a warm-up round). CPU is read from /proc: the event-loop thread, the other threads,
the whole process; medians in ms per turn. With `--embeddings off` the servers run without
the semantic indexer, whose catching up varies from run to run.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import aiohttp

sys.path.insert(0, str(Path(__file__).resolve().parent))
from api import (  # noqa: E402
    builds_under_test,
    cpu_seconds,
    embedding_cache,
    hermes_serve,
    one_turn,
)
from instant_model import InstantModel  # noqa: E402

LONG, WINDOW = 1200, 200
SESSIONS, TURNS = 32, 40


async def long_session(http: aiohttp.ClientSession, base: str, pid: int) -> tuple[float, float]:
    """(loop, process) CPU seconds per turn over the last WINDOW turns of one long session."""
    before = cpu_seconds(pid)
    for n in range(1, LONG + 1):
        if n == LONG - WINDOW + 1:
            before = cpu_seconds(pid)
        await one_turn(http, base, "long", f"turn {n}: a short message about the todo app")
    after = cpu_seconds(pid)
    return (after[0] - before[0]) / WINDOW, (after[1] - before[1]) / WINDOW


async def many_sessions(
    http: aiohttp.ClientSession, base: str, pid: int, tag: str
) -> tuple[float, float, float]:
    """(loop, process) CPU seconds per turn and turns/s, SESSIONS in parallel."""

    async def worker(i: int) -> None:
        for n in range(TURNS):
            await one_turn(http, base, f"{tag}-{i}", f"{tag} {i} {n}")

    await asyncio.gather(*(one_turn(http, base, f"{tag}-{i}", "hi") for i in range(SESSIONS)))
    before = cpu_seconds(pid)
    started = time.perf_counter()
    await asyncio.gather(*(worker(i) for i in range(SESSIONS)))
    wall = time.perf_counter() - started
    after = cpu_seconds(pid)
    n = SESSIONS * TURNS
    return (after[0] - before[0]) / n, (after[1] - before[1]) / n, n / wall


async def measure(args: argparse.Namespace) -> None:
    builds = builds_under_test(args.ab)
    model = await InstantModel().start()
    results: dict[str, dict[str, list[float]]] = {b.label: {} for b in builds}
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=64)) as http:
        with tempfile.TemporaryDirectory() as tmp:
            for p in range(args.pairs):
                for build in builds if p % 2 == 0 else builds[::-1]:
                    home = Path(tmp) / f"home-{p}-{abs(hash(build.label))}"
                    cache = embedding_cache(build.src, Path(tmp))
                    shutil.copytree(cache, home / "cache" / "embeddings")
                    if args.embeddings:
                        (home / "config.yaml").write_text(
                            f"search:\n  embeddings: '{args.embeddings}'\n"
                        )
                    async with hermes_serve(home, model.base_url, http, build.src) as (
                        proc,
                        base,
                        _,
                    ):
                        for _ in range(20):
                            await one_turn(http, base, "warm", "warm up")
                        out = results[build.label]
                        if not args.no_long:
                            loop, whole = await long_session(http, base, proc.pid)
                            out.setdefault("long loop", []).append(loop)
                            out.setdefault("long process", []).append(whole)
                        loop, whole, tps = await many_sessions(http, base, proc.pid, f"c{p}")
                        out.setdefault("32 loop", []).append(loop)
                        out.setdefault("32 process", []).append(whole)
                        out.setdefault("32 turns/s", []).append(tps)
                    print(
                        f"pair {p + 1}: {build.label}: "
                        + ", ".join(
                            f"{k} {v[-1] * (1 if 'turns' in k else 1000):.2f}"
                            for k, v in out.items()
                        ),
                        file=sys.stderr,
                    )
    await model.stop()
    labels = [b.label for b in builds]
    print("figure (median; ms of CPU per turn) | " + " | ".join(labels))
    for key in results[labels[0]]:
        scale = 1 if "turns" in key else 1000
        cells = [f"{statistics.median(results[lab][key]) * scale:.3f}" for lab in labels]
        if len(labels) == 2:
            a, b = (statistics.median(results[lab][key]) for lab in labels)
            cells.append(f"{(a - b) / b * 100:+.0f}%")
        print(f"{key} | " + " | ".join(cells))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ab", metavar="REV", help="the other build (git revision or folder)")
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--embeddings", choices=["auto", "on", "off"], default=None)
    parser.add_argument("--no-long", action="store_true", help="skip the long session")
    args = parser.parse_args()
    asyncio.run(measure(args))


if __name__ == "__main__":
    main()
