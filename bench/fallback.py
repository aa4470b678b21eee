"""Fallback models: how long a turn's model call takes to reach the first token of the next
model when the first one fails, by kind of failure, side by side with calling the second model
directly. One command, a table:

    .venv/bin/python bench/fallback.py           # 20 calls per row
    .venv/bin/python bench/fallback.py --quick   # 5

The failing endpoint answers at once (503, 429) or is a closed port (unreachable); a model that
hangs costs `model.timeout` before the switch, which is a setting, not a cost of the switch.
The failing rows try the failing model on every call (cooldown 0); the last row is a call
during the cooldown, which goes straight to the second model. Clients are warm (connections
open), as in a running server.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import socket
import statistics
import time

from hermes.models.client import OpenAICompatClient
from hermes.models.fallback import Candidate, Cooldowns, FallbackClient
from hermes.testing.fake_model import Error, FakeModel, Text


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def client(base_url: str, name: str) -> OpenAICompatClient:
    return OpenAICompatClient(base_url=base_url, api_key="bench", model=name, max_retries=0)


async def first_token(model: FallbackClient | OpenAICompatClient) -> float:
    got = asyncio.get_running_loop().create_future()
    began = time.perf_counter()

    def on_delta(text: str) -> None:
        if not got.done():
            got.set_result(time.perf_counter() - began)

    await model.complete([{"role": "user", "content": "hi"}], on_delta=on_delta)
    return float(got.result())


async def row(kind: str, calls: int, primary: FakeModel, backup: FakeModel) -> list[float]:
    """`calls` first-token times through warm clients (connections open, SDK loaded)."""
    first_url = (
        f"http://127.0.0.1:{closed_port()}/v1" if kind == "unreachable" else primary.base_url
    )
    chain = [
        Candidate(client(first_url, "main"), "main"),
        Candidate(client(backup.base_url, "backup"), "backup"),
    ]
    cooldowns = Cooldowns(None)
    target: FallbackClient | OpenAICompatClient = FallbackClient(chain, cooldowns, 0.0)
    if kind == "direct":
        target = chain[1].client
    times = []
    for i in range(calls + 2):  # two warm-up calls
        backup.enqueue(Text("the backup answers"))
        if kind in ("503", "429"):
            primary.enqueue(Error(int(kind), "failing"))
        if kind == "resting":
            cooldowns.rest("main", 600.0)
        took = await first_token(target)
        if i >= 2:
            times.append(took)
    for candidate in chain:
        await candidate.client.aclose()
    return times


async def main(calls: int) -> None:
    with FakeModel() as primary, FakeModel() as backup:
        print(f"{'failure':<22} {'p50 ms':>8} {'p95 ms':>8}")
        for kind, label in (
            ("direct", "none (backup direct)"),
            ("503", "503 from the first"),
            ("429", "429 from the first"),
            ("unreachable", "first unreachable"),
            ("resting", "first resting"),
        ):
            times = sorted(await row(kind, calls, primary, backup))
            p95 = times[min(len(times) - 1, int(0.95 * len(times)))]
            print(f"{label:<22} {statistics.median(times) * 1000:>8.1f} {p95 * 1000:>8.1f}")


if __name__ == "__main__":
    logging.disable(logging.WARNING)
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    asyncio.run(main(5 if args.quick else 20))
