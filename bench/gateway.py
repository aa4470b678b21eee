"""Benchmark of the messaging gateway through Telegram, with an instant fake model. One command,
prints a table:

    .venv/bin/python bench/gateway.py            # full run (about half a minute)
    .venv/bin/python bench/gateway.py --quick    # smaller counts, for a smoke test

Everything runs in this process on one event loop, as in `hermes serve`: the real
python-telegram-bot adapter long-polls the loopback Bot API stand-in
(`tests.standins.telegram_api`), the gateway runs each turn through the real agent and store,
and `bench/instant_model.py` answers every model call at once.

* per platform (WhatsApp, SMS, Slack, Discord; `bench/gateway_platforms.py`): the same
  overhead through each adapter and its stand-in; Matrix through a real Synapse started by
  the benchmark (that figure includes Synapse's own event and sync handling);
* overhead: message-in (the update is queued at the Bot API) to reply-out (sendMessage
  arrives), minus the time the model spent on that turn (measured by the model itself):
  p50 / p99 over sequential messages of one chat (targets: p50 ≤ 10 ms);
* throughput: 200 chats talking at once, each sending its next message when the previous
  reply arrives: replies per second (target ≥ 150) and the p99 / max reply latency (no chat
  waits on another).
The stand-in and the model share the loop with the gateway, so their cost is inside the
figures: they are upper bounds for the gateway itself. On a shared machine the wall-clock rate
depends on what else runs; the CPU time per message (this process, all threads) does not, and
the last row turns it into the rate one free core (the event loop's) allows.
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

# the bench's own helpers, and the repository root for the platform stand-ins in tests/standins
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from gateway_platforms import matrix_overhead, platform_overheads  # noqa: E402
from instant_model import InstantModel  # noqa: E402
from tests.standins.telegram_api import TelegramBotAPI  # noqa: E402

from hermes.config.settings import load_settings  # noqa: E402
from hermes.gateway.runner import Gateway  # noqa: E402
from hermes.runtime import build_runtime  # noqa: E402

CHATS = 200


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


class Replies:
    """Futures for expected replies, resolved by the stand-in's sendMessage listener."""

    def __init__(self, api: TelegramBotAPI) -> None:
        self.waiting: dict[int, asyncio.Future[float]] = {}
        api.listeners.append(self._arrived)

    def _arrived(self, record: dict) -> None:
        future = self.waiting.pop(int(record["chat_id"]), None)
        if future is not None and not future.done():
            future.set_result(record["sent_at"])

    def expect(self, chat: int) -> asyncio.Future[float]:
        future: asyncio.Future[float] = asyncio.get_running_loop().create_future()
        self.waiting[chat] = future
        return future


async def ask(api: TelegramBotAPI, replies: Replies, chat: int, text: str) -> float:
    future = replies.expect(chat)
    started = time.perf_counter()
    await api.user_says(chat, text)
    return await asyncio.wait_for(future, 30) - started


async def overhead(
    api: TelegramBotAPI, model: InstantModel, replies: Replies, n: int
) -> list[float]:
    out = []
    for i in range(n):
        text = f"sequential message {i}"
        latency = await ask(api, replies, 1, text)
        out.append(latency - model.take(text))
    return out


async def throughput(
    api: TelegramBotAPI, replies: Replies, per_chat: int
) -> tuple[float, list[float]]:
    latencies: list[float] = []

    async def chat(chat_id: int) -> None:
        for i in range(per_chat):
            latencies.append(await ask(api, replies, chat_id, f"chat {chat_id} message {i}"))

    started, cpu = time.perf_counter(), time.process_time()
    await asyncio.gather(*(chat(1000 + c) for c in range(CHATS)))
    elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu
    return CHATS * per_chat / elapsed, latencies, cpu / (CHATS * per_chat)


async def main(quick: bool) -> None:
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    sequential, per_chat = (50, 2) if quick else (300, 5)
    home = Path(tempfile.mkdtemp(prefix="hermes-bench-gateway-"))
    model = await InstantModel().start()
    async with TelegramBotAPI() as api:
        users = ",".join(str(u) for u in [1, *range(1000, 1000 + CHATS)])
        env = {
            "HERMES_HOME": str(home),
            "OPENAI_BASE_URL": model.base_url,
            "HERMES_MODEL": "fake-model",
            "TELEGRAM_BOT_TOKEN": api.state.token,
            "TELEGRAM_API_BASE": api.base_url,
            "TELEGRAM_ALLOWED_USERS": users,
            "HERMES_GATEWAY_OWNER": "telegram:1",
        }
        settings = load_settings(env=env)
        settings.memory.review_interval = 0  # measure the gateway, not background reviews
        runtime = build_runtime(settings)
        gateway = runtime.services.get(Gateway)
        await gateway.start()
        replies = Replies(api)
        try:
            await ask(api, replies, 1, "warm up")  # answered once the adapter is connected
            model.own_seconds.clear()
            over = await overhead(api, model, replies, sequential)
            rate, lat, cpu = await throughput(api, replies, per_chat)
        finally:
            await gateway.stop()
            await runtime.aclose()
    try:
        per_platform = await platform_overheads(model, home / "platforms", sequential // 2)
        per_platform.update(await matrix_overhead(model, home / "matrix", sequential // 5))
    finally:
        await model.stop()
    ms = 1000.0
    rows = [
        ("overhead p50 (ms, target ≤ 10)", f"{statistics.median(over) * ms:.2f}"),
        ("overhead p99 (ms)", f"{pct(over, 99) * ms:.2f}"),
        (f"{CHATS} chats at once: replies/s (target ≥ 150)", f"{rate:.0f}"),
        (f"{CHATS} chats: reply latency p50 (ms)", f"{statistics.median(lat) * ms:.1f}"),
        (f"{CHATS} chats: reply latency p99 (ms)", f"{pct(lat, 99) * ms:.1f}"),
        (f"{CHATS} chats: reply latency max (ms)", f"{max(lat) * ms:.1f}"),
        ("CPU per message, all parts in this process (ms)", f"{cpu * ms:.2f}"),
        ("  → messages/s that allows on one free core", f"{1 / cpu:.0f}"),
    ]
    for name, values in per_platform.items():
        rows.append(
            (
                f"{name}: overhead p50 / p99 (ms, target p50 ≤ 10)",
                f"{statistics.median(values) * ms:.2f} / {pct(values, 99) * ms:.2f}",
            )
        )
    width = max(len(r[0]) for r in rows)
    print(
        f"gateway benchmark (sequential {sequential}, {CHATS} chats × {per_chat} messages, "
        f"cpus {os.cpu_count()})"
    )
    for name, value in rows:
        print(f"  {name:<{width}}  {value:>10}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="smaller counts (smoke test)")
    asyncio.run(main(parser.parse_args().quick))
