"""Start-up cost of the store-only CLI commands (issue #44: each ≤ 0.3 s). One command, prints
a table:

    .venv/bin/python bench/cli.py                 # this build
    .venv/bin/python bench/cli.py --ab 232a2a7    # this build against another, side by side

Each command runs as `python -m hermes …` in a fresh process against one home that holds a
few sessions and a cron job, the way a user runs it; the figures are the median wall
time and the median CPU time (user + system, from the child's rusage) over `--runs` runs. On
this shared machine the CPU time is the figure to compare: other engineers' load stretches
the wall time several-fold but leaves the work a command does about the same. In A/B mode the
builds alternate run by run, so both see the same machine.

Last row: `hermes chat -q` against an instant fake model (`instant_model.py`, on this
process's loop), from the moment the fake writes its answer to the first byte the command
prints: the time a user waits beyond the model (issue #44: ≤ 0.4 s).

Bytecode is compiled first (`compileall`) for every build, as an installed package has it: a
run that compiles its sources measures the compiler, not Hermes.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from api import Build, builds_under_test, table  # noqa: E402
from instant_model import InstantModel  # noqa: E402

COMMANDS: list[list[str]] = [
    ["--version"],
    ["sessions", "list"],
    ["sessions", "show", "bench-1"],
    ["sessions", "export"],
    ["memory", "show"],
    ["usage"],
    ["keys", "list"],
    ["users", "list"],
    ["cron", "list"],
]


def env_for(src: Path, home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    return {**env, "PYTHONPATH": str(src), "HERMES_HOME": str(home), "NO_COLOR": "1"}


def run_once(src: Path, home: Path, args: list[str]) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of one `python -m hermes ARGS`."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "hermes", *args],
        env=env_for(src, home),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"hermes {' '.join(args)} failed: {done.stderr.decode()[-400:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


async def chat_first_byte(src: Path, home: Path, model: InstantModel, tag: str) -> float:
    """Seconds from the model's answer (written by the instant fake) to the first byte of
    `hermes chat -q` on stdout: what the user waits for beyond the model itself."""
    env = {**env_for(src, home), "OPENAI_BASE_URL": model.base_url, "HERMES_MODEL": "fake-model"}
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "hermes",
        "chat",
        "-q",
        tag,
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    assert proc.stdout is not None
    first = await proc.stdout.read(1)
    seen = time.perf_counter()
    _, err = await proc.communicate()
    if not first or proc.returncode != 0:
        raise SystemExit(f"hermes chat -q failed: {err.decode()[-400:]}")
    return seen - model.answered_at[tag]


async def chat_rounds(builds: list[Build], home: Path, runs: int) -> dict[str, list[float]]:
    model = await InstantModel().start()
    out: dict[str, list[float]] = {}
    try:
        for r in range(runs + 1):  # the first round untimed: the page cache, not the code
            for build in builds if r % 2 == 0 else builds[::-1]:
                delay = await chat_first_byte(build.src, home, model, f"hello {r} {build.label}")
                if r:
                    out.setdefault(build.label, []).append(delay)
    finally:
        await model.stop()
    return out


def seed_home(src: Path, home: Path) -> None:
    """A home with a few sessions and a cron job, written through the CLI itself."""
    sessions = [
        {
            "id": f"bench-{i}",
            "title": f"Bench session {i}",
            "messages": [
                {"role": "user", "content": f"hello {i}"},
                {"role": "assistant", "content": f"Hello! This is answer {i}."},
            ],
        }
        for i in range(1, 6)
    ]
    data = home.parent / "seed.jsonl"
    data.write_text("".join(json.dumps(s) + "\n" for s in sessions), encoding="utf-8")
    for args in (
        ["sessions", "import", "--no-embed", str(data)],
        ["cron", "add", "every 1h", "Summarise my notes."],
    ):
        done = subprocess.run(
            [sys.executable, "-m", "hermes", *args],
            env=env_for(src, home),
            capture_output=True,
        )
        if done.returncode != 0:
            raise SystemExit(f"seed: hermes {' '.join(args)}: {done.stderr.decode()[-300:]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ab", metavar="REV", help="also measure another build, alternating")
    parser.add_argument("--runs", type=int, default=7, help="runs per command and build")
    args = parser.parse_args()
    builds = builds_under_test(args.ab)
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp) / "home"
        seed_home(builds[0].src, home)
        results: dict[tuple[str, str], list[tuple[float, float]]] = {}
        for command in COMMANDS:
            name = " ".join(command)
            for build in builds:  # one untimed run each: the page cache, not the code
                run_once(build.src, home, command)
            for r in range(args.runs):
                for build in builds if r % 2 == 0 else builds[::-1]:
                    results.setdefault((name, build.label), []).append(
                        run_once(build.src, home, command)
                    )
        first_bytes = asyncio.run(chat_rounds(builds, home, args.runs))
    rows = []
    for command in COMMANDS:
        name = " ".join(command)
        row = [f"hermes {name}"]
        cpus = []
        for build in builds:
            runs = results[(name, build.label)]
            wall = statistics.median(w for w, _ in runs)
            cpu = statistics.median(c for _, c in runs)
            cpus.append(cpu)
            row.append(f"{wall:.3f} / {cpu:.3f}")
        if len(builds) == 2:
            row.append(f"{(cpus[0] - cpus[1]) / cpus[1] * 100:+.0f}%" if cpus[1] else "—")
        rows.append(tuple(row))
    header = ["command (s, median: wall / CPU)", *(b.label for b in builds)]
    if len(builds) == 2:
        header.append("CPU A vs B")
    row = ["hermes chat -q: first byte after the model's answer (s, wall)"]
    row += [f"{statistics.median(first_bytes[b.label]):.3f}" for b in builds]
    if len(builds) == 2:
        a, b = (statistics.median(first_bytes[x.label]) for x in builds)
        row.append(f"{(a - b) / b * 100:+.0f}% (wall)" if b else "—")
    rows.append(tuple(row))
    print(f"load average at the end: {Path('/proc/loadavg').read_text().split()[:3]}")
    table(tuple(header), rows)


if __name__ == "__main__":
    main()
