"""Cold start of `hermes serve` (issue #44: ≤ 0.5 s): spawn to the first 200 from /health, and
the server's CPU time (user + system, from /proc) at that moment. One command, prints a table:

    .venv/bin/python bench/cold_start.py --starts 8                # this build
    .venv/bin/python bench/cold_start.py --ab 2840d6a --starts 8   # against another, alternating

Each start is a fresh home (as `bench/api.py`'s cold starts), the builds alternate start by start
(A B, B A, …) so both see the same machine, and their bytecode is compiled first. On this shared
machine the CPU column is the one to compare; the minimum is the figure least moved by the load.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
from pathlib import Path

import aiohttp

sys.path.insert(0, str(Path(__file__).resolve().parent))
from api import Build, builds_under_test, cpu_seconds, hermes_serve, table  # noqa: E402
from instant_model import InstantModel  # noqa: E402


async def measure(builds: list[Build], starts: int) -> dict[str, list[tuple[float, float]]]:
    out: dict[str, list[tuple[float, float]]] = {b.label: [] for b in builds}
    model = await InstantModel().start()
    try:
        async with aiohttp.ClientSession() as http:
            with tempfile.TemporaryDirectory() as tmp:
                for r in range(starts + 1):  # the first round untimed: the page cache
                    for i, build in enumerate(builds if r % 2 == 0 else builds[::-1]):
                        home = Path(tmp) / f"home-{r}-{i}"
                        async with hermes_serve(home, model.base_url, http, build.src) as (
                            proc,
                            _,
                            cold,
                        ):
                            cpu = cpu_seconds(proc.pid)[1]
                        if r:
                            out[build.label].append((cold, cpu))
    finally:
        await model.stop()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ab", metavar="REV", help="also measure another build, alternating")
    parser.add_argument("--starts", type=int, default=8, help="starts per build")
    args = parser.parse_args()
    builds = builds_under_test(args.ab)
    load_before = Path("/proc/loadavg").read_text().split()[:3]
    results = asyncio.run(measure(builds, args.starts))
    load_after = Path("/proc/loadavg").read_text().split()[:3]
    rows = []
    for label, runs in results.items():
        walls = [w for w, _ in runs]
        cpus = [c for _, c in runs]
        rows.append(
            (
                label,
                f"{statistics.median(walls):.3f} / {min(walls):.3f}",
                f"{statistics.median(cpus):.3f} / {min(cpus):.3f}",
            )
        )
    if len(builds) == 2:
        a, b = (statistics.median(c for _, c in results[x.label]) for x in builds)
        rows.append(("CPU median A vs B", "", f"{(a - b) / b * 100:+.0f}%"))
    print(f"load average before {load_before}, after {load_after}; {args.starts} starts each")
    table(("build", "wall s (median / min)", "CPU s (median / min)"), rows)


if __name__ == "__main__":
    main()
