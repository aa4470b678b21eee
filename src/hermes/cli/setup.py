"""`hermes setup`: first-run configuration, written to config.yaml and .env (0600)."""

from __future__ import annotations

import asyncio
import os
import secrets
from pathlib import Path
from typing import Any

import typer
import yaml

from hermes.cli.common import fail
from hermes.config.home import ensure_home, hermes_home
from hermes.config.settings import ConfigError, load_settings
from hermes.models.errors import ModelError
from hermes.runtime import make_model_client


def _update_yaml(path: Path, updates: dict[str, dict[str, Any]]) -> None:
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) if path.exists() else {}
    except yaml.YAMLError:
        fail(f"{path} is not valid YAML; fix or move it, then run `hermes setup` again", 2)
    data = data if isinstance(data, dict) else {}
    for section, values in updates.items():
        node = data.setdefault(section, {})
        node.update({k: v for k, v in values.items() if v not in (None, "")})
    tmp = path.with_suffix(".yaml.tmp")
    tmp.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    os.replace(tmp, path)


def _update_env(path: Path, updates: dict[str, str]) -> None:
    lines = path.read_text(encoding="utf-8").splitlines() if path.exists() else []
    kept = [line for line in lines if line.split("=", 1)[0].strip() not in updates]
    kept += [f"{key}={value}" for key, value in updates.items() if value]
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write("\n".join(kept) + "\n")
    path.chmod(0o600)


def setup(
    base_url: str = typer.Option(
        ...,
        prompt="Model endpoint (OpenAI-compatible base URL)",
        help="e.g. http://localhost:8000/v1",
    ),
    model: str = typer.Option(..., prompt="Model name", help="As the endpoint names it."),
    api_key: str = typer.Option(
        "",
        prompt="Model API key (empty if none)",
        hide_input=True,
        help="Stored in .env (0600), never in config.yaml.",
    ),
    server_key: bool = typer.Option(
        False,
        "--server-key/--no-server-key",
        prompt="Generate a server key (needed to serve beyond localhost or per-user memory)?",
        help="Generate HERMES_API_KEY for `hermes serve`.",
    ),
) -> None:
    """Write a first configuration interactively (or from the options) and check the endpoint."""
    if not base_url.startswith(("http://", "https://")):
        fail(f"{base_url!r} is not an http(s) URL", 2)
    home = ensure_home(hermes_home())
    _update_yaml(home / "config.yaml", {"model": {"base_url": base_url, "name": model}})
    env_updates = {"OPENAI_API_KEY": api_key}
    key = secrets.token_urlsafe(24) if server_key else ""
    if key:
        env_updates["HERMES_API_KEY"] = key
    _update_env(home / ".env", env_updates)
    typer.echo(f"wrote {home / 'config.yaml'} and {home / '.env'}")
    if key:
        typer.echo(f"server key (also in .env): {key}")
    try:
        settings = load_settings()
    except ConfigError as exc:
        fail(str(exc), 2)
    client = make_model_client(settings)
    client.max_retries = min(client.max_retries, 1)  # a check: one retry, not the full back-off

    async def check() -> str:
        try:
            models = await client.list_models()
            return f"the endpoint answers ({len(models)} models)"
        except ModelError as exc:
            return f"warning: {exc}"
        finally:
            await client.aclose()

    typer.echo(asyncio.run(check()))
