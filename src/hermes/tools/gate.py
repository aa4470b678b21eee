"""The approval gate every dangerous tool action passes: remembers "for this session" and
"always" answers, asks the surface's approver otherwise, and refuses when nobody can answer.

"always" is kept in `$HERMES_HOME/approvals.json` (one list of pattern keys, written
atomically) so it survives restarts; "session" lives as long as the process. With
`tools.terminal.approval: off` every dangerous command runs unasked and each one is logged
as a warning; hardline commands never run.
"""

from __future__ import annotations

import json
import logging
import threading
from collections import OrderedDict
from pathlib import Path

from hermes.config.settings import Settings
from hermes.fileio import atomic_write
from hermes.tools.approval import APPROVED, ApprovalRequest
from hermes.tools.dangerous import Finding
from hermes.tools.registry import ToolContext

log = logging.getLogger(__name__)

ALWAYS_FILE = "approvals.json"
_MAX_SESSIONS = 1000


def approval_off(settings: Settings) -> bool:
    return settings.tools.terminal.approval == "off"


class ApprovalGate:
    """One per runtime (a component); safe to share between concurrent turns."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.path: Path = settings.home / ALWAYS_FILE
        self._lock = threading.Lock()
        self._sessions: OrderedDict[tuple[str, str], set[str]] = OrderedDict()
        if approval_off(settings):
            log.warning(
                "tools.terminal.approval is off: dangerous terminal commands run WITHOUT asking"
            )

    # -- "always" -------------------------------------------------------------------------

    def always(self) -> set[str]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return set()
        keys = data.get("always") if isinstance(data, dict) else None
        return {k for k in keys if isinstance(k, str)} if isinstance(keys, list) else set()

    def _remember_always(self, key: str) -> None:
        with self._lock:
            keys = self.always() | {key}
            atomic_write(self.path, json.dumps({"always": sorted(keys)}, indent=2) + "\n")

    def _remember_session(self, scope: str, session_id: str, key: str) -> None:
        with self._lock:
            self._sessions.setdefault((scope, session_id), set()).add(key)
            self._sessions.move_to_end((scope, session_id))
            while len(self._sessions) > _MAX_SESSIONS:
                self._sessions.popitem(last=False)

    def _approved_before(self, scope: str, session_id: str, key: str) -> bool:
        return key in self._sessions.get((scope, session_id), ()) or key in self.always()

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
        if self._approved_before(ctx.scope, ctx.session_id, finding.key):
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
            self._remember_session(ctx.scope, ctx.session_id, finding.key)
        elif decision == "always":
            self._remember_always(finding.key)
        return None
