"""`hermes setup gateway <platform>`: ask for one platform's settings, store them in
`$HERMES_HOME/.env` (0600, the only place credentials live), then check them by connecting
once the way `hermes serve` will, and say what is wrong in a sentence.

`hermes setup` itself stays the model setup (`hermes setup` = `hermes setup model`); this
module only adds the `gateway` subcommand beside it (`setup_group`).
"""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import typer
from dotenv import dotenv_values
from typer.core import TyperGroup

from hermes.cli_common import fail
from hermes.config.home import ensure_home, hermes_home
from hermes.config.settings import ConfigError, load_settings
from hermes.fileio import atomic_write
from hermes.gateway.base import AdapterError
from hermes.gateway.platforms import UnknownPlatformError, spec


@dataclass(frozen=True)
class Field:
    var: str
    prompt: str
    secret: bool = False
    required: bool = True
    default: Callable[[], str] | None = None


ALLOWED = "allowed {what} (comma-separated; empty = nobody until paired)"
FIELDS: dict[str, tuple[Field, ...]] = {
    "telegram": (
        Field("TELEGRAM_BOT_TOKEN", "Bot token from @BotFather", secret=True),
        Field("TELEGRAM_ALLOWED_USERS", ALLOWED.format(what="numeric user ids"), required=False),
    ),
    "email": (
        Field("EMAIL_IMAP_HOST", "IMAP server"),
        Field("EMAIL_SMTP_HOST", "SMTP server"),
        Field("EMAIL_USERNAME", "Login name"),
        Field(
            "EMAIL_PASSWORD", "Password (an app password where the provider has them)", secret=True
        ),
        Field("EMAIL_ADDRESS", "The bot's address"),
        Field("EMAIL_ALLOWED_USERS", ALLOWED.format(what="sender addresses"), required=False),
    ),
    "whatsapp": (
        Field(
            "WHATSAPP_TOKEN",
            "Access token (Meta app → WhatsApp → API setup; a system-user token for production)",
            secret=True,
        ),
        Field("WHATSAPP_PHONE_NUMBER_ID", "Phone number ID (not the phone number)"),
        Field(
            "WHATSAPP_APP_SECRET",
            "App secret (App settings → Basic), signs the webhook",
            secret=True,
        ),
        Field(
            "WHATSAPP_VERIFY_TOKEN",
            "Webhook verify token (any string; paste the same into Meta)",
            default=lambda: secrets.token_urlsafe(18),
        ),
        Field("WHATSAPP_ALLOWED_USERS", ALLOWED.format(what="phone numbers"), required=False),
    ),
    "sms": (
        Field("TWILIO_ACCOUNT_SID", "Account SID (AC…)"),
        Field("TWILIO_AUTH_TOKEN", "Auth token", secret=True),
        Field("TWILIO_PHONE_NUMBER", "The Twilio number texts come to (+E.164)"),
        Field("SMS_ALLOWED_USERS", ALLOWED.format(what="phone numbers (+E.164)"), required=False),
    ),
    "slack": (
        Field("SLACK_BOT_TOKEN", "Bot token (xoxb-…, OAuth & Permissions)", secret=True),
        Field("SLACK_APP_TOKEN", "App-level token (xapp-…, scope connections:write)", secret=True),
        Field("SLACK_ALLOWED_USERS", ALLOWED.format(what="member ids (U…)"), required=False),
    ),
    "discord": (
        Field("DISCORD_BOT_TOKEN", "Bot token (developer portal → Bot → Reset Token)", secret=True),
        Field("DISCORD_ALLOWED_USERS", ALLOWED.format(what="user ids"), required=False),
    ),
    "matrix": (
        Field("MATRIX_HOMESERVER", "Homeserver URL (https://matrix.example.org)"),
        Field("MATRIX_USER_ID", "The bot's user id (@hermes:example.org)"),
        Field(
            "MATRIX_ACCESS_TOKEN",
            "Access token (empty to use a password)",
            secret=True,
            required=False,
        ),
        Field(
            "MATRIX_PASSWORD", "Password (empty if you gave a token)", secret=True, required=False
        ),
        Field(
            "MATRIX_ALLOWED_USERS",
            ALLOWED.format(what="user ids (@you:example.org)"),
            required=False,
        ),
    ),
    "signal": (
        Field("SIGNAL_API_BASE", "signal-cli daemon URL (signal-cli daemon --http=127.0.0.1:8080)"),
        Field("SIGNAL_NUMBER", "The account signal-cli runs (+E.164)"),
        Field(
            "SIGNAL_ALLOWED_USERS", ALLOWED.format(what="phone numbers (+E.164)"), required=False
        ),
    ),
    "mattermost": (
        Field("MATTERMOST_URL", "Server URL (https://chat.example.org)"),
        Field("MATTERMOST_TOKEN", "Bot token (Integrations → Bot Accounts)", secret=True),
        Field("MATTERMOST_ALLOWED_USERS", ALLOWED.format(what="user ids"), required=False),
    ),
}

WEBHOOK_NOTES = {
    "whatsapp": "In the Meta app (WhatsApp → Configuration) set the callback URL to "
    "https://<your public host>/gateway/whatsapp, the verify token to WHATSAPP_VERIFY_TOKEN, "
    "and subscribe to `messages`; `hermes serve` must be reachable there (e.g. a reverse proxy).",
    "sms": 'In the Twilio console set the number\'s "A message comes in" webhook (HTTP POST) to '
    "https://<your public host>/gateway/sms; behind a proxy also set gateway.sms.webhook_url to "
    "that exact URL (Twilio signs it).",
}


def _ask(field: Field, current: str | None) -> str:
    if field.secret:
        hint = " (Enter keeps the current one)" if current else ""
        value = typer.prompt(
            f"{field.prompt}{hint}", default="", hide_input=True, show_default=False
        )
        return str(value).strip() or (current or "")
    default = current or (field.default() if field.default else "")
    return str(typer.prompt(field.prompt, default=default, show_default=bool(default))).strip()


def _write_env(path: Path, updates: dict[str, str]) -> None:
    lines = path.read_text(encoding="utf-8").splitlines() if path.exists() else []
    kept = [line for line in lines if line.split("=", 1)[0].strip() not in updates]
    kept += [f"{key}={value}" for key, value in updates.items() if value]
    atomic_write(path, "\n".join(kept) + "\n", mode=0o600)


async def _check(platform: str) -> str | None:
    """Connect once as `hermes serve` would; None when it worked, else the reason."""
    settings = load_settings()
    found = spec(platform, settings=settings)
    if not found.configured(settings):
        return f"{platform} is still missing required settings"
    try:
        adapter = found.create(settings)
        try:
            await asyncio.wait_for(adapter.connect(), 90)
        finally:
            await adapter.disconnect()
    except AdapterError as exc:
        return str(exc)
    except TimeoutError:
        return f"{platform} did not answer within 90 s"
    except Exception as exc:
        return f"{type(exc).__name__}: {exc}"
    return None


def gateway_setup(
    platform: str = typer.Argument(..., help=f"One of: {', '.join(FIELDS)}."),
    check: bool = typer.Option(True, "--check/--no-check", help="Connect once to check."),
) -> None:
    """Set up one messaging platform: its credentials go to $HERMES_HOME/.env, then a check."""
    try:
        spec(platform)
    except UnknownPlatformError as exc:
        fail(str(exc), 2)
    fields = FIELDS.get(platform)
    if fields is None:
        fail(f"{platform!r} has no setup questions yet; set its variables in .env by hand", 2)
    home = ensure_home(hermes_home())
    env_path = home / ".env"
    current = {k: v for k, v in dotenv_values(env_path).items() if v is not None}
    updates: dict[str, str] = {}
    for field in fields:
        value = _ask(field, current.get(field.var))
        if field.required and not value:
            fail(f"{field.var} is required for {platform}", 2)
        updates[field.var] = value
    if platform == "matrix" and not (updates["MATRIX_ACCESS_TOKEN"] or updates["MATRIX_PASSWORD"]):
        fail("Matrix needs MATRIX_ACCESS_TOKEN or MATRIX_PASSWORD", 2)
    _write_env(env_path, updates)
    typer.echo(f"saved {platform} settings in {env_path} (0600)")
    if platform in WEBHOOK_NOTES:
        typer.echo(WEBHOOK_NOTES[platform])
    if not check:
        return
    try:
        problem = asyncio.run(_check(platform))
    except ConfigError as exc:
        fail(str(exc), 2)
    if problem is not None:
        fail(f"{platform} check failed: {problem}", 1)
    typer.echo(f"{platform}: connected fine; `hermes serve` will start it")


class _ModelByDefault(TyperGroup):
    """`hermes setup [options]` keeps meaning the model setup (`hermes setup model`)."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        if not args or (args[0] not in self.commands and args[0] not in ("--help", "-h")):
            args = ["model", *args]
        return super().parse_args(ctx, args)


def setup_group(model_setup: Callable[..., Any]) -> typer.Typer:
    """The `hermes setup` group: `model` (the default) and `gateway <platform>`."""
    group = typer.Typer(
        cls=_ModelByDefault,
        help="First-run configuration: the model (default) or a messaging platform.",
    )
    group.command("model", help=model_setup.__doc__)(model_setup)
    group.command("gateway")(gateway_setup)
    return group
