"""Entry point: `hermes` and its command groups."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from typing import Any

import typer
from typer.core import TyperGroup

from hermes import __version__, collector
from hermes.cli.quick_exit import exit_now

Command = Any  # a click command as typer builds it (typer vendors its own click)


def _command(name: str, function: Callable[..., Any]) -> Command:
    one = typer.Typer()
    one.command(name)(function)
    command = typer.main.get_command(one)
    command.name = name
    return command


def _group(name: str, app: typer.Typer) -> Command:
    group = typer.main.get_group(app)
    group.name = name
    return group


def _chat() -> Command:
    from hermes.cli.chat import chat

    return _command("chat", chat)


def _doctor() -> Command:
    from hermes.cli.doctor import doctor

    return _command("doctor", doctor)


def _setup() -> Command:
    from hermes.cli.setup import setup
    from hermes.gateway.setup import setup_group

    return _group("setup", setup_group(setup))  # `hermes setup [gateway …]`


def _serve() -> Command:
    from hermes.cli.serve import serve

    return _command("serve", serve)


def _sessions() -> Command:
    from hermes.cli.sessions import app as sessions_app

    return _group("sessions", sessions_app)


def _cron() -> Command:
    from hermes.cli.cron import app as cron_app

    return _group("cron", cron_app)


def _memory() -> Command:
    from hermes.cli.memory import app as memory_app

    return _group("memory", memory_app)


def _keys() -> Command:
    from hermes.cli.keys import app as keys_app

    return _group("keys", keys_app)


def _users() -> Command:
    from hermes.cli.users import app as users_app

    return _group("users", users_app)


def _usage() -> Command:
    from hermes.cli.usage import usage

    return _command("usage", usage)


def _profile() -> Command:
    from hermes.cli.profiles import app as profiles_app

    return _group("profile", profiles_app)


def _plugins() -> Command:
    from hermes.cli.plugins import app as plugins_app

    return _group("plugins", plugins_app)


BUILT_IN: dict[str, Callable[[], Command]] = {
    "chat": _chat,
    "doctor": _doctor,
    "setup": _setup,
    "serve": _serve,
    "sessions": _sessions,
    "cron": _cron,
    "memory": _memory,
    "keys": _keys,
    "users": _users,
    "usage": _usage,
    "plugins": _plugins,
    "profile": _profile,
}
"""The built-in commands, each imported only when it runs (or the list is shown): importing
them all cost `hermes chat -q` ~0.3 s of modules it never uses (doctor, setup, memory…)."""


class _WithParts(TyperGroup):
    """The built-in commands, loaded by name, and those that parts and plugins contribute
    (`hermes.command(...)`) loaded only when a name is not built in or the list is shown:
    loading every part takes about a second that `hermes sessions import` should not pay."""

    _parts_loaded = False

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        command = super().get_command(ctx, cmd_name)
        if command is None and cmd_name in BUILT_IN:
            self.add_command(BUILT_IN[cmd_name]())
            command = super().get_command(ctx, cmd_name)
        if command is None and not self._parts_loaded:
            self._add_part_commands()
            command = super().get_command(ctx, cmd_name)
        return command

    def list_commands(self, ctx: Any) -> list[str]:
        for name, make in BUILT_IN.items():
            if name not in self.commands:
                self.add_command(make())
        self._add_part_commands()
        listed = super().list_commands(ctx)
        return [n for n in BUILT_IN if n in listed] + [n for n in listed if n not in BUILT_IN]

    def invoke(self, ctx: Any) -> Any:
        """A configuration problem found only once a command builds its runtime (e.g. a
        `model.provider` no loaded plugin provides) ends the command as every bad setting
        does: one line on stderr, exit code 2."""
        try:
            return super().invoke(ctx)
        except Exception as exc:
            from hermes.config.settings import ConfigError

            if not isinstance(exc, ConfigError):
                raise
            typer.echo(f"hermes: {exc}", err=True)
            raise typer.Exit(2) from None

    def get_help_option(self, ctx: Any) -> Any:
        """`--help` without the `<bool>` typer gives every flag: it takes no value."""
        option = super().get_help_option(ctx)
        if option is not None:
            option.metavar = ""
        return option

    def _add_part_commands(self) -> None:
        if self._parts_loaded:
            return
        self._parts_loaded = True
        from hermes.plugins import PluginSelection, load_registry

        # before settings exist: HERMES_LOAD_PLUGINS decides which plugins add commands
        selection = PluginSelection.from_env(os.environ)
        for name, factory in load_registry(selection=selection).commands:
            if name not in self.commands and name not in BUILT_IN:
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


def _select_profile(ctx: typer.Context, name: str | None) -> None:
    """`-p NAME` beats HERMES_PROFILE: it is put in the environment for this command (and
    for the processes it starts), and the previous value is put back when the command ends."""
    from hermes.config.home import (
        ProfileError,
        active_profile,
        existing_profile_home,
        root_home,
        validate_profile_name,
    )

    try:
        chosen = validate_profile_name(name) if name is not None else active_profile()
        if ctx.invoked_subcommand != "profile":  # `hermes profile …` manages them all
            existing_profile_home(root_home(), chosen)
    except ProfileError as exc:  # one clear line, not a traceback, and nothing created
        typer.echo(f"hermes: {exc}", err=True)
        raise typer.Exit(2) from None
    if name is None:
        return
    previous = os.environ.get("HERMES_PROFILE")
    os.environ["HERMES_PROFILE"] = name

    def restore() -> None:
        if previous is None:
            os.environ.pop("HERMES_PROFILE", None)
        else:
            os.environ["HERMES_PROFILE"] = previous

    ctx.call_on_close(restore)


@app.callback()
def main(
    ctx: typer.Context,
    # metavar "": typer would show a flag as `--version <bool>`, as if it took a value
    version: bool = typer.Option(
        False,
        "--version",
        callback=_version,
        is_eager=True,
        metavar="",
        help="Print the version and exit.",
    ),
    verbose: bool = typer.Option(
        False, "--verbose", "-v", metavar="", help="Log debug detail to stderr."
    ),
    profile: str | None = typer.Option(
        None,
        "--profile",
        "-p",
        metavar="NAME",
        help="Run the command in profile NAME (its own home under profiles/; "
        "default: HERMES_PROFILE, else the default profile).",
    ),
) -> None:
    """Hermes: a self-hosted AI agent that remembers."""
    if ctx.invoked_subcommand != "serve":  # serve resumes it once its app has started
        collector.started()
    _select_profile(ctx, profile)
    logging.basicConfig(
        level=logging.DEBUG if verbose else logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )


def run() -> None:
    """The `hermes` command: once the command is done, the process ends without the
    interpreter's teardown (`quick_exit`). The garbage collector is paused until the command
    begins (`hermes.collector`)."""
    collector.pause()
    try:
        app()
    except SystemExit as done:
        exit_now(done.code)
        raise
    finally:  # an exit the usual way: its teardown finalizes what the start froze
        collector.thaw()
