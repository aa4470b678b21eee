"""`delegate_task`: hand a self-contained goal to a sub-agent with a fresh context, a subset of
the caller's tools (never delegation or memory writes), a step limit, and get back its final
answer and a short trace. Up to three sub-agents run at once (per runtime)."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from typing import Any

from hermes.agent.loop import Agent
from hermes.agent.tool_loop import Limits, ToolChat, run_tool_loop
from hermes.config.settings import Settings
from hermes.models.errors import ModelError
from hermes.models.types import Completion
from hermes.tools.registry import ToolContext, ToolError, Toolset, tool
from hermes.tools.toolsets import SURFACE_DELEGATE, ToolGroups
from hermes.tools.workdir import workdir

MAX_TASKS = 3
ANSWER_CHARS = 8000
TRACE_STEPS = 12
SUBAGENT_PROMPT = (
    "You are a sub-agent: another agent gave you one goal. Work on it with your tools, "
    "without asking questions (nobody will answer). When done, reply with a concise final "
    "report: what you found or changed (files, commands, results), and anything left undone. "
    "Working directory: {workdir}."
)
LAST_STEP_NOTE = "Step limit reached: do not call tools; give your final report now."


class Delegations:
    """Bounds how many sub-agents run at once in this runtime (a component)."""

    def __init__(self, settings: Settings) -> None:
        self.slots = asyncio.Semaphore(settings.tools.delegate.max_parallel)


@dataclass
class _Run:
    goal: str
    answer: str = ""
    trace: list[str] = field(default_factory=list)
    steps: int = 0
    error: str | None = None


def _args_preview(arguments: str) -> str:
    try:
        parsed = json.loads(arguments or "{}")
    except ValueError:
        return "…"
    if not isinstance(parsed, dict):
        return "…"
    parts = [f"{k}={str(v)[:40]!r}" for k, v in list(parsed.items())[:2]]
    return ", ".join(parts)


def _subset(ctx: ToolContext, agent: Agent, toolsets: tuple[str, ...]) -> Toolset:
    allowed = agent.toolset_for(ctx.scope, SURFACE_DELEGATE)
    if not toolsets:
        return allowed
    groups = ctx.services.find(ToolGroups) or ToolGroups()
    wanted = set(toolsets)
    picked = allowed.only(n for n in allowed.names() if n in wanted or groups.group_of(n) in wanted)
    if not len(picked):
        raise ToolError(
            f"none of {sorted(wanted)} is available to a sub-agent; choose from tools "
            f"{', '.join(allowed.names()) or 'none'}"
        )
    return picked


async def _run_one(ctx: ToolContext, agent: Agent, tools: Toolset, run: _Run, context: str) -> None:
    """The sub-agent's conversation: the agent's tool loop over a fresh context, its calls of
    one step run at once, and past the step limit one closing call for its report."""
    settings = ctx.settings
    user = run.goal if not context else f"{run.goal}\n\nContext from the caller:\n{context}"
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": SUBAGENT_PROMPT.format(workdir=workdir(settings))},
        {"role": "user", "content": user},
    ]
    sub_ctx = ToolContext(
        scope=ctx.scope,
        session_id=ctx.session_id,
        services=ctx.services,
        platform=ctx.platform,
        approver=ctx.approver,
    )
    conversation = ToolChat(agent.model, tools, sub_ctx, messages, concurrent=True)

    async def ask(offer: bool) -> Completion:
        completion = await conversation.ask(offer)
        run.steps += offer  # the closing call is no step
        return completion

    async def act(completion: Completion) -> bool:
        for call, outcome in await conversation.run(completion):
            state = "ok" if outcome.ok else "failed"
            run.trace.append(f"{call.name}({_args_preview(call.arguments)}) {state}")
        return False

    max_steps = settings.tools.delegate.max_steps
    try:
        end = await run_tool_loop(ask, act, Limits(max_steps, LAST_STEP_NOTE), messages)
    except ModelError as exc:
        run.error = f"the model failed: {exc}"
        return
    run.answer = (end.completion.content if end.completion else None) or ""
    if end.how == "closed":
        run.error = f"stopped at the step limit ({max_steps})"


def _report(index: int, total: int, run: _Run) -> str:
    answer = run.answer.strip() or "(no answer)"
    if len(answer) > ANSWER_CHARS:
        answer = answer[:ANSWER_CHARS] + "… [cut]"
    trace = run.trace[:TRACE_STEPS]
    if len(run.trace) > TRACE_STEPS:
        trace.append(f"… {len(run.trace) - TRACE_STEPS} more tool calls")
    head = f"[task {index}/{total}] {run.goal[:100]}" if total > 1 else f"[task] {run.goal[:100]}"
    lines = [head, f"Answer: {answer}"]
    if run.error:
        lines.append(f"Note: {run.error}")
    lines.append(f"Trace ({run.steps} steps): " + ("; ".join(trace) or "no tool calls"))
    return "\n".join(lines)


@tool
async def delegate_task(
    ctx: ToolContext,
    goal: str = "",
    context: str = "",
    toolsets: tuple[str, ...] = (),
    tasks: tuple[str, ...] = (),
) -> str:
    """Give a self-contained goal to a sub-agent with a fresh context; returns its report.

    Args:
        goal: What the sub-agent must achieve.
        context: Facts it needs (it cannot see this conversation).
        toolsets: Tool groups or tools it may use (default: yours, minus delegation and memory).
        tasks: Up to 3 goals to run in parallel instead of goal.
    """
    goals = [g.strip() for g in (tasks or (goal,)) if g.strip()]
    if not goals:
        raise ToolError("give a goal (or up to 3 tasks)")
    if len(goals) > MAX_TASKS:
        raise ToolError(f"{len(goals)} tasks given; at most {MAX_TASKS} run in parallel")
    agent = ctx.service(Agent)
    tools = _subset(ctx, agent, toolsets)
    slots = ctx.service(Delegations).slots
    runs = [_Run(g) for g in goals]

    async def bounded(run: _Run) -> None:
        async with slots:
            await _run_one(ctx, agent, tools, run, context)

    await asyncio.gather(*(bounded(r) for r in runs))
    return "\n\n".join(_report(i, len(runs), r) for i, r in enumerate(runs, start=1))
