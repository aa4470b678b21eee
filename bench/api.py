"""Benchmark of the API server against an instant fake model. One command, prints a table:

    .venv/bin/python bench/api.py            # full run (about a minute)
    .venv/bin/python bench/api.py --quick    # smaller counts, for a smoke test

What it measures (issue #3, item 8), all through real sockets against a real `hermes serve`
subprocess whose model endpoint is `hermes.testing.FakeModel` answering "ok" instantly:

* per-turn server overhead = client-observed latency of a non-streaming turn minus the time the
  fake spent handling that turn's upstream request (timed inside the fake's handler), at turn 1
  (the first turn of 200 fresh sessions), turn 100 (turns 100-199 of one session) and turn
  1,000 (turns 1,000-1,199 of the same session): p50 / p95 / p99;
* throughput and p99 latency with 8 and 32 concurrent sessions (fresh sessions, 40 turns each
  or more), raw (nothing subtracted);
* server RSS after the run (and its peak), cold start (spawn to first 200 from /health, median
  of 3 fresh homes), and the size of the first upstream request (system prompt + tool schemas,
  chars/4 tokens, the project's estimator).

The client and the fake share this process; their cost is inside the latencies, so the
overhead figures are upper bounds for the server itself.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

from hermes.testing import fake_model
from hermes.testing.fake_model import FakeModel, Text

ROOT = Path(__file__).resolve().parent.parent

# ---------------------------------------------------------------------- fake timing


class FakeTimer:
    """Times each POST inside the fake's handler thread, keyed by the last message's content."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.by_tag: dict[str, float] = {}

    def install(self) -> None:
        timer = self
        original_post = fake_model._Handler.do_POST
        original_record = fake_model._Handler._record

        def record(handler, body):  # type: ignore[no-untyped-def]
            rec = original_record(handler, body)
            handler._bench_body = body
            return rec

        def do_post(handler):  # type: ignore[no-untyped-def]
            started = time.perf_counter()
            try:
                original_post(handler)
            finally:
                elapsed = time.perf_counter() - started
                body = getattr(handler, "_bench_body", None) or {}
                messages = body.get("messages") or [{}]
                tag = str(messages[-1].get("content"))
                with timer.lock:
                    timer.by_tag[tag] = timer.by_tag.get(tag, 0.0) + elapsed
                # The fake keeps every request; keep only the system prompt and the newest
                # message of each, so 1,000 turns of history do not bloat this process (its GC
                # pauses would land in the client's latencies).
                if len(messages) > 2:
                    body["messages"] = [*messages[:1], messages[-1]]

        fake_model._Handler._record = record  # type: ignore[method-assign]
        fake_model._Handler.do_POST = do_post  # type: ignore[method-assign]

    def take(self, tag: str) -> float:
        with self.lock:
            return self.by_tag.pop(tag, 0.0)


# ---------------------------------------------------------------------- server process


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def hermes_serve(home: Path, fake: FakeModel) -> Iterator[tuple[subprocess.Popen[bytes], str, float]]:
    """Start `hermes serve`; yields (process, base URL, seconds from spawn to first healthy /health)."""
    port = free_port()
    env = {**os.environ, "HERMES_HOME": str(home), "OPENAI_BASE_URL": fake.base_url,
           "HERMES_MODEL": "fake-model", "PYTHONPATH": str(ROOT / "src")}
    env.pop("HERMES_API_KEY", None)
    base = f"http://127.0.0.1:{port}"
    started = time.perf_counter()
    log_path = home.parent / f"{home.name}-serve.log"
    log = log_path.open("ab")
    proc = subprocess.Popen([sys.executable, "-m", "hermes", "serve", "--port", str(port)],
                            env=env, stdout=subprocess.DEVNULL, stderr=log)
    try:
        cold = _wait_healthy(proc, base, started)
        yield proc, base, cold
    except BaseException:
        log.flush()
        print(f"server log ({log_path}):\n" + log_path.read_text(errors="replace")[-4000:],
              file=sys.stderr)
        raise
    finally:
        log.close()
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _wait_healthy(proc: subprocess.Popen[bytes], base: str, started: float) -> float:
    deadline = started + 30
    with httpx.Client(timeout=1) as client:
        while time.perf_counter() < deadline:
            if proc.poll() is not None:
                raise SystemExit(f"hermes serve exited with {proc.returncode}")
            try:
                if client.get(f"{base}/health").status_code == 200:
                    return time.perf_counter() - started
            except httpx.TransportError:
                time.sleep(0.002)
    raise SystemExit("hermes serve did not become healthy within 30 s")


def rss_mb(pid: int) -> tuple[float, float]:
    """(current, peak) resident set size in MB, from /proc."""
    fields = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        name, _, value = line.partition(":")
        fields[name] = value.strip()
    return int(fields["VmRSS"].split()[0]) / 1024, int(fields["VmHWM"].split()[0]) / 1024


# ---------------------------------------------------------------------- measurements


def body(content: str) -> dict:
    return {"model": "hermes", "messages": [{"role": "user", "content": content}]}


def one_turn(client: httpx.Client, session: str, content: str, timer: FakeTimer) -> tuple[float, float]:
    """(latency, overhead) in seconds for one non-streaming turn."""
    started = time.perf_counter()
    r = client.post("/v1/chat/completions", json=body(content),
                    headers={"X-Hermes-Session-Id": session})
    latency = time.perf_counter() - started
    if r.status_code != 200:
        raise SystemExit(f"turn failed: HTTP {r.status_code} {r.text[:300]}")
    return latency, latency - timer.take(content)


def percentiles(samples: list[float]) -> tuple[float, float, float]:
    ordered = sorted(samples)

    def pick(q: float) -> float:
        return ordered[min(len(ordered) - 1, max(0, round(q * len(ordered)) - 1))]

    return pick(0.50), pick(0.95), pick(0.99)


def sequential(base: str, timer: FakeTimer, fresh: int, long_turns: int,
               windows: list[tuple[int, int]]) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {}
    with httpx.Client(base_url=base, timeout=30) as client:
        for _ in range(20):  # warm up code paths and connections
            one_turn(client, "warmup", f"warm {time.perf_counter_ns()}", timer)
        out["turn 1"] = [one_turn(client, f"fresh-{i}", f"hello {i}", timer)[1] for i in range(fresh)]
        per_turn: dict[int, float] = {}
        for n in range(1, long_turns + 1):
            text = f"turn {n}: a short message about the todo app, decision {n % 7}"
            per_turn[n] = one_turn(client, "long", text, timer)[1]
        for first, last in windows:
            out[f"turn {first}"] = [per_turn[n] for n in range(first, last + 1)]
    return out


async def concurrent(base: str, sessions: int, turns_each: int, tag: str) -> tuple[float, float, int]:
    """(turns per second, p99 latency, turns) with `sessions` clients in parallel."""
    latencies: list[float] = []
    limits = httpx.Limits(max_connections=sessions, max_keepalive_connections=sessions)
    async with httpx.AsyncClient(base_url=base, timeout=60, limits=limits) as client:

        async def worker(i: int) -> None:
            for n in range(turns_each):
                started = time.perf_counter()
                r = await client.post("/v1/chat/completions", json=body(f"{tag} {i} {n}"),
                                      headers={"X-Hermes-Session-Id": f"{tag}-{i}"})
                latencies.append(time.perf_counter() - started)
                if r.status_code != 200:
                    raise SystemExit(f"turn failed: HTTP {r.status_code} {r.text[:300]}")

        await asyncio.gather(*(worker(i) for i in range(sessions)))  # warm-up round excluded below
        latencies.clear()
        started = time.perf_counter()
        await asyncio.gather(*(worker(i) for i in range(sessions)))
        wall = time.perf_counter() - started
    return len(latencies) / wall, percentiles(latencies)[2], len(latencies)


def first_request_tokens(base: str, fake: FakeModel) -> tuple[int, int, int]:
    """(tokens, system chars, tool-schema chars) of the first upstream request of a new session."""
    before = len(fake.chat_requests())
    with httpx.Client(base_url=base, timeout=30) as client:
        client.post("/v1/chat/completions", json=body("first request probe"),
                    headers={"X-Hermes-Session-Id": "probe"})
    request = fake.chat_requests()[before]
    system = "".join(m["content"] for m in request["messages"] if m["role"] == "system")
    tools = json.dumps(request.get("tools") or [])
    return (len(system) + len(tools) + 3) // 4, len(system), len(tools)


# ---------------------------------------------------------------------- report


def ms(x: float) -> str:
    return f"{x * 1000:.2f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small counts (smoke test)")
    args = parser.parse_args()
    fresh, long_turns = (30, 300) if args.quick else (200, 1199)
    windows = [(100, 199), (250, 299)] if args.quick else [(100, 199), (1000, 1199)]
    conc_turns = {8: 20, 32: 6} if args.quick else {8: 100, 32: 40}

    timer = FakeTimer()
    timer.install()
    rows: list[tuple[str, str, str, str]] = []
    with FakeModel(default=Text("ok")) as fake, tempfile.TemporaryDirectory() as tmp:
        colds = []
        for i in range(3):
            with hermes_serve(Path(tmp) / f"cold-{i}", fake) as (_, _, cold):
                colds.append(cold)
        with hermes_serve(Path(tmp) / "home", fake) as (proc, base, _):
            tokens, sys_chars, tool_chars = first_request_tokens(base, fake)
            conc = {n: asyncio.run(concurrent(base, n, t, f"c{n}")) for n, t in conc_turns.items()}
            seq = sequential(base, timer, fresh, long_turns, windows)
            rss, peak = rss_mb(proc.pid)

    original = {"turn 1": "≈180", "turn 100": "≈180", "turn 1000": "≈180"}
    for name, samples in seq.items():
        p50, p95, p99 = percentiles(samples)
        target = "p50 ≤ 3, p99 ≤ 15" if name == f"turn {windows[-1][0]}" else "—"
        rows.append((f"overhead {name} (ms p50/p95/p99, n={len(samples)})",
                     f"{ms(p50)} / {ms(p95)} / {ms(p99)}", target, original.get(name, "≈180 p50")))
    for n, (tps, p99, count) in conc.items():
        target = "≥ 300 turns/s" if n == 32 else "—"
        rows.append((f"{n} concurrent sessions (turns/s, p99 ms, n={count})",
                     f"{tps:.0f} turns/s, p99 {ms(p99)}", target, "≈9.5 turns/s"))
    rows.append(("server RSS after the run (MB, peak)", f"{rss:.0f} (peak {peak:.0f})", "≤ 150",
                 "≈200"))
    rows.append(("cold start to first /health (s, median of 3)",
                 f"{statistics.median(colds):.2f} ({', '.join(f'{c:.2f}' for c in colds)})",
                 "≤ 1.5", "—"))
    rows.append(("first upstream request (tokens; system + tool chars)",
                 f"{tokens} ({sys_chars} + {tool_chars})", "≤ 4,000", "≈12,900 (45,700 tool chars)"))
    widths = [max(len(r[i]) for r in [("figure", "Hermes", "target", "original"), *rows])
              for i in range(4)]
    line = " | ".join(h.ljust(w) for h, w in zip(("figure", "Hermes", "target", "original"), widths, strict=True))
    print(line)
    print("-|-".join("-" * w for w in widths))
    for r in rows:
        print(" | ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)))


if __name__ == "__main__":
    main()
