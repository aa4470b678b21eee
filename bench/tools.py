"""Benchmark of the built-in tools. One command, prints a table:

    .venv/bin/python bench/tools.py            # full run (~20 s)
    .venv/bin/python bench/tools.py --quick    # smaller counts

What it measures (issue #12):

* the size of the first request of a fresh session with the owner's full toolset, as the fake
  model received it (system prompt + user message + every tool schema; chars/4 tokens, the
  project's estimator), and each tool schema's share;
* per-tool-call overhead: the time `Toolset.call` (JSON parsing, argument validation, the
  thread hop for sync tools, rendering, secret redaction) adds beyond the tool function
  itself, p50 / p95 over N calls, for a no-op tool, read_file, search_files and terminal.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from hermes.agent.loop import TurnRequest  # noqa: E402
from hermes.config.settings import load_settings  # noqa: E402
from hermes.runtime import Runtime, build_runtime  # noqa: E402
from hermes.testing.fake_model import FakeModel, Text  # noqa: E402
from hermes.tools.registry import Tool, ToolContext, tool  # noqa: E402


@tool
def noop(text: str) -> str:
    """Return the text.

    Args:
        text: Anything.
    """
    return text


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def first_request(runtime: Runtime, fake: FakeModel) -> list[tuple[str, str]]:
    fake.enqueue(Text("hi"))
    await runtime.agent.run_turn(TurnRequest("Hello, what can you do?", session_id="bench"))
    body = fake.chat_requests()[0]
    total = len(json.dumps(body)) / 4
    tools = body.get("tools") or []
    schema_chars = sum(len(json.dumps(t)) for t in tools) / 4
    rows = [
        ("first request (owner, full toolset)", f"{total:,.0f} tokens"),
        ("  of which tool schemas", f"{schema_chars:,.0f} tokens ({len(tools)} tools)"),
        ("  of which system prompt", f"{len(body['messages'][0]['content']) / 4:,.0f} tokens"),
    ]
    for t in sorted(tools, key=lambda t: -len(json.dumps(t))):
        rows.append((f"    {t['function']['name']}", f"{len(json.dumps(t)) / 4:,.0f} tokens"))
    return rows


async def _direct(t: Tool, ctx: ToolContext, args: dict[str, Any]) -> Any:
    kwargs = dict(args)
    call_args = (ctx,) if t.takes_context else ()
    if t.is_async:
        return await t.func(*call_args, **kwargs)
    return t.func(*call_args, **kwargs)


async def overhead(runtime: Runtime, n: int, workdir: Path) -> list[tuple[str, str]]:
    toolset = runtime.agent.toolset.plus([noop])
    ctx = ToolContext(scope="default", session_id="bench", services=runtime.services)
    (workdir / "sample.py").write_text("".join(f"line {i} = {i}\n" for i in range(200)))
    cases = [
        ("noop", {"text": "x" * 200}, n),
        ("read_file", {"path": "sample.py", "limit": 100}, n),
        ("search_files", {"pattern": "line 1[0-9] ="}, n),
        ("terminal", {"command": "true"}, max(20, n // 20)),
    ]
    rows = []
    for name, args, count in cases:
        t = toolset.get(name)
        assert t is not None
        raw = json.dumps(args)
        via, direct = [], []
        for _ in range(count):
            start = time.perf_counter()
            outcome = await toolset.call(name, raw, ctx)
            via.append(time.perf_counter() - start)
            assert outcome.ok, outcome.text
            start = time.perf_counter()
            await _direct(t, ctx, args)
            direct.append(time.perf_counter() - start)
        d50, d95 = _pct(direct, 0.5), _pct(direct, 0.95)
        o50 = (_pct(via, 0.5) - d50) * 1000
        o95 = (_pct(via, 0.95) - d95) * 1000
        rows.append(
            (
                f"{name} (n={count})",
                f"tool {d50 * 1000:.3f} ms, overhead p50 {o50:.3f} ms / p95 {o95:.3f} ms",
            )
        )
    return rows


async def main(quick: bool) -> None:
    n = 200 if quick else 2000
    with tempfile.TemporaryDirectory() as tmp, FakeModel() as fake:
        home, workdir = Path(tmp) / "home", Path(tmp) / "work"
        workdir.mkdir()
        env = {
            "HERMES_HOME": str(home),
            "OPENAI_BASE_URL": fake.base_url,
            "HERMES_MODEL": "fake-model",
            "HERMES_WORKDIR": str(workdir),
            "PATH": os.environ.get("PATH", ""),
        }
        runtime = build_runtime(load_settings(env=env))
        try:
            rows = await first_request(runtime, fake)
            rows += await overhead(runtime, n, workdir)
        finally:
            await runtime.aclose()
    width = max(len(r[0]) for r in rows)
    print(f"{'measure':<{width}}  value")
    print(f"{'-' * width}  {'-' * 60}")
    for label, value in rows:
        print(f"{label:<{width}}  {value}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    asyncio.run(main(parser.parse_args().quick))
