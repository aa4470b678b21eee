"""Where a turn's time goes inside `hermes serve`: one long session, each phase timed. A table:

    .venv/bin/python bench/turn_timeline.py               # turns 100-199 and 1,000-1,199
    .venv/bin/python bench/turn_timeline.py --src OTHER/src   # another build (same layers)

The server and its instant fake model are the ones `bench/api.py` uses. A `sitecustomize`
module put on the server's path wraps its layers with clock reads (uvicorn's request parser
and response writer, the session's begin, context, the model call and its connection, the
store writes and the writer thread's share of them) and writes them out when the server
stops; the client reads the same clock (CLOCK_MONOTONIC across processes). Each phase is the
median over the window's turns of the time from one mark to the next; "client" is what the
client saw beyond the server's first byte in to last byte out, and "model call minus fake"
what the connection to the model cost beyond the fake's own time. The wrappers cost a few µs
each: compare builds with this tool, not with `bench/api.py`'s figures.
"""

from __future__ import annotations

import argparse
import asyncio
import bisect
import gc
import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import aiohttp

sys.path.insert(0, str(Path(__file__).resolve().parent))
from api import ROOT, body, embedding_cache, hermes_serve  # noqa: E402
from instant_model import InstantModel  # noqa: E402

PROBE = '''
"""Timestamps around the server's layers (bench/turn_timeline.py)."""
import atexit, json, os, time

from uvicorn.protocols.http import httptools_impl as _http

from hermes.agent import locks as _locks, loop as _loop
from hermes.models import keepalive as _keepalive, transport as _transport
from hermes.store import group_commit as _group

_rows, _now = [], {}
_clock = time.perf_counter


def _wrap(owner, name, mark):
    original = getattr(owner, name)

    async def timed(*args, **kwargs):
        _now.setdefault(mark + "0", _clock())
        try:
            return await original(*args, **kwargs)
        finally:
            _now[mark + "1"] = _clock()

    setattr(owner, name, timed)


_begin = _http.HttpToolsProtocol.on_message_begin


def _message_begin(self):
    _now.clear()
    _now["in"] = _clock()
    return _begin(self)


_send = _http.RequestResponseCycle.send


async def _response(self, message):
    await _send(self, message)
    if message["type"] == "http.response.body" and not message.get("more_body"):
        if "in" in _now:
            _now["out"] = _clock()
            _rows.append(dict(_now))


_outcomes = _group.GroupCommit._outcomes


def _writer(self, batch):
    mark = "pw" if "b1" in _now else "bw"
    _now[mark + "0"] = _clock()
    try:
        return _outcomes(self, batch)
    finally:
        _now[mark + "1"] = _clock()


_http.HttpToolsProtocol.on_message_begin = _message_begin
_http.RequestResponseCycle.send = _response
_group.GroupCommit._outcomes = _writer
_wrap(_loop.Agent, "run_turn", "t")
_wrap(_locks.SessionLocks, "_try_begin", "b")
_wrap(_loop.Agent, "_build_context", "c")
_wrap(_transport.HttpTransport, "post", "h")
_wrap(_keepalive._Connection, "send", "m")
_wrap(_loop.Agent, "_persist", "p")
atexit.register(lambda: open(os.environ["HERMES_TIMELINE"], "w").write(json.dumps(_rows)))
'''

MARKS = [
    ("in", "t0", "request in → turn starts (HTTP, ASGI, handler)"),
    ("t0", "b0", "turn starts → session begin"),
    ("b0", "b1", "session begin (lease + session read)"),
    ("b1", "c0", "→ context"),
    ("c0", "c1", "context (system prompt, history, recall)"),
    ("c1", "h0", "→ model request (messages, encode)"),
    ("h0", "m0", "→ connection send"),
    ("m0", "m1", "model call (connection)"),
    ("m1", "h1", "→ answer parsed"),
    ("h1", "p0", "→ persist"),
    ("p0", "p1", "persist (messages + lease)"),
    ("p1", "t1", "→ turn ends (spans, usage, after-turn tasks)"),
    ("t1", "out", "turn ends → response written"),
]
WRITER = [
    ("b0", "bw0", "begin: hop to the writer thread"),
    ("bw0", "bw1", "begin: on the writer thread"),
    ("bw1", "b1", "begin: hop back"),
    ("p0", "pw0", "persist: hop to the writer thread"),
    ("pw0", "pw1", "persist: on the writer thread"),
    ("pw1", "p1", "persist: hop back"),
]


async def one_turn(http: aiohttp.ClientSession, base: str, content: str) -> tuple[float, float]:
    started = time.perf_counter()
    async with http.post(
        f"{base}/v1/chat/completions",
        data=body(content),
        headers={"X-Hermes-Session-Id": "long", "Content-Type": "application/json"},
    ) as r:
        await r.read()
        if r.status != 200:
            raise SystemExit(f"turn failed: HTTP {r.status}")
    return started, time.perf_counter()


async def measure(src: Path, turns: int) -> tuple[dict[int, tuple[float, float, float]], list]:
    model = await InstantModel().start()
    seen: dict[int, tuple[float, float, float]] = {}
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        probe_dir = tmp / "probe"
        probe_dir.mkdir()
        (probe_dir / "sitecustomize.py").write_text(PROBE)
        out = tmp / "timeline.json"
        home = tmp / "home"
        shutil.copytree(embedding_cache(src, tmp), home / "cache" / "embeddings")
        env = {"PYTHONPATH": f"{src}:{probe_dir}", "HERMES_TIMELINE": str(out)}
        async with aiohttp.ClientSession() as http:
            async with hermes_serve(home, model.base_url, http, src, env) as (_, base, _):
                for n in range(1, turns + 1):
                    content = f"turn {n}: a short message about the todo app, decision {n % 7}"
                    started, ended = await one_turn(http, base, content)
                    seen[n] = (started, ended, model.take(content))
        await model.stop()
        rows = json.loads(out.read_text())
    return seen, rows


def report(seen: dict[int, tuple[float, float, float]], rows: list, windows: list) -> None:
    starts = [r["in"] for r in rows]
    columns: dict[str, dict[str, list[float]]] = {}
    for lo, hi in windows:
        name = f"turns {lo}-{hi}"
        phases: dict[str, list[float]] = {}
        for n in range(lo, hi + 1):
            started, ended, fake = seen[n]
            i = bisect.bisect_left(starts, started)
            if i == len(rows) or not started <= rows[i]["in"] <= ended:
                continue
            row = rows[i]
            phases.setdefault("overhead (client-observed minus fake)", []).append(
                ended - started - fake
            )
            phases.setdefault("client, beyond the server", []).append(
                (ended - started) - (row["out"] - row["in"])
            )
            for a, b, label in [*MARKS, *WRITER]:
                if a in row and b in row:
                    phases.setdefault(label, []).append(row[b] - row[a])
            if "m0" in row and "m1" in row:
                phases.setdefault("model call minus fake", []).append(row["m1"] - row["m0"] - fake)
        columns[name] = phases
    labels: list[str] = []
    for phases in columns.values():
        labels += [label for label in phases if label not in labels]
    width = max(len(label) for label in labels)
    print(f"{'phase (µs, median)':<{width}} | " + " | ".join(f"{c:>15}" for c in columns))
    print("-" * width + "-|-" + "-|-".join("-" * 15 for _ in columns))
    for label in labels:
        cells = []
        for phases, (lo, hi) in zip(columns.values(), windows, strict=True):
            values = phases.get(label)
            if not values:
                cells.append(f"{'—':>15}")
                continue
            # a phase only some turns went through (a write the writer thread took) says so
            some = f" ({len(values)} turns)" if len(values) < (hi - lo + 1) * 0.9 else ""
            cells.append(f"{f'{statistics.median(values) * 1e6:.0f}{some}':>15}")
        print(f"{label:<{width}} | " + " | ".join(cells))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--src", type=Path, default=ROOT / "src", help="the build to time")
    parser.add_argument("--quick", action="store_true", help="turns 100-199 only")
    args = parser.parse_args()
    windows = [(100, 199)] if args.quick else [(100, 199), (1000, 1199)]
    gc.freeze()  # as bench/api.py: the client's collections stay out of the figures
    gc.set_threshold(100_000, 50, 1_000)
    try:
        import uvloop
    except ImportError:
        seen, rows = asyncio.run(measure(args.src, windows[-1][1]))
    else:
        seen, rows = uvloop.run(measure(args.src, windows[-1][1]))
    report(seen, rows, windows)


if __name__ == "__main__":
    main()
