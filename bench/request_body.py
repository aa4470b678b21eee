"""CPU of building one model request deep into a session: the image check and the body's JSON.

    .venv/bin/python bench/request_body.py [--turns 1000] [--keep-freed-memory]

A session's history as the agent holds it (frozen messages, a turn appending a question and
its answer), a 4 kB system prompt and 40 tool schemas; each turn runs `has_images` and
`encode_chat_body` on the next message list, as `Agent._call_model` and the model client do.
Prints the median µs of each over the last 300 turns, and the body's size.
`--keep-freed-memory` tunes the C allocator as `hermes serve` does.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from hermes.agent.images import has_images  # noqa: E402
from hermes.models.wire import encode_chat_body, freeze  # noqa: E402

TOOLS = [
    freeze(
        {
            "type": "function",
            "function": {
                "name": f"tool_{i}",
                "description": "does one thing well " * 30,
                "parameters": {"type": "object", "properties": {"arg": {"type": "string"}}},
            },
        }
    )
    for i in range(40)
]
SYSTEM = {"role": "system", "content": "You are Hermes. " * 280}
PARAMS = {"model": "fake-model", "temperature": 0.7}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=1000, help="turns already in the session")
    parser.add_argument("--keep-freed-memory", action="store_true")
    args = parser.parse_args()
    if args.keep_freed_memory:
        from hermes.allocator import keep_freed_memory

        if not keep_freed_memory():
            raise SystemExit("the allocator could not be tuned here (glibc on Linux only)")
    history = []
    checks: list[float] = []
    bodies: list[float] = []
    size = 0
    for n in range(1, args.turns + 301):
        question = f"turn {n}: a short message about the todo app, decision {n % 7}"
        messages = [SYSTEM, *history, {"role": "user", "content": question}]
        started = time.perf_counter()
        has_images(messages)
        checked = time.perf_counter()
        size = len(encode_chat_body(PARAMS, messages, TOOLS))
        done = time.perf_counter()
        if n > args.turns:
            checks.append(checked - started)
            bodies.append(done - checked)
        history += [
            freeze({"role": "user", "content": question}),
            freeze({"role": "assistant", "content": "ok"}),
        ]
    print(f"{'turn':>6} | {'image check':>11} | {'body JSON':>9} | {'body':>8}")
    print(
        f"{args.turns:>6} | {statistics.median(checks) * 1e6:>8.1f} µs | "
        f"{statistics.median(bodies) * 1e6:>6.1f} µs | {size // 1000:>5} kB"
    )


if __name__ == "__main__":
    main()
