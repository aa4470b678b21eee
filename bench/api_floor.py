"""The floor under `bench/api.py`'s turn overhead: the same client and fake model in front of
the least a server could do. One command, prints a line per window:

    .venv/bin/python bench/api_floor.py

The server here is uvicorn on uvloop with httptools (as `hermes serve` runs), one plain ASGI
function: it parses the request, appends the user message to its history (kept as encoded
JSON fragments, the way Hermes caches them), sends the whole history to the model over
Hermes' own keep-alive connection, and answers. No store, no framework, no tools, no system
prompt (so its requests are ~45 kB smaller than Hermes'). What it measures is the harness's
share of `bench/api.py`'s "overhead": the client, the fake's wake-ups, the loopback copies.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import aiohttp

sys.path.insert(0, str(Path(__file__).resolve().parent))
from api import ROOT, free_port, one_turn, percentiles  # noqa: E402
from instant_model import InstantModel  # noqa: E402

WINDOWS = ((100, 199), (1000, 1199))


def serve(model_url: str, port: int) -> None:
    sys.path.insert(0, str(ROOT / "src"))
    import uvicorn
    from yarl import URL

    from hermes.models.keepalive import KeepAliveClient

    origin = URL(model_url)
    path = origin.path.rstrip("/") + "/chat/completions"
    client: KeepAliveClient | None = None
    history: list[str] = []
    answer = json.dumps({"choices": [{"message": {"role": "assistant", "content": "ok"}}]})

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        nonlocal client
        if scope["type"] != "http":
            return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        if scope["path"] == "/v1/chat/completions":
            history.extend(json.dumps(m) for m in json.loads(body)["messages"])
            request = ('{"model":"fake-model","messages":[' + ",".join(history) + "]}").encode()
            if client is None:
                client = KeepAliveClient(
                    origin, headers={"Content-Type": "application/json"}, timeout=60
                )
            await client.request("POST", path, request)
            history.append('{"role":"assistant","content":"ok"}')
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [(b"content-type", b"application/json")],
            }
        )
        await send({"type": "http.response.body", "body": answer.encode()})

    uvicorn.run(
        app, host="127.0.0.1", port=port, loop="uvloop", http="httptools", log_level="warning"
    )


async def measure() -> dict[str, list[float]]:
    model = await InstantModel().start()
    port = free_port()
    server = subprocess.Popen(  # noqa: ASYNC220
        [sys.executable, __file__, "--serve", model.base_url, str(port)]
    )
    base = f"http://127.0.0.1:{port}"
    out: dict[str, list[float]] = {}
    try:
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=64)) as http:
            for _ in range(100):
                try:
                    async with http.get(f"{base}/health"):
                        break
                except aiohttp.ClientError:
                    await asyncio.sleep(0.05)
            overhead: dict[int, float] = {}
            for n in range(1, WINDOWS[-1][1] + 1):
                content = f"turn {n}: a short message about the todo app, decision {n % 7}"
                latency = await one_turn(http, base, "long", content)
                overhead[n] = latency - model.take(content)
            for lo, hi in WINDOWS:
                out[f"turn {lo}"] = [overhead[n] for n in range(lo, hi + 1)]
    finally:
        server.terminate()
        server.wait()
        await model.stop()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--serve", nargs=2, metavar=("MODEL_URL", "PORT"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(args.serve[0], int(args.serve[1]))
        return
    gc.freeze()  # the client as bench/api.py runs it
    gc.set_threshold(100_000, 50, 1_000)
    import uvloop

    for name, samples in uvloop.run(measure()).items():
        p50, p95, p99 = (x * 1e3 for x in percentiles(samples))
        print(f"floor overhead {name} (ms p50/p95/p99): {p50:.2f} / {p95:.2f} / {p99:.2f}")


if __name__ == "__main__":
    main()
