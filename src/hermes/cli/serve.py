"""`hermes serve`: the long-running process (HTTP API now; cron ticker and gateway join it)."""

from __future__ import annotations

import typer

from hermes.cli_common import fail, settings_or_exit


def serve(
    host: str | None = typer.Option(
        None, "--host", help="Interface to bind (default: server.host, 127.0.0.1)."
    ),
    port: int | None = typer.Option(
        None, "--port", min=0, max=65535, help="Port (default: server.port, 11434)."
    ),
) -> None:
    """Serve the OpenAI-compatible API until SIGTERM/SIGINT (in-flight turns finish first)."""
    from hermes.server.serve import ServeError, run

    settings = settings_or_exit()
    bind_host = host if host is not None else settings.server.host
    bind_port = port if port is not None else settings.server.port
    try:
        run(settings, bind_host, bind_port, announce=lambda line: typer.echo(line, err=True))
    except ServeError as exc:
        fail(str(exc), 2)
    except KeyboardInterrupt:  # a forced second Ctrl-C
        raise typer.Exit(130) from None
