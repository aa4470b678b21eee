"""What profiles cost `hermes serve`: start-up time and memory with 0, 2 and 8 profiles, and
the first request to a profile created while the server runs (opened then). One command,
prints a table:

    .venv/bin/python bench/profiles.py            # 3 rounds per row
    .venv/bin/python bench/profiles.py --quick    # 1 round per row

Each row starts a real `hermes serve --port 0` subprocess on a fresh home holding N profiles
(each with a key and the default settings; model: the echo fake, never called) and measures
spawn → the "listening" line (every existing profile is opened by then: its store migrated,
its runtime and cron ticker started), spawn → first 200 from `/p/<last>/v1/models`, and the
server's RSS once up. The lazy row creates a profile after start and times its first request
(open + answer) against the second (answer only). Rounds run interleaved (0, 2, 8, 0, 2, 8 …)
so the machine's load hits every row alike; print `cat /proc/loadavg` beside the figures.
"""

from __future__ import annotations

import argparse
import os
import select
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from hermes.profiles import create  # noqa: E402

KEY = "bench-profile-key-0123456789"


def _env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HERMES_", "OPENAI_"))}
    env.update(
        HERMES_HOME=str(home),
        HERMES_API_KEY=KEY,
        OPENAI_BASE_URL="http://127.0.0.1:9/v1",  # never called
        HERMES_MODEL="echo",
        PYTHONPATH=str(Path(__file__).resolve().parents[1] / "src"),
    )
    return env


def _rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def _wait_listening(proc: subprocess.Popen[str], timeout: float = 60) -> str:
    assert proc.stderr is not None
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ready, _, _ = select.select([proc.stderr], [], [], 0.1)
        if ready:
            line = proc.stderr.readline()
            if not line:
                raise RuntimeError("hermes serve exited early")
            if "listening on " in line:
                return line.split("listening on ", 1)[1].split()[0]
    raise RuntimeError("hermes serve did not start")


def _serve(home: Path) -> tuple[subprocess.Popen[str], str, float]:
    start = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "hermes", "serve", "--port", "0"],
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
        env=_env(home),
    )
    url = _wait_listening(proc)
    return proc, url, (time.perf_counter() - start) * 1000


def _stop(proc: subprocess.Popen[str]) -> None:
    proc.terminate()
    try:
        proc.wait(20)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def _get_ms(url: str) -> float:
    start = time.perf_counter()
    r = httpx.get(url, headers={"Authorization": f"Bearer {KEY}"}, timeout=60)
    r.raise_for_status()
    return (time.perf_counter() - start) * 1000


def one_start(count: int) -> tuple[float, float, float]:
    """(ms to listening, ms to the last profile's first answer, RSS MB) for `count` profiles."""
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        for i in range(count):
            env = create(home, f"p{i}").home / ".env"
            env.write_text(f"HERMES_API_KEY={KEY}\n")
        started = time.perf_counter()
        proc, url, listening = _serve(home)
        try:
            path = f"/p/p{count - 1}/v1/models" if count else "/v1/models"
            _get_ms(url + path)
            answered = (time.perf_counter() - started) * 1000
            return listening, answered, _rss_mb(proc.pid)
        finally:
            _stop(proc)


def lazy_open() -> tuple[float, float]:
    """(first request to a profile created while serving, second request) in ms."""
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        proc, url, _ = _serve(home)
        try:
            _get_ms(url + "/v1/models")
            (create(home, "late").home / ".env").write_text(f"HERMES_API_KEY={KEY}\n")
            first = _get_ms(url + "/p/late/v1/models")
            second = _get_ms(url + "/p/late/v1/models")
            return first, second
        finally:
            _stop(proc)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one round per row")
    rounds = 1 if parser.parse_args().quick else 3
    counts = (0, 2, 8)
    starts: dict[int, list[tuple[float, float, float]]] = {n: [] for n in counts}
    lazy: list[tuple[float, float]] = []
    for _ in range(rounds):
        for n in counts:
            starts[n].append(one_start(n))
        lazy.append(lazy_open())
    med = statistics.median
    print(f"load: {Path('/proc/loadavg').read_text().split()[:3]}  rounds: {rounds}")
    print(
        f"{'profiles':>8} | {'to listening ms':>15} | {'to last profile 200 ms':>22} | {'RSS MB':>7}"
    )
    for n in counts:
        rows = starts[n]
        print(
            f"{n:>8} | {med(r[0] for r in rows):>15.0f} | {med(r[1] for r in rows):>22.0f} | "
            f"{med(r[2] for r in rows):>7.0f}"
        )
    print(
        f"profile created while serving: first request {med(f for f, _ in lazy):.0f} ms "
        f"(opens it), second {med(s for _, s in lazy):.1f} ms"
    )


if __name__ == "__main__":
    main()
