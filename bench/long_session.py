"""Long-session benchmark: 1,000 turns through the HTTP API with an 8,000-token window.

Run:  .venv/bin/python bench/long_session.py [--turns 1000] [--window 8000]

Starts a real `hermes serve` against the scripted fake model, talks to it with httpx, and
prints prompt size per turn, compressions, summary calls, total tokens versus sending the
whole transcript every turn, and whether facts planted in turns 1–50 are still found by
`hermes sessions search` at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from hermes.agent.compression import SUMMARIZER_INSTRUCTIONS, SUMMARY_PREFIX
from hermes.agent.tokens import estimate_messages_tokens, estimate_tools_tokens
from hermes.memory.review import SYSTEM as MEMORY_SYSTEM
from hermes.testing.fake_model import FakeModel, Text

FACTS = [
    ("My locker code at the gym is 4817.", "locker code gym"),
    ("We adopted a grey cat and named her Biscuit.", "cat name Biscuit"),
    ("The staging database lives on host pg-staging-03.", "staging database host"),
    ("My sister Maria moves to Lisbon in March.", "sister Maria Lisbon"),
    ("Our deploy freeze starts on December 18th.", "deploy freeze date"),
    ("I am allergic to peanuts, please remember that.", "allergic peanuts"),
    ("The invoice API key rotates every 45 days.", "invoice key rotation days"),
    ("My favourite editor theme is Solarized Dark.", "editor theme Solarized"),
]
TOPICS = [
    "the Go todo app",
    "database indexes",
    "CI pipelines",
    "a birthday party",
    "hiking routes",
    "the quarterly budget",
    "API pagination",
    "unit tests",
]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def user_message(turn: int, rng: random.Random) -> str:
    if 1 <= turn <= 50 and turn % 6 == 1 and (turn // 6) < len(FACTS):
        return f"By the way: {FACTS[turn // 6][0]} Anyway, back to work."
    topic = rng.choice(TOPICS)
    words = " ".join(
        rng.choice(
            ["details", "options", "tradeoffs", "steps", "ideas", "risks", "examples", "numbers"]
        )
        for _ in range(rng.randint(40, 110))
    )
    return f"Turn {turn}: let's talk about {topic}. Some notes: {words}"


def fake_responder(rng: random.Random):
    def respond(req: dict[str, Any]):
        if req["messages"][0].get("content") == SUMMARIZER_INSTRUCTIONS:
            body = "\n".join(
                f"{h}\n- point {rng.randint(1, 999)}"
                for h in (
                    "## Goal",
                    "## Constraints & Preferences",
                    "## Progress",
                    "### Done",
                    "### In Progress",
                    "### Blocked",
                    "## Key Decisions",
                    "## Resolved Questions",
                    "## Relevant Files",
                    "## Critical Context",
                    "## Next Steps",
                )
            )
            return Text(body + "\n" + "summary detail " * 60)
        return Text("Here is my answer. " + "content " * rng.randint(30, 90))

    return respond


def wait_health(base: str, proc: subprocess.Popen[bytes], deadline: float) -> None:
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(
                f"hermes serve exited: {proc.stderr.read().decode() if proc.stderr else ''}"
            )
        try:
            if httpx.get(base + "/health", timeout=0.5).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.05)
    raise SystemExit("hermes serve did not become healthy")


def pct(values: list[int], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=1000)
    parser.add_argument("--window", type=int, default=8000)
    args = parser.parse_args()
    rng = random.Random(7)
    home = Path(tempfile.mkdtemp(prefix="hermes-bench-long-"))
    with FakeModel(context_length=args.window, default=fake_responder(rng)) as fake:
        env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
        env.update(
            HERMES_HOME=str(home),
            OPENAI_BASE_URL=fake.base_url,
            HERMES_MODEL="fake-model",
            HERMES_CONTEXT_LENGTH=str(args.window),
        )
        port = free_port()
        proc = subprocess.Popen(
            [sys.executable, "-m", "hermes", "serve", "--port", str(port)],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        base = f"http://127.0.0.1:{port}"
        try:
            wait_health(base, proc, time.monotonic() + 20)
            transcript_tokens = 0
            naive_total = 0
            started = time.monotonic()
            with httpx.Client(base_url=base, timeout=60) as client:
                for turn in range(1, args.turns + 1):
                    msg = user_message(turn, rng)
                    r = client.post(
                        "/v1/chat/completions",
                        headers={"X-Hermes-Session-Id": "bench-long"},
                        json={"model": "hermes", "messages": [{"role": "user", "content": msg}]},
                    )
                    r.raise_for_status()
                    reply = r.json()["choices"][0]["message"]["content"]
                    transcript_tokens += estimate_messages_tokens(
                        [{"role": "user", "content": msg}]
                    )
                    naive_total += transcript_tokens  # full transcript (plus system) every turn
                    transcript_tokens += estimate_messages_tokens(
                        [{"role": "assistant", "content": reply}]
                    )
            elapsed = time.monotonic() - started
        finally:
            proc.terminate()
            proc.wait(timeout=20)
        requests = fake.chat_requests()
    summaries = [r for r in requests if r["messages"][0].get("content") == SUMMARIZER_INSTRUCTIONS]
    memory_calls = [r for r in requests if r["messages"][0].get("content") == MEMORY_SYSTEM]
    mains = [
        r
        for r in requests
        if r["messages"][0].get("content") not in (SUMMARIZER_INSTRUCTIONS, MEMORY_SYSTEM)
    ]
    sizes = [
        estimate_messages_tokens(r["messages"]) + estimate_tools_tokens(r.get("tools") or [])
        for r in mains
    ]
    system_tokens = estimate_messages_tokens(mains[0]["messages"][:1])
    naive_total += system_tokens * len(mains)
    sent_total = sum(sizes) + sum(
        estimate_messages_tokens(r["messages"]) + estimate_tools_tokens(r.get("tools") or [])
        for r in summaries + memory_calls
    )

    env_cli = dict(env)
    shown = json.loads(
        subprocess.run(
            [sys.executable, "-m", "hermes", "sessions", "show", "bench-long", "--json"],
            env=env_cli,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    )
    compressions = len(shown["compressions"])
    first_comp = next(
        (
            i
            for i, r in enumerate(mains)
            if any(SUMMARY_PREFIX in str(m.get("content")) for m in r["messages"])
        ),
        len(mains),
    )
    found = 0
    for sentence, query in FACTS:
        out = subprocess.run(
            [sys.executable, "-m", "hermes", "sessions", "search", query, "--limit", "5", "--json"],
            env=env_cli,
            capture_output=True,
            text=True,
        )
        hits = json.loads(out.stdout).get("hits", []) if out.returncode == 0 else []
        planted = [
            m["index"]
            for m in shown["messages"]
            if m["role"] == "user" and sentence in (m["content"] or "")
        ]
        if any(h["session_id"] == "bench-long" and h["message_index"] in planted for h in hits):
            found += 1

    after = sizes[first_comp:]
    blocks = [after[i : i + 100] for i in range(0, len(after), 100)]
    rows = [
        ("turns", f"{args.turns}", f"{elapsed:.1f}s wall"),
        ("context window", f"{args.window}", ""),
        (
            "prompt tokens / turn: max",
            f"{max(sizes)}",
            "target < window" + (" ✓" if max(sizes) < args.window else " ✗"),
        ),
        ("prompt tokens / turn: p95", f"{pct(sizes, 0.95):.0f}", ""),
        ("prompt tokens / turn: mean", f"{statistics.mean(sizes):.0f}", ""),
        (
            "mean per 100-turn block after 1st compression",
            " ".join(f"{statistics.mean(b):.0f}" for b in blocks),
            f"first compression at turn {first_comp + 1}",
        ),
        ("compressions", f"{compressions}", ""),
        ("summary calls", f"{len(summaries)}", ""),
        (
            "memory calls (review + pre-compression flush)",
            f"{len(memory_calls)}",
            "counted in the total",
        ),
        ("total tokens sent (all calls)", f"{sent_total:,}", ""),
        ("naive total (full transcript each turn)", f"{naive_total:,}", ""),
        (
            "sent / naive",
            f"{100 * sent_total / naive_total:.1f}%",
            "target < 10%" + (" ✓" if sent_total < 0.1 * naive_total else " ✗"),
        ),
        (
            "facts from turns 1–50 found at the end",
            f"{found}/{len(FACTS)}",
            "via hermes sessions search, top 5",
        ),
    ]
    width = max(len(r[0]) for r in rows)
    print(f"{'metric':<{width}}  {'value':>14}  note")
    print("-" * (width + 40))
    for name, value, note in rows:
        print(f"{name:<{width}}  {value:>14}  {note}")


if __name__ == "__main__":
    main()
