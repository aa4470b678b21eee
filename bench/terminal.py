"""Terminal chat benchmark: what drawing an answer and the undo bookkeeping cost per turn.

Run:  .venv/bin/python bench/terminal.py [--chars 6000] [--chunk 6]

- rendering: a Markdown answer (prose, a list, code, a table) streamed in `--chunk`-char
  deltas into the rich and the plain view; and one redraw of the rich view at several answer
  lengths, which a slow stream pays at most 20 times a second (the CPU share shown);
- undo bookkeeping: the extra read every turn makes (`hidden_ranges`) on a SQLite store with
  and without hidden ranges, and `undo_last_exchange` on a 2,000-message session.
"""

from __future__ import annotations

import argparse
import io
import statistics
import tempfile
import time
from pathlib import Path

from rich.console import Console

from hermes.agent.undo import undo_last_exchange
from hermes.cli.repl.render import MarkdownStream, TurnView
from hermes.store import NewMessage, open_store

BLOCK = (
    "Here is **the plan**, step by step:\n\n- read the `config.yaml`\n- check the port\n\n"
    "```python\ndef port(settings):\n    return settings.server.port\n```\n\n"
    "| step | time |\n|---|---|\n| read | 1 s |\n| check | 2 s |\n\n"
)


def _answer(chars: int) -> str:
    return (BLOCK * (chars // len(BLOCK) + 1))[:chars]


def _stream(chars: int, chunk: int, rich: bool) -> tuple[float, int]:
    """A whole answer streamed at once (deltas faster than the 50 ms redraw)."""
    text = _answer(chars)
    console = Console(file=io.StringIO(), force_terminal=rich, width=100)
    view = TurnView(console, rich=rich)
    started = time.perf_counter()
    deltas = 0
    for i in range(0, len(text), chunk):
        view.on_delta(text[i : i + chunk])
        deltas += 1
    view.finish(text)
    return time.perf_counter() - started, deltas


def _redraw(chars: int) -> float:
    """One re-render of an answer `chars` long: what a slow stream pays every 50 ms."""
    console = Console(file=io.StringIO(), force_terminal=True, width=100)
    stream = MarkdownStream(console)
    stream.feed(_answer(chars))  # finished blocks are printed once; the tail is redrawn
    times = []
    for _ in range(20):
        t = time.perf_counter()
        stream._render(final=False)
        times.append(time.perf_counter() - t)
    stream.close()
    return statistics.median(times)


def _store_costs() -> list[tuple[str, float]]:
    with tempfile.TemporaryDirectory() as tmp:
        store = open_store(f"sqlite:///{Path(tmp) / 'state.db'}")
        store.ensure_session("default", "s", source="cli")
        pairs = [NewMessage("user", f"q{i}") for i in range(1000)]
        batch = [m for i, q in enumerate(pairs) for m in (q, NewMessage("assistant", f"a{i}"))]
        store.append_messages("default", "s", batch)

        def per_call(fn, n: int = 2000) -> float:  # type: ignore[no-untyped-def]
            times = []
            for _ in range(n):
                t = time.perf_counter()
                fn()
                times.append(time.perf_counter() - t)
            return statistics.median(times) * 1e6

        none = per_call(lambda: store.hidden_ranges("default", "s"))
        t = time.perf_counter()
        for _ in range(20):
            undo_last_exchange(store, "default", "s")
        undo = (time.perf_counter() - t) / 20 * 1e6
        some = per_call(lambda: store.hidden_ranges("default", "s"))
        store.close()
    return [
        ("hidden_ranges, none hidden (µs, median)", none),
        ("hidden_ranges, 20 ranges (µs, median)", some),
        ("undo_last_exchange, 2,000 messages (µs)", undo),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chars", type=int, default=6000)
    parser.add_argument("--chunk", type=int, default=6)
    args = parser.parse_args()
    rows: list[tuple[str, str]] = []
    for rich in (True, False):
        total, deltas = _stream(args.chars, args.chunk, rich)
        name = "rich Markdown" if rich else "plain"
        rows.append((f"{name}: {args.chars:,} chars, {deltas:,} deltas", f"{total * 1000:.1f} ms"))
    for chars in (1_000, 3_000, args.chars):
        cost = _redraw(chars)
        rows.append(
            (
                f"one redraw at {chars:,} chars (CPU share at 20/s)",
                f"{cost * 1000:.1f} ms ({cost * 20:.0%})",
            )
        )
    rows += [(label, f"{value:.0f}") for label, value in _store_costs()]
    width = max(len(label) for label, _ in rows)
    print(f"{'measure':<{width}}  value")
    for label, value in rows:
        print(f"{label:<{width}}  {value}")


if __name__ == "__main__":
    main()
