"""Added turn latency with each external memory provider, against none (issue 38).

    python bench/providers.py [--turns 40] [--only mem0,honcho,supermemory]

Each provider runs for real (mem0: the library, qdrant local, MiniLM, extraction by the fake
model; Honcho and Supermemory: their SDKs against the loopback stand-ins of the tests), plus a
Honcho that never answers. Turns go to the fake model; the table is the turn's wall time,
p50/p99, and what each provider adds over no provider: it should be ~0, since the turn only
reads a recall prefetched earlier and the provider's calls run on its own worker (Mem0's
in its own process). Measured in steady state: after two warm-up turns the bench waits for
the provider to have started (imports, Mem0's embedding model) before timing turns.
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

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.memory.providers import honcho_api, supermemory_api  # noqa: E402

from hermes.agent.loop import TurnRequest  # noqa: E402
from hermes.config.settings import load_settings  # noqa: E402
from hermes.runtime import build_runtime  # noqa: E402
from hermes.testing.fake_model import FakeModel, Text  # noqa: E402


def _reply(body: dict[str, Any]) -> Text:
    if body.get("response_format", {}).get("type") == "json_object":
        return Text(json.dumps({"memory": [{"text": "The user likes benchmarks"}]}))
    return Text("ok")


async def _provider_started(runtime: Any) -> None:
    for layer in runtime.agent.memory.providers:
        worker = getattr(layer, "worker", None)
        if worker is not None:
            await asyncio.to_thread(worker.wait_idle, 180)


CPU: dict[str, float] = {}  # this process's CPU seconds per timed turn, by run name
RUN_NAMES = {"honcho (hanging)": "hung"}  # row -> run name, where they differ


async def _run(name: str, memory: dict[str, Any], env: dict[str, str], turns: int) -> list[float]:
    home = Path(tempfile.mkdtemp(prefix=f"bench-{name}-"))
    os.environ["HERMES_HOME"] = str(home)
    for key in ("HONCHO_BASE_URL", "HONCHO_API_KEY", "SUPERMEMORY_BASE_URL", "SUPERMEMORY_API_KEY"):
        os.environ.pop(key, None)
    os.environ.update(env)
    (home / "config.yaml").write_text(yaml.safe_dump({"memory": memory}))
    runtime = build_runtime(load_settings(home))
    took = []
    cpu = 0.0
    try:
        for n in range(turns + 2):
            if n == 2:
                cpu = time.process_time()
            started = time.perf_counter()
            await runtime.agent.run_turn(
                TurnRequest(f"turn {n}: I like benchmarks", scope="bench", session_id="b")
            )
            if n >= 2:  # the first turns warm the process (imports, first connections)
                took.append(time.perf_counter() - started)
            elif n == 1:  # steady state: the provider has started (Mem0 loads its model)
                await _provider_started(runtime)
            await asyncio.sleep(0.02)  # a user's think time: the provider works meanwhile
        CPU[name] = (time.process_time() - cpu) / turns
    finally:
        await runtime.aclose()
    return took


async def _honcho_rows(results: dict[str, list[float]], base: dict[str, Any], turns: int) -> None:
    async with honcho_api.HonchoAPI() as api:
        env = {"HONCHO_BASE_URL": api.base_url, "HONCHO_API_KEY": honcho_api.KEY}
        results["honcho"] = await _run("honcho", {**base, "provider": "honcho"}, env, turns)
        api.mode = "hang"
        hung = {**base, "provider": "honcho", "provider_timeout": 1}
        results["honcho (hanging)"] = await _run("hung", hung, env, turns)
        api.release()


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=40)
    parser.add_argument(
        "--only",
        default="",
        help="comma-separated rows to run (none,mem0,honcho,supermemory); default: all",
    )
    args = parser.parse_args()
    only = {name for name in args.only.split(",") if name}

    def wanted(name: str) -> bool:
        return not only or name in only or name == "none"

    os.environ["HERMES_EMBEDDINGS"] = "off"
    results: dict[str, list[float]] = {}
    with FakeModel(default=_reply) as fake:
        os.environ["OPENAI_BASE_URL"] = fake.base_url
        os.environ["HERMES_MODEL"] = "fake-model"
        base = {"review_interval": 0}
        results["none"] = await _run("none", base, {}, args.turns)
        if wanted("mem0"):
            results["mem0"] = await _run("mem0", {**base, "provider": "mem0"}, {}, args.turns)
        if wanted("honcho"):
            await _honcho_rows(results, base, args.turns)
        if wanted("supermemory"):
            async with supermemory_api.SupermemoryAPI() as api:
                env = {
                    "SUPERMEMORY_BASE_URL": api.base_url,
                    "SUPERMEMORY_API_KEY": supermemory_api.KEY,
                }
                sm = {**base, "provider": "supermemory"}
                results["supermemory"] = await _run("supermemory", sm, env, args.turns)

    def pct(values: list[float], q: float) -> float:
        ordered = sorted(values)
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000

    p50_none, p99_none = pct(results["none"], 0.5), pct(results["none"], 0.99)
    cpu_none = CPU["none"]
    print(
        f"{'provider':<18} {'p50 ms':>8} {'p99 ms':>8} {'+p50 ms':>8} {'+p99 ms':>8} "
        f"{'+cpu ms/turn':>13}"
    )
    for name, values in results.items():
        p50, p99 = pct(values, 0.5), pct(values, 0.99)
        extra_cpu = (CPU[RUN_NAMES.get(name, name)] - cpu_none) * 1000
        print(
            f"{name:<18} {p50:8.2f} {p99:8.2f} {p50 - p50_none:+8.2f} {p99 - p99_none:+8.2f} "
            f"{extra_cpu:+13.2f}"
        )
    print(
        "(+cpu ms/turn: CPU time of this process, the server's, per turn beyond none: the "
        "provider's work done in the server's interpreter)"
    )
    print(
        f"({args.turns} turns each; mean with none {statistics.mean(results['none']) * 1000:.2f} ms)"
    )


if __name__ == "__main__":
    asyncio.run(main())
