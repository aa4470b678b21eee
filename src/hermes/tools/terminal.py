"""`terminal`: one shell command in the workdir, with a timeout that kills the whole process
group, output capped (head and tail kept), a scrubbed environment, and the approval gate for
the documented dangerous commands (`hermes.tools.dangerous`)."""

from __future__ import annotations

import asyncio
import contextlib
import time

from hermes.tools.dangerous import check_command
from hermes.tools.gate import ApprovalGate
from hermes.tools.processes import ProcessTable
from hermes.tools.registry import ToolContext, ToolError, tool
from hermes.tools.shell import CappedOutput, kill_group, read_into, scrubbed_env, spawn
from hermes.tools.workdir import workdir

# after the command exits, how long its leftover children may hold the output pipe open
DRAIN_S = 1.0


async def approve_command(ctx: ToolContext, command: str) -> str | None:
    """None when the command may run, else the refusal text (see `ApprovalGate.check`)."""
    finding = check_command(command)
    if finding is None:
        return None
    return await ctx.service(ApprovalGate).check(ctx, "terminal", command, finding)


async def run_command(ctx: ToolContext, command: str, seconds: float) -> str:
    settings = ctx.settings
    out = CappedOutput(settings.tools.terminal.output_chars)
    started = time.monotonic()
    proc = await spawn(
        command, str(workdir(settings)), scrubbed_env(settings), stdin=asyncio.subprocess.DEVNULL
    )
    reader = asyncio.create_task(read_into(proc.stdout, out))
    timed_out = False
    try:
        await asyncio.wait_for(proc.wait(), seconds)
    except TimeoutError:
        timed_out = True
    except asyncio.CancelledError:
        await asyncio.shield(kill_group(proc))
        reader.cancel()
        raise
    leftovers = False
    if not timed_out:
        done, _ = await asyncio.wait({reader}, timeout=DRAIN_S)
        leftovers = not done
    await kill_group(proc)  # the group: children a timed-out or finished command left behind
    with contextlib.suppress(asyncio.CancelledError):
        await asyncio.wait_for(reader, DRAIN_S)
    elapsed = time.monotonic() - started
    text = out.text().rstrip("\n") or "(no output)"
    if timed_out:
        return (
            f"{text}\n[timed out after {seconds:g}s: the command and its children were killed; "
            "use background=true for long-running commands]"
        )
    note = (
        "; processes it left running were stopped (use background=true for servers)"
        if leftovers
        else ""
    )
    return f"{text}\n[exit code {proc.returncode}, {elapsed:.1f}s{note}]"


@tool
async def terminal(
    ctx: ToolContext,
    command: str,
    timeout: int | None = None,  # noqa: ASYNC109 - the argument name is the tool's contract
    background: bool = False,
) -> str:
    """Run a shell command (bash) in the working directory; returns output and exit code.

    Args:
        command: The command line.
        timeout: Seconds before it is killed (default 180).
        background: Start it and return an id at once; manage it with the process tool.
    """
    if not command.strip():
        raise ToolError("the command is empty")
    refusal = await approve_command(ctx, command)
    if refusal is not None:
        return refusal
    settings = ctx.settings.tools.terminal
    if background:
        started = await ctx.service(ProcessTable).start(ctx, command)
        return (
            f"Started background process {started.id} (pid {started.pid}). Use process with "
            f"session_id={started.id!r} to poll, log, wait, write or kill it."
        )
    limit = float(timeout) if timeout and timeout > 0 else settings.timeout
    return await run_command(ctx, command, min(limit, settings.max_timeout))
