"""Log lines an operator can search: `logging.format: json` writes one JSON object per line
with the request, run and session ids in effect (`hermes.observability.context`); both
formats mask secrets (the install's own keys and key-shaped text, `hermes.redact`)
before anything reaches the stream.
"""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from hermes.config.settings import Settings
from hermes.observability import context
from hermes.redact import Redactor, settings_secrets

TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


class JsonFormatter(logging.Formatter):
    """One JSON object per record: time, level, logger, message, ids, exception text."""

    def __init__(self, redact: Redactor) -> None:
        super().__init__()
        self.redact = redact

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": self.redact(record.getMessage()),
            **context.current(),
        }
        if record.exc_info:
            line["exception"] = self.redact(self.formatException(record.exc_info))
        return json.dumps(line, ensure_ascii=False)


class RedactingFormatter(logging.Formatter):
    """The plain text format, secrets masked."""

    def __init__(self, redact: Redactor, fmt: str = TEXT_FORMAT) -> None:
        super().__init__(fmt)
        self.redact = redact

    def format(self, record: logging.LogRecord) -> str:
        return self.redact(super().format(record))


def _console_handlers(root: logging.Logger) -> list[logging.Handler]:
    """The handlers writing to the console (basicConfig's), not test capture handlers."""
    return [
        h
        for h in root.handlers
        if type(h) is logging.StreamHandler and h.stream in (sys.stderr, sys.stdout)
    ]


def configure(settings: Settings, *, also: Sequence[Settings] = ()) -> None:
    """Give the console handlers the configured format (adding one on stderr when the root
    logger has no handler at all); called when the server starts. Idempotent. `also`: the
    other profiles this process serves, whose secrets are masked as well (one process, one
    log, every profile's secrets)."""
    root = logging.getLogger()
    redact = Redactor(secret for one in (settings, *also) for secret in settings_secrets(one))
    formatter: logging.Formatter = (
        JsonFormatter(redact) if settings.logging.format == "json" else RedactingFormatter(redact)
    )
    handlers = _console_handlers(root)
    if not handlers and not root.handlers:
        handler: logging.Handler = logging.StreamHandler(sys.stderr)
        root.addHandler(handler)
        handlers = [handler]
    for handler in handlers:
        handler.setFormatter(formatter)
