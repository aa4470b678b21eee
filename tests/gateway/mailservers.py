"""Real mail servers on loopback for the email tests: Dovecot (Debian's `dovecot-imapd`) with a
throw-away config and passwd-file auth, and aiosmtpd collecting what the bot sends."""

from __future__ import annotations

import contextlib
import grp
import imaplib
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from email import policy
from email.message import EmailMessage
from email.parser import BytesParser
from pathlib import Path
from typing import Any

import pytest

BOT = "hermes@example.test"
PASSWORD = "s3cret-mail"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _users() -> tuple[str, str, str, str]:
    """internal user, login user, mail uid name, mail gid name."""
    if os.geteuid() != 0:
        me = pwd.getpwuid(os.getuid()).pw_name
        group = grp.getgrgid(os.getgid()).gr_name
        return me, me, me, group
    return "dovecot", "dovenull", "dovecot", "dovecot"


CONFIG = """protocols = imap
listen = 127.0.0.1
base_dir = {root}/run
state_dir = {root}/state
instance_name = hermes-test-{port}
log_path = {root}/dovecot.log
ssl = no
disable_plaintext_auth = no
auth_mechanisms = plain login
default_internal_user = {internal}
default_internal_group = {mail_group}
default_login_user = {login}
first_valid_uid = 0
mail_location = maildir:{root}/mail/%u
passdb {{
  driver = passwd-file
  args = scheme=PLAIN username_format=%u {root}/passwd
}}
userdb {{
  driver = static
  args = uid={mail_user} gid={mail_group} home={root}/mail/%u
}}
service imap-login {{
  inet_listener imap {{
    address = 127.0.0.1
    port = {port}
  }}
  inet_listener imaps {{
    port = 0
  }}
  chroot =
}}
service anvil {{
  chroot =
}}
"""


@dataclass
class Dovecot:
    port: int
    root: Path
    process: subprocess.Popen[bytes]

    def deliver(self, message: EmailMessage | bytes) -> None:
        """Put a message in the bot's INBOX (as the MTA would)."""
        raw = message if isinstance(message, bytes) else message.as_bytes()
        imap = imaplib.IMAP4("127.0.0.1", self.port)
        try:
            imap.login(BOT, PASSWORD)
            imap.append("INBOX", None, None, raw)
        finally:
            with contextlib.suppress(Exception):
                imap.logout()


def start_dovecot() -> Dovecot:
    binary = shutil.which("dovecot") or "/usr/sbin/dovecot"
    if not Path(binary).exists():
        pytest.fail("the email tests need Dovecot: apt-get install dovecot-imapd (see README)")
    root = Path(tempfile.mkdtemp(prefix="hermes-dovecot-"))
    root.chmod(0o755)
    port = free_port()
    internal, login, mail_user, mail_group = _users()
    for sub in ("run", "state", "mail"):
        (root / sub).mkdir(mode=0o755)
    if os.geteuid() == 0:
        shutil.chown(root / "mail", mail_user, mail_group)
    (root / "passwd").write_text(f"{BOT}:{{PLAIN}}{PASSWORD}\n")
    (root / "dovecot.conf").write_text(
        CONFIG.format(
            root=root,
            port=port,
            internal=internal,
            login=login,
            mail_user=mail_user,
            mail_group=mail_group,
        )
    )
    process = subprocess.Popen(
        [binary, "-F", "-c", str(root / "dovecot.conf")],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    server = Dovecot(port, root, process)
    deadline = time.monotonic() + 15
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1) as s:
                if s.recv(100).startswith(b"* OK"):
                    return server
        except OSError:
            pass
        if process.poll() is not None or time.monotonic() > deadline:
            log = (root / "dovecot.log").read_text() if (root / "dovecot.log").exists() else ""
            stop_dovecot(server)
            pytest.fail(f"Dovecot did not start: {log[-2000:]}")
        time.sleep(0.05)


def stop_dovecot(server: Dovecot) -> None:
    server.process.terminate()
    try:
        server.process.wait(10)
    except subprocess.TimeoutExpired:
        server.process.kill()
        server.process.wait(5)
    shutil.rmtree(server.root, ignore_errors=True)


@dataclass
class Outbox:
    """What reached the SMTP server."""

    messages: list[EmailMessage] = field(default_factory=list)
    changed: threading.Condition = field(default_factory=threading.Condition)

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        parsed = BytesParser(policy=policy.default).parsebytes(envelope.content)
        with self.changed:
            self.messages.append(parsed)  # type: ignore[arg-type]
            self.changed.notify_all()
        return "250 OK"


@contextlib.contextmanager
def smtp_server() -> Iterator[tuple[int, Outbox]]:
    from aiosmtpd.controller import Controller

    outbox = Outbox()
    port = free_port()
    controller = Controller(outbox, hostname="127.0.0.1", port=port)
    controller.start()
    try:
        yield port, outbox
    finally:
        controller.stop()
