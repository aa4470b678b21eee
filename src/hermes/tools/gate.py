"""The approval gate every dangerous tool action passes: remembers "for this session" and
"always" answers, asks the surface's approver otherwise, and refuses when nobody can answer.

"always" and "session" answers are store records (`approval_always`, `approval_session`:
state.db alone, PostgreSQL for every replica), so they survive restarts and hold on every
replica; an `$HERMES_HOME/approvals.json` left by an older version is still honoured. With
`tools.terminal.approval: off` every dangerous command runs unasked and each one is logged
as a warning; hardline commands never run.
"""

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path

from hermes.config.settings import Settings
from hermes.store.base import DEFAULT_SCOPE, RecordStore
from hermes.tools.approval import APPROVED, ApprovalRequest
from hermes.tools.dangerous import Finding
from hermes.tools.registry import ToolContext

log = logging.getLogger(__name__)

ALWAYS_FILE = "approvals.json"


def approval_off(settings: Settings) -> bool:
    return settings.tools.terminal.approval == "off"


ALWAYS = "approval_always"
SESSION = "approval_session"
SESSION_TTL = 7 * 86400.0


class ApprovalGate:
    """One per runtime (a component); safe to share between concurrent turns. Blocking
    store calls run in worker threads."""

    def __init__(self, settings: Settings, records: RecordStore) -> None:
        self.settings = settings
        self.records = records
        self.path: Path = settings.home / ALWAYS_FILE
        if approval_off(settings):
            log.warning(
                "tools.terminal.approval is off: dangerous terminal commands run WITHOUT asking"
            )

    # -- "always" and "session" -----------------------------------------------------------

    def always(self) -> set[str]:
        """Pattern keys approved for good (and those of an older version's approvals.json)."""
        keys = {r.key for r in self.records.list_records(ALWAYS, DEFAULT_SCOPE)}
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return keys
        legacy = data.get("always") if isinstance(data, dict) else None
        if isinstance(legacy, list):
            keys |= {k for k in legacy if isinstance(k, str)}
        return keys

    def _remember_always(self, key: str) -> None:
        self.records.put_record(ALWAYS, DEFAULT_SCOPE, key, {})

    def _remember_session(self, scope: str, session_id: str, key: str) -> None:
        self.records.put_record(SESSION, scope, f"{session_id}|{key}", {}, ttl=SESSION_TTL)

    def _approved_before(self, scope: str, session_id: str, key: str) -> bool:
        found = self.records.get_record(SESSION, scope, f"{session_id}|{key}")
        return found is not None or key in self.always()

    # -- the check ------------------------------------------------------------------------

    async def check(self, ctx: ToolContext, tool: str, action: str, finding: Finding) -> str | None:
        """None when the action may go ahead; else the refusal to return to the model."""
        if finding.hardline:
            log.warning("refused a hardline %s command (%s)", tool, finding.key)
            return (
                f"Refused: this command {finding.reason}. It is never run, not even with "
                "approval. Do not try variations of it; tell the user what you wanted to do."
            )
        if approval_off(self.settings):
            log.warning(
                "approval is off: running a dangerous %s command (%s) unasked", tool, finding.key
            )
            return None
        if await asyncio.to_thread(self._approved_before, ctx.scope, ctx.session_id, finding.key):
            return None
        if ctx.approver is None:
            return (
                f"Approval needed: this command {finding.reason}, and nobody can approve it "
                f"here (surface: {ctx.platform}). It was not run. Ask the user to run it "
                "themselves or to approve it from `hermes chat`, or find a safer way."
            )
        request = ApprovalRequest(tool, action, finding.reason, ctx.scope, ctx.session_id)
        decision = await ctx.approver.approve(request)
        log.info("approval for %s (%s): %s", tool, finding.key, decision)
        if decision not in APPROVED:
            return (
                f"Denied: the user did not approve this command ({finding.reason}). It was not "
                "run. Do not retry it; ask the user how to proceed."
            )
        if decision == "session":
            await asyncio.to_thread(self._remember_session, ctx.scope, ctx.session_id, finding.key)
        elif decision == "always":
            await asyncio.to_thread(self._remember_always, finding.key)
        return None
