"""Live answers through the Telegram stand-in: what a person in the chat sees while a model
streams its answer, with `gateway.streaming` on (the default) and off. One command, a table:

    .venv/bin/python bench/gateway_live.py           # 4 answers per row, about a minute
    .venv/bin/python bench/gateway_live.py --quick   # 2 answers per row

The fake model streams each answer in 8-character chunks at a steady rate (`--seconds` for the
whole answer, `--chars` long), as a model writing about 50 tokens a second does. Per row:
time from the message to the first visible text, to the whole answer visible, edits and
messages per answer, and whether the chat ends up showing exactly the non-streamed answer.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

# the repository root, for the Telegram stand-in in tests/standins
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from tests.standins.telegram_api import TelegramBotAPI  # noqa: E402

from hermes.config.settings import load_settings  # noqa: E402
from hermes.gateway.platforms.telegram_format import split_text, to_html  # noqa: E402
from hermes.gateway.runner import Gateway  # noqa: E402
from hermes.runtime import build_runtime  # noqa: E402
from hermes.testing.fake_model import FakeModel, Text  # noqa: E402

OWNER = 42


def answer_text(chars: int) -> str:
    words = "The tide rises twice a day, pulled by the moon and, less so, by the sun. "
    return (words * (chars // len(words) + 1))[:chars].rstrip()


async def one_row(streaming: bool, answers: int, chars: int, seconds: float) -> dict[str, float]:
    home = Path(tempfile.mkdtemp(prefix="hermes-bench-live-"))
    fake = FakeModel().start()
    async with TelegramBotAPI() as tg:
        os.environ.update(
            {
                "HERMES_HOME": str(home),
                "OPENAI_BASE_URL": fake.base_url,
                "OPENAI_API_KEY": "bench",
                "HERMES_MODEL": "bench",
                "HERMES_EMBEDDINGS": "off",
                "TELEGRAM_BOT_TOKEN": tg.state.token,
                "TELEGRAM_API_BASE": tg.base_url,
                "TELEGRAM_ALLOWED_USERS": str(OWNER),
                "HERMES_GATEWAY_OWNER": f"telegram:{OWNER}",
                "HERMES_GATEWAY_STREAMING": "on" if streaming else "off",
            }
        )
        settings = load_settings()
        runtime = build_runtime(settings)
        gateway = runtime.services.get(Gateway)
        await gateway.start()
        first, whole, edits, messages, exact = [], [], [], [], 0
        try:
            while True:  # connected
                if gateway.status["telegram"].connected:
                    break
                await asyncio.sleep(0.01)
            text = answer_text(chars)
            expected = [to_html(p) for p in split_text(text)]
            for _ in range(answers):
                sent_before, edits_before = len(tg.sent), len(tg.state.edits)
                fake.enqueue(Text(text, chunk_chars=8, delay=seconds / (len(text) / 8)))
                asked = time.perf_counter()
                await tg.user_says(OWNER, "tell me about tides")
                while True:  # the chat shows the whole answer
                    if _done(tg, sent_before, expected):
                        break
                    await asyncio.sleep(0.005)
                mine = tg.sent[sent_before:]
                first.append(mine[0]["sent_at"] - asked)
                changes = tg.state.edits[edits_before:]
                whole.append((changes[-1]["edited_at"] if changes else mine[-1]["sent_at"]) - asked)
                edits.append(len(changes))
                messages.append(len(mine))
                exact += [m["text"] for m in mine] == expected
        finally:
            await gateway.stop()
            await runtime.aclose()
            fake.stop()
    return {
        "first": statistics.median(first),
        "whole": statistics.median(whole),
        "edits": statistics.mean(edits),
        "messages": statistics.mean(messages),
        "exact": exact / answers,
    }


def _done(tg: TelegramBotAPI, sent_before: int, expected: list[str]) -> bool:
    mine = tg.sent[sent_before:]
    return len(mine) == len(expected) and [m["text"] for m in mine] == expected


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--chars", type=int, default=1200)
    parser.add_argument("--seconds", type=float, default=6.0)
    args = parser.parse_args()
    logging.disable(logging.WARNING)
    answers = 2 if args.quick else 4
    print(f"answer: {args.chars} characters streamed over {args.seconds:.1f} s; {answers} per row")
    print(
        f"{'streaming':<10} {'first text s':>13} {'whole s':>8} {'edits':>6} {'msgs':>5} {'exact':>6}"
    )
    for streaming in (True, False):
        row = asyncio.run(one_row(streaming, answers, args.chars, args.seconds))
        print(
            f"{'on' if streaming else 'off':<10} {row['first']:>13.2f} {row['whole']:>8.2f} "
            f"{row['edits']:>6.1f} {row['messages']:>5.1f} {row['exact']:>6.0%}"
        )
    sys.stdout.flush()


if __name__ == "__main__":
    main()
