"""Secrets that look like keys are masked before a tool result reaches the model or the store.

A command's output, a file or a web page may carry an API key; once in a tool result it would
be sent upstream and kept in the searchable transcript. Known key shapes (provider prefixes,
private-key blocks, `Authorization: Bearer …`, `NAME_KEY=value` assignments) and the exact
secrets of this install are replaced by a marker that keeps a short prefix, so the model can
still tell which key was there.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from hermes.config.settings import Settings

MARK = "[REDACTED]"

# provider-shaped tokens: the prefix stays visible, the body goes
_TOKENS = re.compile(
    r"\b("
    r"sk-(?:proj-|ant-|or-v1-)?[A-Za-z0-9_\-]{16,}"
    r"|gh[pousr]_[A-Za-z0-9]{20,}"
    r"|github_pat_[A-Za-z0-9_]{20,}"
    r"|xox[abposr]-[A-Za-z0-9\-]{10,}"
    r"|AKIA[0-9A-Z]{16}"
    r"|AIza[0-9A-Za-z_\-]{30,}"
    r"|glpat-[A-Za-z0-9_\-]{20,}"
    r"|hf_[A-Za-z0-9]{30,}"
    r"|tvly-[A-Za-z0-9_\-]{16,}"
    r"|eyJ[A-Za-z0-9_\-]{10,}\.eyJ[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]{10,}"
    r"|\d{8,10}:AA[A-Za-z0-9_\-]{30,}"
    r")"
)
_PRIVATE_KEY = re.compile(
    r"-----BEGIN [A-Z ]*PRIVATE KEY-----.*?(?:-----END [A-Z ]*PRIVATE KEY-----|\Z)", re.DOTALL
)
_BEARER = re.compile(r"(?i)\b(authorization\s*[:=]\s*(?:bearer|token|basic)\s+)([^\s'\"]{8,})")
# NAME_KEY=value, "api_key": "value", password: value …
_ASSIGNMENT = re.compile(
    r"(?i)\b([A-Z0-9_.-]*(?:api[_-]?key|secret|token|passw(?:or)?d|access[_-]?key|auth[_-]?key)"
    r"[A-Z0-9_]*[\"']?\s*[:=]\s*[\"']?)"
    r"((?=[^\s\"',;]*[A-Za-z])(?=[^\s\"',;]*\d)[^\s\"',;]{8,})"
)
_URL_CREDENTIALS = re.compile(r"(\b[a-z][a-z0-9+.-]*://[^\s/:@]+:)([^\s/@]{3,})(@)")


def _keep_prefix(token: str) -> str:
    cut = token.find("-") + 1 if token.startswith(("sk-", "xox", "glpat-", "tvly-")) else 4
    return token[: max(3, min(cut, 12))] + "…" + MARK


class Redactor:
    """Masks key-shaped text and the install's own secrets (given as literal values)."""

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        literal = sorted({s for s in secrets if s and len(s) >= 6}, key=len, reverse=True)
        self._literal = re.compile("|".join(map(re.escape, literal))) if literal else None

    def __call__(self, text: str) -> str:
        if not text:
            return text
        if self._literal is not None:
            text = self._literal.sub(MARK, text)
        text = _PRIVATE_KEY.sub("-----BEGIN PRIVATE KEY-----" + MARK, text)
        text = _TOKENS.sub(lambda m: _keep_prefix(m.group(1)), text)
        text = _BEARER.sub(lambda m: m.group(1) + MARK, text)
        text = _ASSIGNMENT.sub(lambda m: m.group(1) + MARK, text)
        return _URL_CREDENTIALS.sub(lambda m: m.group(1) + MARK + m.group(3), text)


redact = Redactor()


def settings_secrets(settings: Settings) -> list[str]:
    """Every secret value this install knows (model key, server key, web keys)."""
    values = [
        settings.model.api_key,
        settings.server.api_key,
        settings.web.search.brave_api_key,
        settings.web.search.tavily_api_key,
    ]
    return [v.get_secret_value() for v in values if v is not None and v.get_secret_value()]
