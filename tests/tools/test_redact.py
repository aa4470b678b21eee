"""Key-shaped secrets never reach the model or the transcript through a tool result."""

from __future__ import annotations

from pathlib import Path

from pydantic import SecretStr

from hermes.agent.turn import TurnRequest
from hermes.config.settings import Settings
from hermes.redact import MARK, Redactor
from hermes.runtime import build_runtime
from hermes.testing.fake_model import FakeModel, Text, ToolCalls

SAMPLES = [
    "sk-proj-AbCdEf0123456789AbCdEf0123456789",
    "ghp_0123456789abcdefghijABCDEFGHIJ012345",
    "xoxb-123456789012-abcdefghijkl",
    "AKIAIOSFODNN7EXAMPLE",
    "123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw1",
]


def test_known_key_shapes_are_masked() -> None:
    redact = Redactor()
    for sample in SAMPLES:
        out = redact(f"token here: {sample} end")
        assert sample not in out and MARK in out, sample
    assert MARK in redact("OPENAI_API_KEY=abc123def456ghi")
    assert MARK in redact('{"password": "hunter2hunter2"}')
    assert MARK in redact("Authorization: Bearer abcdef1234567890")
    assert MARK in redact("postgres://app:s3cretpw@db/x")
    key = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAA\n-----END OPENSSH PRIVATE KEY-----"
    assert "b3BlbnNz" not in redact(key)
    # ordinary text is left alone
    plain = "max_tokens: 4096, the token count, a path /usr/lib/python3.11 and 3.14159"
    assert redact(plain) == plain
    assert Redactor(["my-own-server-key"])("x my-own-server-key y") == f"x {MARK} y"


async def test_tool_results_and_the_stored_transcript_are_redacted(
    settings: Settings, fake: FakeModel, workdir: Path
) -> None:
    settings.server.api_key = SecretStr("install-secret-value-42")
    (workdir / ".env").write_text(f"STRIPE_KEY={SAMPLES[0]}\nSERVER=install-secret-value-42\n")
    fake.enqueue(ToolCalls([("read_file", {"path": ".env"})]), Text("read it"))
    runtime = build_runtime(settings)
    try:
        await runtime.agent.run_turn(TurnRequest("show .env", session_id="r"))
        sent = str(fake.chat_requests()[1])
        stored = str([m.content for m in runtime.store.get_messages("default", "r")])
    finally:
        await runtime.aclose()
    for seen in (sent, stored):
        assert SAMPLES[0] not in seen and "install-secret-value-42" not in seen
        assert MARK in seen
