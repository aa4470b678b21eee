"""CPU of one model call on the event loop: Hermes' keep-alive client against the general ones.

    .venv/bin/python bench/upstream_client.py [--requests 2000]

`OpenAICompatClient.complete` against the instant fake model (bench/instant_model.py, in a
process of its own so its work is not counted), on uvloop as `hermes serve` runs: plain calls
over our connections or aiohttp, streamed calls over our connections or the openai SDK (what
TLS endpoints and proxies use). Each way in turn on the same messages; the CPU time of this
thread per call, the median of three batches. `--keep-freed-memory` tunes the C allocator as
`hermes serve` does (without it, a large request's blocks are faulted in again at each call).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from hermes.models.client import OpenAICompatClient  # noqa: E402
from hermes.models.wire import freeze  # noqa: E402

SIZES = (3_000, 40_000, 160_000, 600_000)


def serve_model() -> None:
    import uvloop
    from instant_model import InstantModel

    async def main() -> None:
        model = await InstantModel().start()
        print(model.base_url, flush=True)
        await asyncio.Event().wait()

    uvloop.run(main())


def messages_of(size: int) -> list[dict[str, Any]]:
    """A session's history as the agent holds it (frozen: each message's JSON encoded once,
    as in `hermes serve`), then the new user message."""
    turn = {"role": "user", "content": "a short message about the todo app " * 3}
    history = [freeze(dict(turn)) for _ in range(max(1, size // 130))]
    return [*history, {"role": "user", "content": "tag"}]


async def cpu_per_call(client: OpenAICompatClient, messages: list, stream: bool, n: int) -> float:
    on_delta = (lambda _text: None) if stream else None
    started = time.thread_time()
    for _ in range(n):
        await client.complete(messages, on_delta=on_delta)
    return (time.thread_time() - started) / n


def client_for(base_url: str, ours: bool) -> OpenAICompatClient:
    client = OpenAICompatClient(base_url=base_url, api_key="k", model="fake-model")
    if not ours:
        client._http_transport()._lean = None  # the general clients, as for TLS or a proxy
    return client


async def measure(base_url: str, requests: int) -> None:
    ours, general = client_for(base_url, True), client_for(base_url, False)
    print(f"{'call':>8} | {'body':>6} | {'ours':>9} | {'general':>9} | ours vs general")
    for stream, name in ((False, "plain"), (True, "streamed")):
        for size in SIZES:
            messages = messages_of(size)
            samples: dict[bool, list[float]] = {True: [], False: []}
            for client in (ours, general):
                await cpu_per_call(client, messages, stream, 100)  # connections, caches
            for _ in range(3):
                for is_ours, client in ((True, ours), (False, general)):
                    samples[is_ours].append(await cpu_per_call(client, messages, stream, requests))
            a, b = (statistics.median(samples[k]) * 1e6 for k in (True, False))
            print(
                f"{name:>8} | {size // 1000:>3} kB | {a:>6.0f} µs | {b:>6.0f} µs | {a / b - 1:+.0%}"
            )
    print("general: aiohttp for plain calls, the openai SDK for streamed ones")
    await ours.aclose()
    await general.aclose()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=2000, help="calls per batch")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument(
        "--keep-freed-memory",
        action="store_true",
        help="tune glibc's allocator as `hermes serve` does (hermes.allocator); without it, "
        "as it was before",
    )
    args = parser.parse_args()
    if args.serve:
        serve_model()
        return
    if args.keep_freed_memory:
        from hermes.allocator import keep_freed_memory

        if not keep_freed_memory():
            raise SystemExit("the allocator could not be tuned here (glibc on Linux only)")
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
