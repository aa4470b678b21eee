"""Entry point: `hermes` and its command groups."""

from __future__ import annotations

import logging

import typer

from hermes import __version__
from hermes.cli import chat, doctor, serve, sessions
from hermes.cli import cron as cron_cli
from hermes.cli import keys as keys_cli
from hermes.cli import memory as memory_cli
from hermes.cli import setup as setup_cli
from hermes.gateway.setup import setup_group

app = typer.Typer(
    name="hermes",
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


def _add_part_commands() -> None:
    """Command groups contributed by parts and plugins (`hermes.command(...)`)."""
    from hermes.plugins import load_registry

    taken = {c.name for c in app.registered_commands} | {g.name for g in app.registered_groups}
    for name, factory in load_registry().commands:
        if name not in taken:
            app.add_typer(factory(), name=name)


_add_part_commands()


def run() -> None:
    app()
