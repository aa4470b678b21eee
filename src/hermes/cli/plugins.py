"""`hermes plugins list`: the built-in parts and installed plugins, what each registered
(tools, platforms, model providers, commands, …) and whether it is on. A plugin is turned off
with `plugins.disabled` in config.yaml, or by naming only the wanted ones in
HERMES_LOAD_PLUGINS (`none`: no plugin at all), as simonw/llm's LLM_LOAD_PLUGINS."""

from __future__ import annotations

import json
from dataclasses import asdict

import typer

from hermes.cli_common import settings_or_exit

app = typer.Typer(help="Built-in parts and installed plugins.", no_args_is_help=True)


@app.command("list")
def list_cmd(
    as_json: bool = typer.Option(False, "--json", help="Machine-readable output."),
) -> None:
    """Every part and plugin: where it comes from, on or off, and what it registers."""
    from hermes.plugins import load_registry

    registry = load_registry(settings_or_exit())
    if as_json:
        typer.echo(json.dumps({"plugins": [asdict(p) for p in registry.plugins]}, indent=2))
        return
    for info in registry.plugins:
        state = "enabled" if info.enabled else ("failed" if info.error else "disabled")
        typer.echo(f"{info.name}  ({info.source}, {info.module})  {state}")
        if info.error:
            typer.echo(f"    error: {info.error}")
        if info.registers:
            typer.echo("    " + ", ".join(info.registers))
