"""`hermes doctor`: checks config, model endpoint, store and port, one line each (or one
JSON document with `--json`, for scripts and CI)."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from typing import Any, Literal, NoReturn

import typer

from hermes.cli.progress import progress
from hermes.config.settings import ConfigError, Settings, load_settings
from hermes.models.errors import (
    SETUP_HINT,
    ModelAuthError,
    ModelError,
    ModelTimeoutError,
    ModelUnreachableError,
)
from hermes.runtime import open_store, probe_model_client

Status = Literal["ok", "fail", "warn", "note"]
_MARKS: dict[str, str] = {"ok": "ok  ", "fail": "FAIL", "warn": "WARN", "note": "note"}


@dataclass
class Report:
    """The checks as they come: printed one line each, or kept for one JSON document."""

    as_json: bool = False
    checks: list[dict[str, str]] = field(default_factory=list)

    def add(self, status: Status, what: str, detail: str, *, sub: bool = False) -> None:
        self.checks.append({"check": what, "status": status, "detail": detail})
        if not self.as_json:
            typer.echo(f"{_MARKS[status]} {'  ' if sub else ''}{what}: {detail}")

    def line(self, ok: bool, what: str, detail: str) -> bool:
        self.add("ok" if ok else "fail", what, detail)
        return ok

    def finish(self, ok: bool) -> NoReturn:
        if self.as_json:
            typer.echo(json.dumps({"ok": ok, "checks": self.checks}))
        raise typer.Exit(0 if ok else 1)


async def _check_model(settings: Settings, report: Report) -> bool:
    if not settings.model.base_url:
        return report.line(
            False,
            "model endpoint",
            "not set: export OPENAI_BASE_URL=http://host:port/v1 and HERMES_MODEL (or set "
            f"model.base_url and model.name in config.yaml). To get going: {SETUP_HINT}",
        )
    try:
        client = probe_model_client(settings)
    except ConfigError as exc:
        return report.line(False, "model provider", str(exc))
    try:
        models = await client.list_models()
    except ModelError as exc:
        return report.line(
            False,
            "model endpoint",
            f"{settings.model.base_url} is not usable: {str(exc).rstrip('.')}. "
            f"Fix: {_endpoint_fix(exc)}",
        )
    finally:
        await client.aclose()
    ids = [m.get("id", "?") for m in models]
    ok = report.line(
        True, "model endpoint", f"{settings.model.base_url} answers ({len(ids)} models)"
    )
    if not settings.model.name:
        suggestion = f" (it offers: {', '.join(ids[:5])})" if ids else ""
        ok = (
            report.line(
                False, "model name", f"not set; export HERMES_MODEL or set model.name{suggestion}"
            )
            and ok
        )
    elif ids and settings.model.name not in ids:
        report.line(
            True,
            "model name",
            f"{settings.model.name} (not listed by the endpoint; it may still work)",
        )
    else:
        report.line(True, "model name", settings.model.name)
    return ok


def _endpoint_fix(exc: ModelError) -> str:
    """What to do about a model endpoint that does not answer as it should."""
    if isinstance(exc, ModelAuthError):
        return (
            "the key was refused: put a valid key in OPENAI_API_KEY ($HERMES_HOME/.env) "
            "or run `hermes setup`"
        )
    if isinstance(exc, ModelUnreachableError | ModelTimeoutError):
        return (
            "start the model server (`ollama serve`, LM Studio's server, llama-server, "
            "`vllm serve`) or point OPENAI_BASE_URL / model.base_url at one that runs; "
            "`hermes setup` finds local servers"
        )
    return "check that the URL ends in /v1 and speaks the OpenAI API; `hermes setup` checks one"


def _check_port(settings: Settings, report: Report) -> bool:
    from hermes.cli.probe import is_hermes, port_in_use

    host, port = settings.server.host, settings.server.port
    if not port_in_use(host, port):
        return report.line(True, "port", f"{host}:{port} is free for `hermes serve`")
    if asyncio.run(is_hermes(host, port)):
        return report.line(True, "port", f"{host}:{port} is in use by a running `hermes serve`")
    report.add(
        "warn",
        "port",
        f"{host}:{port} is held by another program (Ollama uses 11434 too), so "
        "`hermes serve` cannot start there. Fix: set server.port in config.yaml or HERMES_PORT, "
        "or run `hermes setup`, which picks a free port",
    )
    return True


def _check_tools(settings: Settings, health: dict[str, Any] | None, report: Report) -> None:
    """One `tools:` line: the tools part's health (if it reported) and the workdir; approval
    off is shown loudly (never a failure)."""
    from hermes.tools.gate import approval_off
    from hermes.tools.web import backend_of

    where = (
        settings.tools.workdir or "the current directory (chat) / $HERMES_HOME/workspace (serve)"
    )
    status = str((health or {}).get("status", "ok"))
    mark: Status = "ok" if status in ("ok", "off") else "fail" if status == "error" else "warn"
    problem = f"{status}: {health['error']}; " if health and health.get("error") else ""
    report.add(mark, "tools", f"{problem}workdir {where}")
    if approval_off(settings):
        report.add(
            "warn",
            "tools",
            "tools.terminal.approval is OFF: dangerous terminal commands run without asking anyone",
        )
    backend = backend_of(settings.web.search)
    report.add("ok", "web search", backend or "not configured (web_search will say how)")


PART_CHECK_TIMEOUT_S = 20.0


def _part_detail(result: dict[str, Any]) -> list[tuple[str, str, str]]:
    """(status, label, detail) of the entries a part reports (MCP servers, gateway adapters)."""
    rows = []
    for key in ("servers", "adapters"):
        for name, entry in (result.get(key) or {}).items():
            if not isinstance(entry, dict):
                continue
            state = str(entry.get("status", "connected" if entry.get("connected") else "down"))
            tools = entry.get("tools")
            detail = state + (f" ({len(tools)} tools)" if isinstance(tools, list) else "")
            if entry.get("error"):
                detail += f": {entry['error']}"
            rows.append((state, f"{key[:-1]} {name}", detail))
    return rows


async def _check_parts(settings: Settings, held: dict[str, dict[str, Any]], report: Report) -> bool:
    """Each part's health check (MCP servers, skills, gateway), with a runtime of their own.
    An "error" fails the doctor; anything else that is not ok is shown as a warning. Parts
    named in `held` are not printed: their result is put there for a later line to show."""
    from hermes.runtime import build_runtime

    try:
        runtime = build_runtime(settings)
    except Exception as exc:
        return report.line(False, "parts", f"could not start: {exc}")
    ok = True
    try:
        for name, check in runtime.registry.health_checks:
            try:
                result = await asyncio.wait_for(check(runtime), PART_CHECK_TIMEOUT_S)
            except Exception as exc:
                result = {"status": "error", "error": f"{type(exc).__name__}: {exc}"}
            status = str(result.get("status"))
            if status == "error":
                ok = False
            if name in held:
                held[name] = result
                continue
            if status == "off":
                continue
            good = status in ("ok", "off")
            detail = status + (f": {result['error']}" if result.get("error") else "")
            if not result.get("error") and result.get("detail"):
                detail += f" ({result['detail']})"
            report.add("ok" if good else "fail" if status == "error" else "warn", name, detail)
            for state, label, text in _part_detail(result):
                good_entry = state in ("connected", "ok", "disabled")
                mark: Status = "ok" if good_entry else "warn" if state == "connecting" else "fail"
                report.add(mark, label, text, sub=True)
    finally:
        await runtime.aclose()
    return ok


def _check_config(settings: Settings, report: Report) -> bool:
    """Which config.yaml is read; none at all is normal (defaults + environment), said so."""
    path = settings.home / "config.yaml"
    if path.is_file():
        return report.line(True, "config", f"{path} (home {settings.home})")
    report.add(
        "note",
        "config",
        f"no config.yaml in {settings.home}; using the defaults and the environment. "
        "`hermes setup` creates one",
    )
    return True


def doctor(
    as_json: bool = typer.Option(
        False, "--json", help="One JSON document: {ok, checks: [{check, status, detail}]}."
    ),
) -> None:
    """Check the configuration, the model endpoint, the store and the server port."""
    report = Report(as_json=as_json)
    try:
        settings = load_settings()
    except ConfigError as exc:
        report.line(False, "config", str(exc))
        report.finish(False)
    ok = _check_config(settings, report)
    try:
        store = open_store(settings)
        # the full checks read the whole database (~15 s at a million messages)
        with progress("checking the database and its search index"):
            health = store.health()
        store.close()
        ok = (
            report.line(
                bool(health.get("ok")),
                "store",
                f"{health['path']} schema v{health.get('schema_version')} {health.get('integrity', health.get('error'))}",
            )
            and ok
        )
        if "search_index" in health:
            index_ok = health["search_index"] == "ok"
            detail = health["search_index"]
            if not index_ok and "reindex" not in detail:
                detail += ". Fix: `hermes sessions reindex` rebuilds it from the stored messages"
            ok = report.line(index_ok, "search index", detail) and ok
    except Exception as exc:
        ok = (
            report.line(
                False,
                "store",
                f"{exc}. Fix: check store.url / HERMES_DATABASE_URL and that the database "
                "is reachable and writable (SQLite: the directory of state.db)",
            )
            and ok
        )
    ok = asyncio.run(_check_model(settings, report)) and ok
    held: dict[str, dict[str, Any]] = {"tools": {}}
    ok = asyncio.run(_check_parts(settings, held, report)) and ok
    _check_port(settings, report)
    _check_tools(settings, held["tools"] or None, report)
    report.finish(ok)
