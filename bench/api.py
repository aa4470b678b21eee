"""Benchmark of the API server against an instant fake model. One command, prints a table:

    .venv/bin/python bench/api.py            # full run (about a minute)
    .venv/bin/python bench/api.py --quick    # smaller counts, for a smoke test

What it measures (issue #3, item 8), all through real sockets against a real `hermes serve`
subprocess whose model endpoint is `bench/instant_model.py` answering "ok" at once:

* per-turn server overhead = client-observed latency of a non-streaming turn minus the time the
  fake spent on that turn's upstream request (from its first byte in to its answer out), at
  turn 1 (the first turn of 200 fresh sessions), turn 100 (turns 100-199 of one session) and
  turn 1,000 (turns 1,000-1,199 of the same session): p50 / p95 / p99;
* throughput and p99 latency with 8 and 32 concurrent sessions (fresh sessions, 40 turns each
  or more), raw (nothing subtracted);
* server RSS after the run (and its peak), cold start (spawn to first 200 from /health, median
  of 3 fresh homes), and the size of the first upstream request (system prompt + tool schemas,
  chars/4 tokens, the project's estimator).

The server runs with its defaults, memory review included (a background model call every 10
user turns of a session). The client (aiohttp) and the fake share one event loop in this
process, so the server has the other core to itself; their cost is inside the latencies, so the
overhead figures are upper bounds for the server itself.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import aiohttp

sys.path.insert(0, str(Path(__file__).resolve().parent))
from instant_model import InstantModel  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent

# ---------------------------------------------------------------------- server process


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@asynccontextmanager
async def hermes_serve(
    home: Path, model_url: str, http: aiohttp.ClientSession
) -> AsyncIterator[tuple[subprocess.Popen[bytes], str, float]]:
    """Start `hermes serve`; yields (process, base URL, seconds from spawn to first healthy /health)."""
    port = free_port()
    env = {
        **os.environ,
        "HERMES_HOME": str(home),
        "OPENAI_BASE_URL": model_url,
        "HERMES_MODEL": "fake-model",
        "PYTHONPATH": str(ROOT / "src"),
    }
    env.pop("HERMES_API_KEY", None)
    base = f"http://127.0.0.1:{port}"
    log_path = home.parent / f"{home.name}-serve.log"
    log = log_path.open("ab")
    started = time.perf_counter()
    # Popen only forks; the wait happens in _wait_healthy without blocking the loop
    proc = subprocess.Popen(  # noqa: ASYNC220
        [sys.executable, "-m", "hermes", "serve", "--port", str(port)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=log,
    )
    try:
        cold = await _wait_healthy(proc, base, started, http)
        yield proc, base, cold
    except BaseException:
        log.flush()
        print(
            f"server log ({log_path}):\n" + log_path.read_text(errors="replace")[-4000:],
            file=sys.stderr,
        )
        raise
    finally:
        log.close()
        proc.send_signal(signal.SIGTERM)
        try:
            await asyncio.to_thread(proc.wait, 30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


async def _wait_healthy(
    proc: subprocess.Popen[bytes], base: str, started: float, http: aiohttp.ClientSession
) -> float:
    deadline = started + 30
    while time.perf_counter() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"hermes serve exited with {proc.returncode}")
        try:
            async with http.get(f"{base}/health") as r:
                if r.status == 200:
                    return time.perf_counter() - started
        except aiohttp.ClientError:
            await asyncio.sleep(0.002)
    raise SystemExit("hermes serve did not become healthy within 30 s")


def rss_mb(pid: int) -> tuple[float, float]:
    """(current, peak) resident set size in MB, from /proc."""
    fields = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        name, _, value = line.partition(":")
        fields[name] = value.strip()
    return int(fields["VmRSS"].split()[0]) / 1024, int(fields["VmHWM"].split()[0]) / 1024


# ---------------------------------------------------------------------- measurements


def body(content: str) -> bytes:
    return json.dumps(
        {"model": "hermes", "messages": [{"role": "user", "content": content}]}
    ).encode()


async def one_turn(http: aiohttp.ClientSession, base: str, session: str, content: str) -> float:
    """Client-observed latency of one non-streaming turn, in seconds."""
    started = time.perf_counter()
    async with http.post(
        f"{base}/v1/chat/completions",
        data=body(content),
        headers={"X-Hermes-Session-Id": session, "Content-Type": "application/json"},
    ) as r:
        text = await r.read()
    latency = time.perf_counter() - started
    if r.status != 200:
        raise SystemExit(f"turn failed: HTTP {r.status} {text[:300]!r}")
    return latency


async def sequential(
    http: aiohttp.ClientSession,
    base: str,
    model: InstantModel,
    fresh: int,
    long_turns: int,
    windows: list[tuple[int, int]],
) -> dict[str, list[float]]:
    async def overhead(session: str, content: str) -> float:
        latency = await one_turn(http, base, session, content)
        return latency - model.take(content)

    out: dict[str, list[float]] = {}
    for _ in range(20):  # warm up code paths and connections
        await overhead("warmup", f"warm {time.perf_counter_ns()}")
    out["turn 1"] = [await overhead(f"fresh-{i}", f"hello {i}") for i in range(fresh)]
    per_turn: dict[int, float] = {}
    for n in range(1, long_turns + 1):
        per_turn[n] = await overhead(
            "long", f"turn {n}: a short message about the todo app, decision {n % 7}"
        )
    for first, last in windows:
        out[f"turn {first}"] = [per_turn[n] for n in range(first, last + 1)]
    return out


async def concurrent(
    http: aiohttp.ClientSession, base: str, sessions: int, turns_each: int, tag: str
) -> tuple[float, float, int]:
    """(turns per second, p99 latency, turns) with `sessions` clients in parallel."""
    latencies: list[float] = []

    async def worker(i: int) -> None:
        for n in range(turns_each):
            latencies.append(await one_turn(http, base, f"{tag}-{i}", f"{tag} {i} {n}"))

    await asyncio.gather(*(worker(i) for i in range(sessions)))  # warm-up round, not counted
    latencies.clear()
    started = time.perf_counter()
    await asyncio.gather(*(worker(i) for i in range(sessions)))
    wall = time.perf_counter() - started
    return len(latencies) / wall, percentiles(latencies)[2], len(latencies)


def percentiles(samples: list[float]) -> tuple[float, float, float]:
    ordered = sorted(samples)

    def pick(q: float) -> float:
        return ordered[min(len(ordered) - 1, max(0, round(q * len(ordered)) - 1))]

    return pick(0.50), pick(0.95), pick(0.99)


async def first_request_tokens(
    http: aiohttp.ClientSession, base: str, model: InstantModel
) -> tuple[int, int, int]:
    """(tokens, system chars, tool-schema chars) of the first upstream request of the server."""
    await one_turn(http, base, "probe", "first request probe")
    request = model.first_body or {}
    system = "".join(m["content"] for m in request.get("messages", []) if m["role"] == "system")
    tools = json.dumps(request.get("tools") or [])
    return (len(system) + len(tools) + 3) // 4, len(system), len(tools)


async def measure(args: argparse.Namespace) -> dict:
    fresh, long_turns = (30, 300) if args.quick else (200, 1199)
    windows = [(100, 199), (250, 299)] if args.quick else [(100, 199), (1000, 1199)]
    conc_turns = {8: 20, 32: 6} if args.quick else {8: 100, 32: 40}
    model = await InstantModel().start()
    connector = aiohttp.TCPConnector(limit=64)
    async with aiohttp.ClientSession(
        connector=connector, timeout=aiohttp.ClientTimeout(total=60)
    ) as http:
        with tempfile.TemporaryDirectory() as tmp:
            colds = []
            for i in range(3):
                async with hermes_serve(Path(tmp) / f"cold-{i}", model.base_url, http) as (
                    _,
                    _,
                    cold,
                ):
                    colds.append(cold)
            async with hermes_serve(Path(tmp) / "home", model.base_url, http) as (proc, base, _):
                tokens = await first_request_tokens(http, base, model)
                conc = {
                    n: await concurrent(http, base, n, t, f"c{n}") for n, t in conc_turns.items()
                }
                seq = await sequential(http, base, model, fresh, long_turns, windows)
                rss = rss_mb(proc.pid)
    await model.stop()
    return {
        "colds": colds,
        "tokens": tokens,
        "conc": conc,
        "seq": seq,
        "rss": rss,
        "last_window": windows[-1][0],
    }


# ---------------------------------------------------------------------- report


def ms(x: float) -> str:
    return f"{x * 1000:.2f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small counts (smoke test)")
    args = parser.parse_args()
    # The fake parses every request body (200 kB at turn 1,000); collections of the garbage
    # that leaves in this process would land in the measured latencies, so collect less often.
    gc.freeze()
    gc.set_threshold(100_000, 50, 1_000)
    try:
        import uvloop  # the harness's own cost matters less on a faster loop
    except ImportError:
        result = asyncio.run(measure(args))
    else:
        result = uvloop.run(measure(args))

    rows: list[tuple[str, str, str, str]] = []
    original = {"turn 1": "≈180", "turn 100": "≈180", "turn 1000": "≈180"}
    for name, samples in result["seq"].items():
        p50, p95, p99 = percentiles(samples)
        target = "p50 ≤ 3, p99 ≤ 15" if name == f"turn {result['last_window']}" else "—"
        rows.append(
            (
                f"overhead {name} (ms p50/p95/p99, n={len(samples)})",
                f"{ms(p50)} / {ms(p95)} / {ms(p99)}",
                target,
                original.get(name, "≈180 p50"),
            )
        )
    for n, (tps, p99, count) in result["conc"].items():
        target = "≥ 300 turns/s" if n == 32 else "—"
        rows.append(
            (
                f"{n} concurrent sessions (turns/s, p99 ms, n={count})",
                f"{tps:.0f} turns/s, p99 {ms(p99)}",
                target,
                "≈9.5 turns/s",
            )
        )
    rss, peak = result["rss"]
    rows.append(
        ("server RSS after the run (MB, peak)", f"{rss:.0f} (peak {peak:.0f})", "≤ 150", "≈200")
    )
    colds = result["colds"]
    rows.append(
        (
            "cold start to first /health (s, median of 3)",
            f"{statistics.median(colds):.2f} ({', '.join(f'{c:.2f}' for c in colds)})",
            "≤ 1.5",
            "—",
        )
    )
    tokens, sys_chars, tool_chars = result["tokens"]
    rows.append(
        (
            "first upstream request (tokens; system + tool chars)",
            f"{tokens} ({sys_chars} + {tool_chars})",
            "≤ 4,000",
            "≈12,900 (45,700 tool chars)",
        )
    )
    widths = [
        max(len(r[i]) for r in [("figure", "Hermes", "target", "original"), *rows])
        for i in range(4)
    ]
    line = " | ".join(
        h.ljust(w) for h, w in zip(("figure", "Hermes", "target", "original"), widths, strict=True)
    )
    print(line)
    print("-|-".join("-" * w for w in widths))
    for r in rows:
        print(" | ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)))


if __name__ == "__main__":
    main()
