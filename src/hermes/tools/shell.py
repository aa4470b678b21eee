"""What terminal and process share: the scrubbed environment, a head+tail output buffer, and
killing a command's whole process group."""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import signal
from collections.abc import Mapping

from hermes.config.settings import Settings
from hermes.redact import settings_secrets

SHELL = "/bin/bash" if os.path.exists("/bin/bash") else "/bin/sh"
_SECRET_NAME = re.compile(
    r"(?i)(_API_KEY|_TOKEN|_SECRET|_PASSWORD|_PASSWD|_CREDENTIALS?|_PRIVATE_KEY|_ACCESS_KEY"
    r"|_AUTH|_SID)$|^(HERMES_|OPENAI_|ANTHROPIC_|OPENROUTER_|AWS_SECRET|TWILIO_|TELEGRAM_"
    r"|SLACK_|DISCORD_|MATRIX_|WHATSAPP_|GITHUB_TOKEN|GH_TOKEN)"
)
KILL_GRACE_S = 2.0


def scrubbed_env(settings: Settings, base: Mapping[str, str] | None = None) -> dict[str, str]:
    """The process environment without Hermes' settings, the model's or platforms' keys, or
    anything named like a credential; values equal to a known secret go too."""
    secrets = set(settings_secrets(settings))
    env = {
        name: value
        for name, value in (os.environ if base is None else base).items()
        if not _SECRET_NAME.search(name) and value not in secrets
    }
    env.setdefault("PATH", "/usr/local/bin:/usr/bin:/bin")
    env["PAGER"] = "cat"
    env["GIT_PAGER"] = "cat"
    env["TERM"] = "dumb"
    return env


class CappedOutput:
    """Keeps the first and last `limit // 2` bytes of a stream and counts what was cut."""

    def __init__(self, limit: int) -> None:
        self.half = max(256, limit // 2)
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0

    def add(self, chunk: bytes) -> None:
        self.total += len(chunk)
        room = self.half - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        if chunk:
            self.tail += chunk
            if len(self.tail) > self.half:
                del self.tail[: len(self.tail) - self.half]

    @property
    def cut(self) -> int:
        return self.total - len(self.head) - len(self.tail)

    def text(self) -> str:
        head = self.head.decode("utf-8", errors="replace")
        tail = self.tail.decode("utf-8", errors="replace")
        if self.cut > 0:
            return f"{head}\n[... {self.cut:,} bytes of output cut; the start and end are kept ...]\n{tail}"
        return head + tail

    def last(self, chars: int) -> str:
        text = self.text()
        return text if len(text) <= chars else "…" + text[-chars:]


async def read_into(stream: asyncio.StreamReader | None, out: CappedOutput) -> None:
    if stream is None:
        return
    while chunk := await stream.read(65536):
        out.add(chunk)


def signal_group(pid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, sig)


async def kill_group(proc: asyncio.subprocess.Process) -> None:
    """SIGTERM the command's process group, then SIGKILL what is left after a grace period."""
    signal_group(proc.pid, signal.SIGTERM)
    try:
        await asyncio.wait_for(proc.wait(), KILL_GRACE_S)
    except TimeoutError:
        pass
    signal_group(proc.pid, signal.SIGKILL)
    with contextlib.suppress(ProcessLookupError):
        await proc.wait()


async def spawn(
    command: str, cwd: str, env: dict[str, str], *, stdin: int | None
) -> asyncio.subprocess.Process:
    """`bash -c command` in its own session (so the whole group can be killed), stderr merged."""
    return await asyncio.create_subprocess_exec(
        SHELL,
        "-c",
        command,
        cwd=cwd,
        env=env,
        stdin=stdin,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        start_new_session=True,
    )
