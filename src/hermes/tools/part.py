"""The built-in tools part (SPEC §11): files, terminal + process, web, and the per-runtime
state they share (approval memory, background processes, the secret redactor). `delegate_task`
is the delegation part's (`hermes.delegation`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from hermes.plugins import Registry

if TYPE_CHECKING:
    from hermes.runtime import Runtime


def _gate(runtime: Runtime) -> object:
    from hermes.store.records import records_of
    from hermes.tools.gate import ApprovalGate

    return ApprovalGate(runtime.settings, records_of(runtime.store))


def _processes(runtime: Runtime) -> object:
    from hermes.tools.processes import ProcessTable

    return ProcessTable(runtime.settings)


def _redactor(runtime: Runtime) -> object:
    from hermes.redact import Redactor, settings_secrets

    return Redactor(settings_secrets(runtime.settings))


async def _health(runtime: Runtime) -> dict[str, Any]:
    from hermes.tools.gate import approval_off
    from hermes.tools.web import backend_of
    from hermes.tools.workdir import workdir

    settings = runtime.settings
    report: dict[str, Any] = {
        "status": "ok",
        "workdir": str(workdir(settings)),
        "approval": settings.tools.terminal.approval,
        "web_search": backend_of(settings.web.search) or "not configured",
    }
    if approval_off(settings):
        report["warning"] = "tools.terminal.approval is off: dangerous commands run unasked"
    return report


def register(hermes: Registry) -> None:
    from hermes.tools.files import patch, read_file, write_file
    from hermes.tools.processes import process
    from hermes.tools.search import search_files
    from hermes.tools.terminal import terminal
    from hermes.tools.web import web_extract, web_search

    for file_tool in (read_file, write_file, patch, search_files):
        hermes.tool(file_tool, group="files")
    hermes.tool(terminal, group="terminal")
    hermes.tool(process, group="terminal")
    hermes.tool(web_search, group="web")
    hermes.tool(web_extract, group="web")
    for factory in (_gate, _processes, _redactor):
        hermes.component(factory)
    hermes.health("tools", _health)
