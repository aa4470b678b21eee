"""Profile `hermes serve` under 32 concurrent sessions with py-spy: a flame graph (SVG) and the
collapsed stacks (text), for docs/perf/.

    pip install py-spy            # or put its binary on PATH
    .venv/bin/python bench/profile_api.py docs/perf/serve-32 [--seconds 20] [--src OTHER/src]

The server and its instant fake model are the ones `bench/api.py` uses; the client keeps 32
sessions busy for as long as py-spy samples (non-blocking, 250 Hz unless `--rate`, idle
threads left out).
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import aiohttp

sys.path.insert(0, str(Path(__file__).resolve().parent))
from api import ROOT, embedding_cache, hermes_serve, one_turn  # noqa: E402
from instant_model import InstantModel  # noqa: E402


async def profile(
    out: Path,
    seconds: float,
    src: Path,
    py_spy: str,
    sessions: int = 32,
    gil: bool = False,
    rate: int = 250,
) -> int:
    model = await InstantModel().start()
    turns = 0
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=64)) as http:
        with tempfile.TemporaryDirectory() as tmp:
            home = Path(tmp) / "home"  # with its embedding graph, as bench/api.py has it
            shutil.copytree(embedding_cache(src, Path(tmp)), home / "cache" / "embeddings")
            async with hermes_serve(home, model.base_url, http, src) as (
                proc,
                base,
                _,
            ):
                for i in range(sessions):  # warm-up: every session exists before sampling
                    await one_turn(http, base, f"s-{i}", "hello")
                common = [py_spy, "record", "--pid", str(proc.pid), "--nonblocking"]
                common += ["--rate", str(rate), "--duration", str(int(seconds))]
                common += ["--gil"] if gil else []
                samplers = [
                    subprocess.Popen(  # noqa: ASYNC220
                        [*common, "--format", fmt, "--output", str(out.with_suffix(suffix))],
                        stdout=subprocess.DEVNULL,
                        stderr=subprocess.DEVNULL,
                    )
                    for fmt, suffix in (("flamegraph", ".svg"), ("raw", ".txt"))
                ]
                stop = asyncio.Event()

                async def worker(i: int) -> None:
                    nonlocal turns
                    n = 0
                    while not stop.is_set():
                        await one_turn(http, base, f"s-{i}", f"s {i} turn {n}")
                        n, turns = n + 1, turns + 1

                tasks = [asyncio.create_task(worker(i)) for i in range(sessions)]
                await asyncio.gather(*(asyncio.to_thread(s.wait) for s in samplers))
                stop.set()
                await asyncio.gather(*tasks)
    await model.stop()
    return turns


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, help="output path without suffix")
    parser.add_argument("--seconds", type=float, default=20)
    parser.add_argument("--src", type=Path, default=ROOT / "src")
    parser.add_argument("--sessions", type=int, default=32, help="concurrent sessions")
    parser.add_argument(
        "--gil", action="store_true", help="sample only the thread holding the GIL (CPU)"
    )
    parser.add_argument("--rate", type=int, default=250, help="samples per second")
    args = parser.parse_args()
    py_spy = shutil.which("py-spy")
    if py_spy is None:
        raise SystemExit("py-spy is not on PATH: pip install py-spy")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    turns = asyncio.run(
        profile(args.out, args.seconds, args.src, py_spy, args.sessions, args.gil, args.rate)
    )
    print(f"{turns} turns while sampling; wrote {args.out}.svg and {args.out}.txt")


if __name__ == "__main__":
    main()
