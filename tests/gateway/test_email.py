"""Email end to end against real servers: Dovecot (IMAP, IDLE) in, aiosmtpd out."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Iterator
from email.message import EmailMessage
from pathlib import Path

import pytest

from hermes.config.settings import load_settings
from hermes.gateway.runner import Gateway
from hermes.runtime import build_runtime
from hermes.store.base import DEFAULT_SCOPE
from hermes.testing.fake_model import FakeModel, Text

from .conftest import until, write_config
from .mailservers import BOT, PASSWORD, Dovecot, Outbox, smtp_server, start_dovecot, stop_dovecot

ADA = "ada@example.test"


@pytest.fixture(scope="module")
def dovecot() -> Iterator[Dovecot]:
    server = start_dovecot()
    try:
        yield server
    finally:
        stop_dovecot(server)


@pytest.fixture
def outbox() -> Iterator[Outbox]:
    with smtp_server() as (port, box):
        box.port = port  # type: ignore[attr-defined]
        yield box


@pytest.fixture
async def mail_gateway(
    dovecot: Dovecot, outbox: Outbox, model_env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[Gateway]:
    env = {
        "EMAIL_IMAP_HOST": "127.0.0.1",
        "EMAIL_IMAP_PORT": str(dovecot.port),
        "EMAIL_SMTP_HOST": "127.0.0.1",
        "EMAIL_SMTP_PORT": str(outbox.port),  # type: ignore[attr-defined]
        "EMAIL_ADDRESS": BOT,
        "EMAIL_PASSWORD": PASSWORD,
        "EMAIL_ALLOWED_USERS": ADA,
        "HERMES_GATEWAY_OWNER": f"email:{ADA}",
    }
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    settings = load_settings()
    settings.model.max_retries = 0
    runtime = build_runtime(settings)
    gw = runtime.services.get(Gateway)
    gw.backoff = (0.05, 0.1)
    await gw.start()
    try:
        await until(lambda: gw.status["email"].connected, what="IMAP login")
        yield gw
    finally:
        await gw.stop()
        await runtime.aclose()


def mail(sender: str, subject: str, body: str, **headers: str) -> EmailMessage:
    msg = EmailMessage()
    msg["From"] = sender
    msg["To"] = BOT
    msg["Subject"] = subject
    msg["Message-ID"] = headers.pop("message_id", f"<{abs(hash((sender, subject, body)))}@x.test>")
    for name, value in headers.items():
        msg[name.replace("_", "-")] = value
    msg.set_content(body)
    return msg


async def wait_mail(outbox: Outbox, n: int) -> list[EmailMessage]:
    await until(lambda: len(outbox.messages) >= n, what=f"{n} sent mail(s)")
    return outbox.messages


async def test_a_mail_gets_a_threaded_reply(
    dovecot: Dovecot, outbox: Outbox, fake: FakeModel, mail_gateway: Gateway
) -> None:
    fake.enqueue(Text("Tuesday works."), Text("Then 10am."))
    first = mail(ADA, "Meeting", "Can we meet on Tuesday?", message_id="<m1@x.test>")
    await asyncio.to_thread(dovecot.deliver, first)
    [reply] = await wait_mail(outbox, 1)
    assert reply["To"] == ADA and reply["From"] == BOT
    assert reply["Subject"] == "Re: Meeting"
    assert reply["In-Reply-To"] == "<m1@x.test>"
    assert reply["References"] == "<m1@x.test>"
    assert reply["Auto-Submitted"] == "auto-replied"
    assert reply.get_content().strip() == "Tuesday works."

    second = mail(
        ADA,
        "Re: Meeting",
        "What time?\n\nOn Mon, Ada wrote:\n> Can we meet?",
        message_id="<m2@x.test>",
        In_Reply_To=reply["Message-ID"],
        References=f"<m1@x.test> {reply['Message-ID']}",
    )
    await asyncio.to_thread(dovecot.deliver, second)
    replies = await wait_mail(outbox, 2)
    assert replies[1]["Subject"] == "Re: Meeting"
    assert replies[1]["References"].split()[0] == "<m1@x.test>"
    request = fake.chat_requests()[1]["messages"]
    assert request[-1]["content"] == "What time?"  # quoted text dropped
    assert "Can we meet on Tuesday?" in str(request)  # same thread, same session
    sessions = mail_gateway.runtime.store.list_sessions(DEFAULT_SCOPE)
    assert len([s for s in sessions if s.id.startswith(f"email:{ADA}:")]) == 1


async def test_html_mail_and_attachments(
    dovecot: Dovecot, outbox: Outbox, fake: FakeModel, mail_gateway: Gateway
) -> None:
    msg = mail(ADA, "Report", "plain part")
    msg.add_alternative(
        "<html><body><p>Hello <b>there</b></p><script>x()</script></body></html>", subtype="html"
    )
    msg.add_attachment(b"a,b\n1,2\n", maintype="text", subtype="csv", filename="data.csv")
    fake.enqueue(Text("Got it."))
    await asyncio.to_thread(dovecot.deliver, msg)
    await wait_mail(outbox, 1)
    text = fake.chat_requests()[0]["messages"][-1]["content"]
    assert text.startswith("plain part")
    assert "'data.csv'" in text
    saved = Path(text.split("saved at ")[1].split("]")[0])
    assert await asyncio.to_thread(saved.read_bytes) == b"a,b\n1,2\n"

    html_only = EmailMessage()
    html_only["From"], html_only["To"], html_only["Subject"] = ADA, BOT, "HTML"
    html_only["Message-ID"] = "<h1@x.test>"
    html_only.set_content("<p>Hello <b>there</b></p><style>p{}</style>", subtype="html")
    fake.enqueue(Text("ok"))
    await asyncio.to_thread(dovecot.deliver, html_only)
    await wait_mail(outbox, 2)
    assert fake.chat_requests()[1]["messages"][-1]["content"] == "Hello there"


async def test_no_mail_loops_and_no_strangers(
    dovecot: Dovecot, outbox: Outbox, fake: FakeModel, mail_gateway: Gateway
) -> None:
    automatic = [
        mail(ADA, "Out of office", "I am away", Auto_Submitted="auto-replied"),
        mail(ADA, "Vacation", "away", X_Autoreply="yes"),
        mail("MAILER-DAEMON@example.test", "Undelivered Mail", "bounce"),
        mail(ADA, "digest", "news", Precedence="bulk"),
        mail(BOT, "myself", "a message from the bot's own address"),
        mail("eve@example.test", "hi", "a stranger"),
    ]
    for msg in automatic:
        await asyncio.to_thread(dovecot.deliver, msg)
    fake.enqueue(Text("only this one"))
    await asyncio.to_thread(dovecot.deliver, mail(ADA, "real", "a real question"))
    await wait_mail(outbox, 1)
    assert len(fake.chat_requests()) == 1
    assert fake.chat_requests()[0]["messages"][-1]["content"] == "a real question"
    assert mail_gateway.status["email"].refused == 1  # the stranger
    assert len(outbox.messages) == 1


async def test_cron_delivers_to_an_email_address(
    dovecot: Dovecot, outbox: Outbox, fake: FakeModel, mail_gateway: Gateway
) -> None:
    from hermes.cron.jobs import create_job
    from hermes.cron.store import JobStore
    from hermes.cron.ticker import Scheduler

    runtime = mail_gateway.runtime
    store = JobStore(runtime.settings.home, DEFAULT_SCOPE, None)
    job = await asyncio.to_thread(
        lambda: create_job(
            store, schedule="every 1h", prompt="x", name="Daily digest", deliver=f"email:{ADA}"
        )
    )
    fake.enqueue(Text("Three things happened."))
    _job, task = await runtime.services.get(Scheduler).start_run(DEFAULT_SCOPE, job["id"])
    await task
    [sent] = await wait_mail(outbox, 1)
    assert sent["To"] == ADA and sent["Subject"] == "Daily digest"
    assert sent["Auto-Submitted"] == "auto-generated"
    assert "Three things happened." in sent.get_content()


def test_passwords_never_go_in_clear_to_another_machine() -> None:
    from hermes.gateway.base import AdapterError
    from hermes.gateway.platforms.email import EmailConfig, imap_uses_tls

    assert imap_uses_tls(EmailConfig(imap_host="imap.example.com"))  # 993
    assert not imap_uses_tls(EmailConfig(imap_host="127.0.0.1", imap_port=1143))
    assert not imap_uses_tls(
        EmailConfig(imap_host="imap.example.com", imap_port=143, security="plain")
    )
    with pytest.raises(AdapterError, match="clear text"):
        imap_uses_tls(EmailConfig(imap_host="imap.example.com", imap_port=143))


@pytest.fixture
def silent_pushes(monkeypatch: pytest.MonkeyPatch) -> None:
    """A server whose IDLE notifications never arrive (as when one is sent between the
    search and the IDLE)."""
    import aioimaplib

    async def silent(self: object, timeout: float | None = None) -> None:  # noqa: ASYNC109 (its signature)
        await asyncio.sleep(timeout or 0)
        raise TimeoutError

    monkeypatch.setattr(aioimaplib.IMAP4, "wait_server_push", silent)


@pytest.fixture
def lost_pushes(silent_pushes: None, home: Path) -> None:
    """`silent_pushes` and a short `poll_seconds`."""
    write_config(home, "gateway:\n  email:\n    poll_seconds: 0.5\n")


async def test_a_mail_whose_notification_is_lost_is_read_within_poll_seconds(
    lost_pushes: None, dovecot: Dovecot, outbox: Outbox, fake: FakeModel, mail_gateway: Gateway
) -> None:
    fake.enqueue(Text("Seen anyway."))
    await asyncio.to_thread(dovecot.deliver, mail(ADA, "quiet", "no push for this one"))
    [reply] = await wait_mail(outbox, 1)  # without the cap, the IDLE waits 25 minutes
    assert reply.get_content().strip() == "Seen anyway."


@pytest.fixture
def waiting_mail(dovecot: Dovecot, fake: FakeModel) -> None:
    """A mail in the inbox before the gateway starts: its first look finds it, no push."""
    fake.enqueue(Text("First answer."), Text("Second answer."))
    dovecot.deliver(mail(ADA, "one", "the first question"))


@pytest.fixture
def slow_reading(monkeypatch: pytest.MonkeyPatch) -> tuple[threading.Event, threading.Event]:
    """The gateway reads the first mail only once the test says so: (reading, go on)."""
    from hermes.gateway.platforms.email import EmailAdapter

    reading, go_on = threading.Event(), threading.Event()
    read = EmailAdapter._normalize

    def held(self: EmailAdapter, msg: EmailMessage) -> object:
        reading.set()
        go_on.wait(30)
        return read(self, msg)

    monkeypatch.setattr(EmailAdapter, "_normalize", held)
    return reading, go_on


async def test_a_mail_that_comes_while_others_are_read_is_read_at_once(
    silent_pushes: None,
    waiting_mail: None,
    slow_reading: tuple[threading.Event, threading.Event],
    dovecot: Dovecot,
    outbox: Outbox,
    fake: FakeModel,
    mail_gateway: Gateway,
) -> None:
    """A notification sent while the gateway reads the mail it found (not in IDLE) is lost:
    it looks again before it waits, instead of leaving the mail for `poll_seconds` (60 here)."""
    reading, go_on = slow_reading
    assert await asyncio.to_thread(reading.wait, 30)
    await asyncio.to_thread(dovecot.deliver, mail(ADA, "two", "the second question"))
    go_on.set()
    replies = await wait_mail(outbox, 2)
    assert sorted(r["Subject"] for r in replies) == ["Re: one", "Re: two"]
