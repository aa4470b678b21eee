"""Entry point: `hermes` and its command groups."""

from __future__ import annotations

import logging
from typing import Any

import typer
from typer.core import TyperGroup

from hermes import __version__
from hermes.cli import chat, doctor, serve, sessions
from hermes.cli import cron as cron_cli
from hermes.cli import keys as keys_cli
from hermes.cli import memory as memory_cli
from hermes.cli import setup as setup_cli
from hermes.gateway.setup import setup_group


class _WithParts(TyperGroup):
    """The built-in commands, and those that parts and plugins contribute
    (`hermes.command(...)`) loaded only when a name is not built in or the list is shown:
    loading every part takes about a second that `hermes sessions import` should not pay."""

    _parts_loaded = False

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        command = super().get_command(ctx, cmd_name)
        if command is None and not self._parts_loaded:
            self._add_part_commands()
            command = super().get_command(ctx, cmd_name)
        return command

    def list_commands(self, ctx: Any) -> list[str]:
        self._add_part_commands()
        return super().list_commands(ctx)

    def _add_part_commands(self) -> None:
        if self._parts_loaded:
            return
        self._parts_loaded = True
        from hermes.plugins import load_registry

        for name, factory in load_registry().commands:
            if name not in self.commands:
                group = typer.main.get_group(factory())
                group.name = name
                self.add_command(group)


app = typer.Typer(
    name="hermes",
    cls=_WithParts,
    help="Hermes: a self-hosted AI agent that remembers.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"hermes {__version__}")
        raise typer.Exit()


@app.callback()
def main(
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Print the version and exit."
    ),
    verbose: bool = typer.Option(False, "--verbose", "-v", help="Log debug detail to stderr."),
) -> None:
    """Hermes: a self-hosted AI agent that remembers."""
    logging.basicConfig(
        level=logging.DEBUG if verbose else logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )


app.command("chat")(chat.chat)
app.command("doctor")(doctor.doctor)
app.add_typer(setup_group(setup_cli.setup), name="setup")  # `hermes setup [gateway …]`
app.command("serve")(serve.serve)
app.add_typer(sessions.app, name="sessions")
app.add_typer(cron_cli.app, name="cron")
app.add_typer(memory_cli.app, name="memory")
app.add_typer(keys_cli.app, name="keys")


def run() -> None:
    app()
