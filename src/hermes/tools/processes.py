"""Background processes started by `terminal(background=true)` and the `process` tool that
polls, reads, waits on, writes to and kills them. Each belongs to the scope that started it;
all are killed when the runtime closes."""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import time
from dataclasses import dataclass, field
from typing import Literal

from hermes.config.settings import Settings
from hermes.tools.registry import ToolContext, ToolError, tool
from hermes.tools.shell import CappedOutput, kill_group, read_into, scrubbed_env, spawn
from hermes.tools.workdir import workdir

MAX_PROCESSES = 16
KEEP_EXITED = 32
POLL_CHARS = 2000
WAIT_MAX_S = 600


@dataclass
class BackgroundProcess:
    id: str
    command: str
    scope: str
    proc: asyncio.subprocess.Process
    output: CappedOutput
    started: float = field(default_factory=time.monotonic)
    reader: asyncio.Task[None] | None = None

    @property
    def pid(self) -> int:
        return self.proc.pid

    @property
    def status(self) -> str:
        code = self.proc.returncode
        age = time.monotonic() - self.started
        if code is None:
            return f"{self.id}: running for {age:.0f}s (pid {self.pid}): {self.command[:120]}"
        return f"{self.id}: exited with code {code}: {self.command[:120]}"


class ProcessTable:
    """One per runtime (a component)."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._items: dict[str, BackgroundProcess] = {}

    async def start(self, ctx: ToolContext, command: str) -> BackgroundProcess:
        running = [p for p in self._items.values() if p.proc.returncode is None]
        if len(running) >= MAX_PROCESSES:
            raise ToolError(
                f"{MAX_PROCESSES} background processes are already running; kill one first"
            )
        proc = await spawn(
            command,
            str(workdir(self.settings)),
            scrubbed_env(self.settings),
            stdin=asyncio.subprocess.PIPE,
        )
        item = BackgroundProcess(
            id=f"proc_{secrets.token_hex(4)}",
            command=command,
            scope=ctx.scope,
            proc=proc,
            output=CappedOutput(self.settings.tools.terminal.output_chars),
        )
        item.reader = asyncio.create_task(read_into(proc.stdout, item.output))
        self._items[item.id] = item
        self._forget_old()
        return item

    def _forget_old(self) -> None:
        """Keep the newest exited processes' output for the model; drop the rest."""
        exited = [k for k, p in self._items.items() if p.proc.returncode is not None]
        for key in exited[: max(0, len(exited) - KEEP_EXITED)]:
            del self._items[key]

    def get(self, scope: str, process_id: str) -> BackgroundProcess:
        item = self._items.get(process_id.strip())
        if item is None or item.scope != scope:
            known = ", ".join(p.id for p in self.listing(scope)) or "none"
            raise ToolError(f"there is no background process {process_id!r} (yours: {known})")
        return item

    def listing(self, scope: str) -> list[BackgroundProcess]:
        return [p for p in self._items.values() if p.scope == scope]

    async def kill(self, item: BackgroundProcess) -> None:
        await kill_group(item.proc)
        if item.reader is not None:
            with contextlib.suppress(asyncio.CancelledError, TimeoutError):
                await asyncio.wait_for(item.reader, 1.0)

    async def aclose(self) -> None:
        """Kill every process still running (the runtime is closing)."""
        for item in list(self._items.values()):
            if item.proc.returncode is None or item.reader and not item.reader.done():
                await self.kill(item)
            if item.reader is not None:
                item.reader.cancel()
        self._items.clear()


async def _wait(item: BackgroundProcess, seconds: int) -> str:
    limit = min(max(1, seconds), WAIT_MAX_S)
    try:
        await asyncio.wait_for(asyncio.shield(item.proc.wait()), limit)
    except TimeoutError:
        return f"{item.status}\n[still running after {limit}s]\n{item.output.last(POLL_CHARS)}"
    if item.reader is not None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(item.reader), 1.0)
    return f"{item.status}\n{item.output.text()}"


async def _write(item: BackgroundProcess, data: str) -> str:
    stdin = item.proc.stdin
    if stdin is None or item.proc.returncode is not None:
        raise ToolError(f"{item.id} has exited; it cannot read input")
    try:
        stdin.write(data.encode())
        await stdin.drain()
    except (BrokenPipeError, ConnectionResetError):
        raise ToolError(f"{item.id} closed its input") from None
    return f"Wrote {len(data.encode())} bytes to {item.id}."


@tool
async def process(
    ctx: ToolContext,
    action: Literal["list", "poll", "log", "wait", "kill", "write"],
    session_id: str = "",
    data: str = "",
    timeout: int = 30,  # noqa: ASYNC109 - the argument name is the tool's contract
) -> str:
    """Manage background processes from terminal(background=true).

    Args:
        action: poll: status + recent output; log: all output; write: to stdin.
        session_id: The process id (proc_...).
        data: Text to write to its stdin (include a trailing newline).
        timeout: Seconds to wait (action wait).
    """
    table = ctx.service(ProcessTable)
    if action == "list":
        items = table.listing(ctx.scope)
        return "\n".join(p.status for p in items) if items else "No background processes."
    if not session_id:
        raise ToolError(f"action {action!r} needs session_id (a proc_… id; action list shows them)")
    item = table.get(ctx.scope, session_id)
    if action == "poll":
        return f"{item.status}\n{item.output.last(POLL_CHARS)}"
    if action == "log":
        return f"{item.status}\n{item.output.text()}"
    if action == "wait":
        return await _wait(item, timeout)
    if action == "write":
        return await _write(item, data)
    if item.proc.returncode is not None:
        return f"{item.status} (nothing to kill)"
    await table.kill(item)
    return f"Killed {item.id} and its children. {item.status}"
