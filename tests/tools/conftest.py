"""Tools driven through `Toolset.call` (the path the agent loop uses) on a real runtime, with
the workdir in a temp folder."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from hermes.config.settings import Settings
from hermes.runtime import Runtime
from hermes.store.base import DEFAULT_SCOPE
from hermes.tools.approval import ApprovalRequest, Decision
from hermes.tools.registry import ToolContext, ToolOutcome


@pytest.fixture
def workdir(tmp_path: Path, settings: Settings) -> Path:
    root = tmp_path / "work"
    root.mkdir()
    settings.tools.workdir = root
    return root.resolve()


@dataclass
class ScriptedApprover:
    """Answers approval requests with a fixed decision and records them."""

    decision: Decision = "once"
    asked: list[ApprovalRequest] = field(default_factory=list)

    async def approve(self, request: ApprovalRequest) -> Decision:
        self.asked.append(request)
        return self.decision


Call = Callable[..., Any]


@dataclass
class Tools:
    runtime: Runtime
    scope: str = DEFAULT_SCOPE
    session_id: str = "tool-tests"
    platform: str = "cli"
    approver: Any = None

    def context(self) -> ToolContext:
        return ToolContext(
            scope=self.scope,
            session_id=self.session_id,
            services=self.runtime.services,
            platform=self.platform,
            approver=self.approver,
        )

    async def __call__(self, name: str, **arguments: Any) -> ToolOutcome:
        return await self.runtime.agent.toolset.call(name, json.dumps(arguments), self.context())

    async def text(self, name: str, **arguments: Any) -> str:
        return (await self(name, **arguments)).text


@pytest.fixture
def tools(runtime: Runtime, workdir: Path) -> Tools:
    return Tools(runtime)
