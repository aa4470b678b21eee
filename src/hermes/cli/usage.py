"""`hermes usage [--json] [--days N] [--user U]`: tokens and cost per day, model and user,
read from the store (the same report as `GET /api/usage`). A running server writes its
turns' usage every few seconds, so the newest turns may show a moment later."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import typer

from hermes.cli_common import fail, settings_or_exit
from hermes.scopes import InvalidIdError, scope_for_user
from hermes.store.base import StoreError


def usage(
    as_json: bool = typer.Option(False, "--json", help="Machine-readable output."),
    days: int = typer.Option(30, "--days", min=1, max=3660, help="Days back, today included."),
    user: str | None = typer.Option(
        None, "--user", help="One end user's usage (default: everyone, the owner included)."
    ),
) -> None:
    """Tokens and cost per day, model and user (cost from model.pricing in config.yaml)."""
    from hermes.observability import usage as report_usage
    from hermes.runtime import open_store

    settings = settings_or_exit()
    try:
        scope = scope_for_user(user) if user is not None else None
    except InvalidIdError as exc:
        fail(str(exc), 2)
    last = report_usage.today(settings)
    first = last - timedelta(days=days - 1)
    since, until = report_usage.day_bounds(settings, first, last)
    try:
        store = open_store(settings)
    except StoreError as exc:
        fail(str(exc), 1)
    try:
        totals = (
            store.usage.usage_totals(since=since, until=until, scope=scope) if store.usage else []
        )
    except StoreError as exc:
        fail(str(exc), 1)
    finally:
        store.close()
    body = report_usage.report(settings, totals, report_usage.DIMENSIONS).as_dict()
    body["from"], body["to"] = first.isoformat(), last.isoformat()
    if as_json:
        typer.echo(json.dumps(body))
        return
    for line in _table(body):
        typer.echo(line)


def _table(body: dict[str, Any]) -> list[str]:
    rows, totals = body["usage"], body["totals"]
    if not rows:
        return [f"No model usage recorded from {body['from']} to {body['to']}."]
    lines = [f"{'day':<10}  {'model':<28} {'user':<20} {'prompt':>10} {'completion':>10} cost"]
    for r in rows:
        lines.append(
            f"{r['day']:<10}  {r['model'][:28]:<28} {(r['user'] or '(owner)')[:20]:<20} "
            f"{r['prompt_tokens']:>10,} {r['completion_tokens']:>10,} {_dollars(r['cost_usd'])}"
        )
    lines.append(
        f"{'total':<10}  {'':<28} {'':<20} {totals['prompt_tokens']:>10,} "
        f"{totals['completion_tokens']:>10,} {_dollars(totals['cost_usd'])}"
    )
    if totals["unpriced_models"]:
        lines.append(
            "no price for: " + ", ".join(totals["unpriced_models"]) + " (model.pricing.input/"
            "output in config.yaml prices the configured model, USD per million tokens)"
        )
    return lines


def _dollars(value: float | None) -> str:
    return "-" if value is None else f"${value:,.4f}"
