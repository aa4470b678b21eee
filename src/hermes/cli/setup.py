"""`hermes setup`: find the user's model (local servers first, else a remote endpoint with a
key check), keep Hermes off a port someone else holds, and write config.yaml and .env (0600).

Every answer can also be given as an option, so scripts can run it without questions.
"""

from __future__ import annotations

import asyncio
import os
import secrets
from pathlib import Path
from typing import Any

import typer
import yaml

from hermes.cli.probe import (
    KINDS,
    REMOTES,
    Found,
    ProbeConfigError,
    find_local_servers,
    free_port,
    is_hermes,
    port_in_use,
    probe_ports,
)
from hermes.cli_common import fail
from hermes.config.home import ensure_home, hermes_home
from hermes.config.settings import ConfigError, Settings, load_settings
from hermes.models.errors import ModelAuthError, ModelError
from hermes.runtime import probe_model_client

EMPTY_HINT = {
    "ollama": "pull one first: `ollama pull llama3.2`",
    "lmstudio": "load one in LM Studio (Developer tab) first",
    "llamacpp": "start llama-server with -m <model.gguf>",
    "vllm": "start vLLM with a model (`vllm serve <model>`)",
}
KEY_TRIES = 3


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


# -- finding the model ------------------------------------------------------------------------


def _show_local(found: list[Found]) -> list[tuple[Found, str]]:
    """Print what the probe found; the (server, model) choices, numbered from 1."""
    try:
        targets = probe_ports()
    except ProbeConfigError as exc:
        fail(str(exc), 2)
    seen = {f.kind.key for f in found}
    missing = [f"{kind.label} ({port})" for kind, port in targets if kind.key not in seen]
    choices: list[tuple[Found, str]] = []
    for server in found:
        if not server.models:
            typer.echo(
                f"  {server.kind.label} on port {server.port} has no models: "
                f"{EMPTY_HINT[server.kind.key]}"
            )
        for name in server.models:
            choices.append((server, name))
            typer.echo(f"  {len(choices):>2}) {name}  ({server.kind.label}, port {server.port})")
    if missing:
        typer.echo(f"  not running here: {', '.join(missing)}")
    return choices


async def _check_endpoint(base_url: str, key: str) -> list[str]:
    """The endpoint's model ids; raises ModelError (ModelAuthError for a refused key)."""
    from hermes.models.client import OpenAICompatClient  # (aiohttp: only when asked)

    client = OpenAICompatClient(
        base_url=base_url, api_key=key or None, model=None, timeout=10.0, max_retries=0
    )
    try:
        return [str(m.get("id")) for m in await client.list_models() if m.get("id")]
    finally:
        await client.aclose()


def _remote(base_url: str | None, api_key: str | None) -> tuple[str, str, list[str]]:
    """(base URL, key, model ids) of a remote endpoint, the key checked against it."""
    if base_url is None:
        where = typer.prompt("Endpoint: openai, openrouter, or a base URL", default="openai")
        base_url = REMOTES.get(where.strip().lower(), where.strip())
    if not base_url.startswith(("http://", "https://")):
        fail(f"{base_url!r} is not an http(s) URL (e.g. https://api.openai.com/v1)", 2)
    for attempt in range(1, KEY_TRIES + 1):
        key = api_key
        if key is None:
            key = typer.prompt(
                "API key (empty if none)", default="", hide_input=True, show_default=False
            )
        try:
            models = asyncio.run(_check_endpoint(base_url, key))
        except ModelAuthError as exc:
            typer.echo(f"The endpoint refused that key: {exc}")
            if api_key is not None or attempt == KEY_TRIES:
                fail(f"no working key for {base_url}; get one from the provider's dashboard", 1)
            continue
        except ModelError as exc:
            typer.echo(f"warning: could not list the endpoint's models: {exc}")
            models = []
        else:
            typer.echo(f"The key works: {base_url} offers {len(models)} model(s).")
        return base_url, key, models
    raise AssertionError("unreachable")


def _pick_model(offered: list[str], given: str | None) -> str:
    if given:
        return given
    if offered:
        shown = offered[:15]
        typer.echo("Models: " + ", ".join(shown) + (" …" if len(offered) > 15 else ""))
    default = next((m for m in ("gpt-4o-mini", "openai/gpt-4o-mini") if m in offered), None)
    name: str = typer.prompt("Model name", default=default or (offered[0] if offered else None))
    return name.strip()


def _choose(
    base_url: str | None, model: str | None, api_key: str | None
) -> tuple[str, str, str, list[Found]]:
    """(base URL, model, key, local servers found) from the options, the probe and the user."""
    if base_url is not None:
        url, key, offered = _remote(base_url, api_key)
        return url, _pick_model(offered, model), key, []
    typer.echo("Looking for a model server on this machine (Ollama, LM Studio, llama.cpp, vLLM)…")
    try:
        found = asyncio.run(find_local_servers())
    except ProbeConfigError as exc:
        fail(str(exc), 2)
    choices = _show_local(found)
    typer.echo("   r) a remote endpoint (OpenAI, OpenRouter, or any OpenAI-compatible URL)")
    answer = typer.prompt("Use", default="1" if choices else "r").strip().lower()
    if answer.isdigit() and 1 <= int(answer) <= len(choices):
        server, name = choices[int(answer) - 1]
        return server.base_url, model or name, api_key or "", found
    if answer not in ("r", "remote"):
        fail(f"{answer!r} is not one of the choices; run `hermes setup` again", 2)
    url, key, offered = _remote(None, api_key)
    return url, _pick_model(offered, model), key, found


# -- the port -------------------------------------------------------------------------------


def _port_update(settings: Settings, found: list[Found]) -> dict[str, Any]:
    """Move Hermes off its port when another program (Ollama, by default) holds it."""
    host, port = settings.server.host, settings.server.port
    if not port_in_use(host, port) or asyncio.run(is_hermes(host, port)):
        return {}
    holder = next((f.kind.label for f in found if f.port == port), "another program")
    new = free_port(host, port + 1)
    default = " (Ollama's default port is also Hermes' default)" if holder == "Ollama" else ""
    typer.echo(
        f"{holder} is listening on port {port}{default}: Hermes will use port {new} instead "
        f"(server.port in config.yaml). Point clients at http://localhost:{new}/v1."
    )
    if os.environ.get("HERMES_PORT"):
        typer.echo(
            f"note: HERMES_PORT={os.environ['HERMES_PORT']} is set and wins over config.yaml"
        )
    return {"port": new}


def setup(
    base_url: str | None = typer.Option(
        None, "--base-url", help="Skip the search: this OpenAI-compatible base URL."
    ),
    model: str | None = typer.Option(
        None, "--model", help="The model name, as the endpoint names it."
    ),
    api_key: str | None = typer.Option(
        None, "--api-key", help="The endpoint's key (stored in .env, 0600, never config.yaml)."
    ),
    server_key: bool | None = typer.Option(
        None,
        "--server-key/--no-server-key",
        help="Generate HERMES_API_KEY for `hermes serve` (needed beyond localhost).",
    ),
) -> None:
    """Find a model (local servers first), check it, and write the configuration."""
    home = ensure_home(hermes_home())
    try:
        before = load_settings()
    except ConfigError as exc:
        fail(str(exc), 2)
    url, name, key, found = _choose(base_url, model, api_key)
    if not name:
        fail("no model name given; run `hermes setup` again and pick one", 2)
    updates: dict[str, dict[str, Any]] = {"model": {"base_url": url, "name": name}}
    server = _port_update(before, found)
    if server:
        updates["server"] = server
    if server_key is None:
        server_key = typer.confirm(
            "Generate a server key (needed to serve beyond localhost or per-user memory)?",
            default=False,
        )
    _update_yaml(home / "config.yaml", updates)
    env_updates = {"OPENAI_API_KEY": key}
    generated = secrets.token_urlsafe(24) if server_key else ""
    if generated:
        env_updates["HERMES_API_KEY"] = generated
    _update_env(home / ".env", env_updates)
    typer.echo(f"wrote {home / 'config.yaml'} and {home / '.env'}")
    if generated:
        typer.echo(f"server key (also in .env): {generated}")
    _final_check()


def _final_check() -> None:
    try:
        settings = load_settings()
        client = probe_model_client(settings)
    except ConfigError as exc:
        fail(str(exc), 2)

    async def check() -> str:
        try:
            models = await client.list_models()
            return f"the endpoint answers ({len(models)} models)"
        except ModelError as exc:
            return f"warning: {exc}"
        finally:
            await client.aclose()

    typer.echo(asyncio.run(check()))
    typer.echo(
        f"Ready: `hermes chat` to talk to {settings.model.name}; `hermes serve` serves the API "
        f"on http://{settings.server.host}:{settings.server.port}/v1"
    )


__all__ = ["KINDS", "setup"]
