"""Where cron run outputs are kept: `cron/output/<job_id>/<YYYY-MM-DD_HH-MM-SS>.md`, newest N.

Embedded (SQLite) they are files under the scope's home; with a shared database
(PostgreSQL) the same names are store documents, so `GET /api/jobs/{id}/runs` reads the
same runs on every replica. Each output ends with its delivery record once it was sent.
"""

from __future__ import annotations

import contextlib
import os
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hermes.cron.schedule import describe
from hermes.cron.store import Job, atomic_write, output_dir
from hermes.store.base import DocumentStore

if TYPE_CHECKING:
    from hermes.cron.delivery import DeliveryReport
    from hermes.cron.runner import RunResult

_RUN_TIME = re.compile(r"^\*\*Run Time:\*\* (\S+)$", re.MULTILINE)


def document_prefix(job_id: str) -> str:
    return f"cron/output/{job_id}/"


def render_output(job: Job, result: RunResult) -> str:
    failed = " (FAILED)" if result.status != "ok" else ""
    lines = [
        f"# Cron Job: {job.get('name')}{failed}",
        "",
        f"**Job ID:** {job['id']}",
        f"**Run Time:** {result.started_at.isoformat(timespec='seconds')}",
        f"**Schedule:** {describe(job.get('schedule'))}",
        f"**Session:** {result.session_id}",
        "",
        "## Prompt",
        "",
        result.prompt or "(empty)",
        "",
    ]
    if result.status == "ok":
        lines += ["## Response", "", result.response or "(No response generated)", ""]
    else:
        lines += ["## Error", "", "```", result.error or "unknown error", "```", ""]
    return "\n".join(lines)


def save_output(
    settings: Any,
    scope: str,
    job: Job,
    result: RunResult,
    documents: DocumentStore | None = None,
) -> Path:
    """Write the run's document, then keep only the newest `cron.output_retention`. The
    returned path is relative (`cron/output/…`) when the output is a store document."""
    text = render_output(job, result)
    stamp = f"{result.started_at:%Y-%m-%d_%H-%M-%S}"
    keep = settings.cron.output_retention
    if documents is not None:
        return _save_document(documents, scope, job["id"], stamp, text, keep)
    folder = output_dir(settings.home, scope, job["id"])
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    path, n = folder / f"{stamp}.md", 1
    while path.exists():
        n += 1
        path = folder / f"{stamp}_{n}.md"
    atomic_write(path, text.encode("utf-8"))
    prune_outputs(folder, keep)
    return path


def _save_document(
    documents: DocumentStore, scope: str, job_id: str, stamp: str, text: str, keep: int
) -> Path:
    prefix = document_prefix(job_id)
    n = 1
    while True:
        name = f"{prefix}{stamp}.md" if n == 1 else f"{prefix}{stamp}_{n}.md"
        with documents.edit_document(scope, name) as edit:
            if edit is not None and edit.text is None:
                edit.new_text = text
                break
        n += 1
    if keep > 0:
        names = documents.list_documents(scope, prefix)  # stamps sort as times
        documents.delete_documents(scope, names[:-keep])
    return Path(name)


def prune_outputs(folder: Path, keep: int) -> int:
    if keep <= 0:
        return 0
    docs = sorted(folder.glob("*.md"), key=lambda p: (p.stat().st_mtime_ns, p.name))
    removed = 0
    for old in docs[:-keep]:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(old)
            removed += 1
    return removed


def record_delivery(
    path: Path | None,
    report: DeliveryReport,
    *,
    documents: DocumentStore | None = None,
    scope: str = "",
) -> None:
    """Append the delivery outcome to the run's saved document (shown by `/runs`)."""
    if path is None:
        return
    lines = ["", "## Delivery", ""]
    lines += [f"- delivered: {target}" for target in report.delivered]
    lines += [f"- failed: {error}" for error in report.errors]
    if report.skipped:
        lines.append(f"- not sent: {report.skipped}")
    section = "\n".join(lines) + "\n"
    if documents is not None:
        with documents.edit_document(scope, str(path)) as edit:
            if edit is not None and edit.text is not None:
                edit.new_text = edit.text + section
        return
    if not path.exists():
        return
    with path.open("a", encoding="utf-8") as fh:
        fh.write(section)


def list_outputs(
    settings: Any, scope: str, job_id: str, documents: DocumentStore | None = None
) -> list[dict[str, Any]]:
    """Saved run documents of a job, newest first (for the API and CLI)."""
    if documents is not None:
        names = reversed(documents.list_documents(scope, document_prefix(job_id)))
        found = [(n, documents.read_document(scope, n)) for n in names]
        return [_describe(Path(n), t, None) for n, t in found if t is not None]
    folder = output_dir(settings.home, scope, job_id)
    if not folder.is_dir():
        return []
    docs = sorted(folder.glob("*.md"), key=lambda p: (p.stat().st_mtime_ns, p.name), reverse=True)
    runs = []
    for doc in docs:
        try:
            text = doc.read_text(encoding="utf-8")
            mtime = doc.stat().st_mtime
        except OSError:
            continue
        runs.append(_describe(doc, text, mtime))
    return runs


def _describe(path: Path, text: str, mtime: float | None) -> dict[str, Any]:
    created: datetime | None
    if mtime is not None:
        created = datetime.fromtimestamp(mtime, UTC)
    else:  # a document: the run time it records
        match = _RUN_TIME.search(text)
        try:
            created = datetime.fromisoformat(match.group(1)).astimezone(UTC) if match else None
        except ValueError:
            created = None
    return {
        "file": path.name,
        "path": str(path),
        "size": len(text.encode("utf-8")),
        "status": "error" if "(FAILED)" in text.split("\n", 1)[0] else "ok",
        "delivery": parse_delivery(text),
        "created_at": created.isoformat(timespec="seconds") if created else None,
        "content": text,
    }


def parse_delivery(text: str) -> dict[str, Any] | None:
    """The delivery section of a run document as {"delivered": [...], "failed": [...]}."""
    _, found, section = text.rpartition("\n## Delivery\n")
    if not found:
        return None
    outcome: dict[str, Any] = {"delivered": [], "failed": [], "not_sent": None}
    for line in section.splitlines():
        if line.startswith("- delivered: "):
            outcome["delivered"].append(line[len("- delivered: ") :])
        elif line.startswith("- failed: "):
            outcome["failed"].append(line[len("- failed: ") :])
        elif line.startswith("- not sent: "):
            outcome["not_sent"] = line[len("- not sent: ") :]
    outcome["status"] = (
        "failed" if outcome["failed"] else ("delivered" if outcome["delivered"] else "not_sent")
    )
    return outcome
