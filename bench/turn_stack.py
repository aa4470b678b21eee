"""CPU per request of the ASGI stack around the turn routes, through the fast lane and through
FastAPI's whole stack, in one process and one app (`app.fast_lane` switched between batches).

    .venv/bin/python bench/turn_stack.py [--requests 4000] [--batches 6] [--src OTHER/src]

No socket and no model: the app is called as uvicorn calls it, with the body in one message,
and each request is refused before the model would be called, so what is timed is the stack
and the route's first steps (auth, body, parse), the part the lane changes:

* `401`: no bearer on a server with a key (every middleware, the route, its error handler);
* `400`: a bearer and a body that is not JSON (the body read through the hygiene limit too);
* `404`: a well-formed turn for an unknown model (the parse of a real chat body).

Batches alternate (lane, stack, stack, lane, …); medians of µs of CPU per request.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
KEY = "bench-key-0123456789abcdef"

CASES: dict[str, tuple[list[tuple[bytes, bytes]], bytes]] = {
    "401": ([], b"{}"),
    "400": ([(b"authorization", b"Bearer " + KEY.encode())], b"{nope"),
    "404": (
        [(b"authorization", b"Bearer " + KEY.encode())],
        json.dumps(
            {"model": "gpt-9", "messages": [{"role": "user", "content": "hello " * 40}]}
        ).encode(),
    ),
}


def scope_for(headers: list[tuple[bytes, bytes]], body: bytes) -> dict[str, Any]:
    all_headers = [
        (b"host", b"127.0.0.1"),
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        *headers,
    ]
    return {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": "2.4"},
        "http_version": "1.1",
        "server": ("127.0.0.1", 8000),
        "client": ("127.0.0.1", 50000),
        "scheme": "http",
        "method": "POST",
        "root_path": "",
        "path": "/v1/chat/completions",
        "raw_path": b"/v1/chat/completions",
        "query_string": b"",
        "headers": all_headers,
        "state": {},
    }


async def batch(app: Any, case: str, n: int) -> float:
    """µs of CPU per request over `n` requests of `case`."""
    headers, body = CASES[case]
    statuses: list[int] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            statuses.append(message["status"])

    started = time.process_time()
    for _ in range(n):
        await app(scope_for(headers, body), receive, send)
    spent = time.process_time() - started
    assert set(statuses) == {int(case)}, (case, set(statuses))
    return spent / n * 1e6


async def run(requests: int, batches: int) -> None:
    os.environ["HERMES_HOME"] = tempfile.mkdtemp(prefix="hermes-stack-")
    os.environ["HERMES_API_KEY"] = KEY
    from hermes.config.settings import load_settings
    from hermes.runtime import build_runtime
    from hermes.server.app import create_app

    settings = load_settings()
    settings.search.embeddings = "off"
    app = create_app(build_runtime(settings))
    logging_off()
    results: dict[tuple[str, bool], list[float]] = {}
    async with app.router.lifespan_context(app):
        for case in CASES:
            app.fast_lane = True
            await batch(app, case, 200)  # warm-up: both stacks built, caches filled
            app.fast_lane = False
            await batch(app, case, 200)
            for i in range(batches):
                order = (True, False) if i % 2 == 0 else (False, True)
                for lane in order:
                    app.fast_lane = lane
                    results.setdefault((case, lane), []).append(await batch(app, case, requests))
    print(f"µs of CPU per request (median of {batches} batches of {requests})")
    print("case | fast lane | full stack | lane vs stack")
    for case in CASES:
        lane = statistics.median(results[(case, True)])
        stack = statistics.median(results[(case, False)])
        print(f"{case}  | {lane:9.1f} | {stack:10.1f} | {(lane - stack) / stack:+.0%}")


def logging_off() -> None:
    """Refusals are logged at info; the handlers' cost is not the stack's."""
    import logging

    logging.disable(logging.INFO)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--requests", type=int, default=4000)
    parser.add_argument("--batches", type=int, default=6)
    parser.add_argument("--src", type=Path, default=ROOT / "src", help="the build to measure")
    args = parser.parse_args()
    sys.path.insert(0, str(args.src))
    asyncio.run(run(args.requests, args.batches))


if __name__ == "__main__":
    main()
