"""CPU of one model call on the event loop: Hermes' keep-alive client against aiohttp.

    .venv/bin/python bench/upstream_client.py [--requests 2000]

`HttpTransport.post` to the instant fake model (bench/instant_model.py, in a process of its
own so its work is not counted), on uvloop as `hermes serve` runs; each way in turn on the same
bodies; the CPU time of this thread per call, the median of three batches.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from hermes.models.transport import HttpTransport  # noqa: E402

SIZES = (3_000, 40_000, 160_000)


def serve_model() -> None:
    import uvloop
    from instant_model import InstantModel

    async def main() -> None:
        model = await InstantModel().start()
        print(model.base_url, flush=True)
        await asyncio.Event().wait()

    uvloop.run(main())


def body_of(size: int) -> bytes:
    turn = {"role": "user", "content": "a short message about the todo app " * 3}
    messages = [turn] * max(1, size // 130) + [{"role": "user", "content": "tag"}]
    return json.dumps({"model": "fake-model", "messages": messages}).encode()


async def cpu_per_call(transport: HttpTransport, body: bytes, n: int) -> float:
    started = time.thread_time()
    for _ in range(n):
        await transport.post(body)
    return (time.thread_time() - started) / n


async def measure(base_url: str, requests: int) -> None:
    def transport(lean: bool) -> HttpTransport:
        t = HttpTransport(base_url=base_url, api_key="k", timeout=30, display_url=base_url)
        if not lean:
            t._lean = None  # the general client, as for TLS or a proxy
        return t

    ways = {"keep-alive (ours)": transport(True), "aiohttp": transport(False)}
    print(f"{'body':>8} | " + " | ".join(f"{name:>20}" for name in ways) + " | ours vs aiohttp")
    for size in SIZES:
        body = body_of(size)
        samples: dict[str, list[float]] = {name: [] for name in ways}
        for t in ways.values():
            await cpu_per_call(t, body, 100)  # connections open, caches warm
        for _ in range(3):
            for name, t in ways.items():
                samples[name].append(await cpu_per_call(t, body, requests))
        us = {name: statistics.median(s) * 1e6 for name, s in samples.items()}
        ours, theirs = us["keep-alive (ours)"], us["aiohttp"]
        cells = " | ".join(f"{v:>17.0f} µs" for v in us.values())
        print(f"{len(body) // 1000:>5} kB | {cells} | {ours / theirs - 1:+.0%}")
    for t in ways.values():
        await t.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=2000, help="calls per batch")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve_model()
        return
    model = subprocess.Popen(
        [sys.executable, __file__, "--serve"], stdout=subprocess.PIPE, text=True
    )
    try:
        assert model.stdout is not None
        base_url = model.stdout.readline().strip()
        import uvloop

        uvloop.run(measure(base_url, args.requests))
    finally:
        model.kill()


if __name__ == "__main__":
    main()
