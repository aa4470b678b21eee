"""What tracing adds to a turn (issue 43): the same turns against a real `hermes serve`
(instant fake model, bench/instant_model.py) with tracing off, then on and exporting over
OTLP/HTTP to a loopback receiver in this process. Prints p50/p99 client latency of each.

    .venv/bin/python bench/tracing.py [--turns 300] [--sessions 30]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import aiohttp

sys.path.insert(0, str(Path(__file__).resolve().parent))
from api import hermes_serve, one_turn  # noqa: E402
from instant_model import InstantModel  # noqa: E402


class _Receiver(BaseHTTPRequestHandler):
    def do_POST(self) -> None:  # noqa: N802
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.server.batches += 1  # type: ignore[attr-defined]
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: object) -> None:
        return None


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000


async def _run(model: InstantModel, tmp: Path, name: str, turns: int, sessions: int) -> list[float]:
    latencies: list[float] = []
    async with (
        aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=60)) as http,
        hermes_serve(tmp / name, model.base_url, http) as (_, base, _),
    ):
        for i in range(20):  # warm-up
            await one_turn(http, base, f"warm-{i}", "hello")
        for i in range(turns):
            latencies.append(await one_turn(http, base, f"s-{i % sessions}", f"turn {i}"))
    return latencies


async def main(turns: int, sessions: int, rounds: int) -> None:
    model = await InstantModel().start()
    receiver = ThreadingHTTPServer(("127.0.0.1", 0), _Receiver)
    receiver.batches = 0  # type: ignore[attr-defined]
    threading.Thread(target=receiver.serve_forever, daemon=True).start()
    results: dict[str, list[float]] = {"off": [], "on (OTLP/HTTP, loopback)": []}
    endpoint = f"http://127.0.0.1:{receiver.server_port}"
    # alternating off/on/on/off/...: neither setting always runs first on a warming machine
    order = ["off", "on", "on", "off"] * max(1, rounds // 2)
    with tempfile.TemporaryDirectory() as tmp:
        for i, setting in enumerate(order[: 2 * rounds]):
            if setting == "off":
                os.environ.pop("OTEL_EXPORTER_OTLP_ENDPOINT", None)
                label = "off"
            else:
                os.environ["OTEL_EXPORTER_OTLP_ENDPOINT"] = endpoint
                label = "on (OTLP/HTTP, loopback)"
            (Path(tmp) / str(i)).mkdir()
            results[label] += await _run(model, Path(tmp) / str(i), setting, turns, sessions)
    receiver.shutdown()
    print(
        f"{rounds} rounds of each setting, alternating; {turns} turns over {sessions} sessions "
        "a round, client-observed latency (ms)"
    )
    for label, values in results.items():
        print(
            f"  tracing {label:<26} p50 {_pct(values, 0.5):6.2f}  p99 {_pct(values, 0.99):6.2f}"
            f"  mean {statistics.fmean(values) * 1000:6.2f}"
        )
    print(f"  export batches received: {receiver.batches}")  # type: ignore[attr-defined]


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=300)
    parser.add_argument("--sessions", type=int, default=30)
    parser.add_argument("--rounds", type=int, default=2, help="runs of each setting")
    args = parser.parse_args()
    asyncio.run(main(args.turns, args.sessions, args.rounds))
