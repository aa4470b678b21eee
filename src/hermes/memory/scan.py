"""Threat scan for text that will end up in a system prompt (notes, cron prompts, SOUL.md).

Stored text is re-read into every future prompt, so one poisoned note would steer every
later session. Four families are refused: prompt injection (instructions aimed at the
model), exfiltration (sending secrets or keys somewhere, backdoors), secrets themselves (API
keys, private keys: a note is pasted into every prompt and every transcript), and invisible
Unicode (format characters, variation selectors, Hangul fillers: text hidden from a human
reviewer; ordinary emoji sequences are fine). Used before storing and again before
rendering, because files can be edited by hand.

Two stages: patterns (English, plus the common phrasings of five other languages in
`scan_phrases`) always run; the meaning stage (`scan_meaning`) compares each sentence with
known intents when the bundled embedding model is available.

    from hermes.memory.scan import scan_text
    threats = scan_text(prompt)   # [] when clean, else short names like "prompt-injection"
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING

from hermes.memory import embeddings, scan_phrases
from hermes.memory.normalize import base64_payloads, compact, despace, first_invisible, fold
from hermes.memory.scan_meaning import closest_intent

if TYPE_CHECKING:
    from hermes.config.settings import Settings
    from hermes.memory.embeddings import Embedder

MAX_SCAN_CHARS = 20_000
MAX_QUOTE = 80


@dataclass(frozen=True, slots=True)
class Threat:
    name: str
    detail: str

    def __str__(self) -> str:
        return f"{self.name} ({self.detail})"


_I = re.IGNORECASE | re.DOTALL

_INJECTION = [
    (
        r"\b(ignore|disregard|forget|override|bypass)\b.{0,30}\b(previous|prior|above|earlier|all|"
        r"any|your|system|developer)\b.{0,30}\b(instructions?|prompts?|directives|guidelines)\b",
        "asks to ignore earlier instructions",
    ),
    (
        r"\byou\s+are\s+now\b.{0,60}\b(no|without|unrestricted|jailbroken|dan|free)\b",
        "tries to replace the assistant's identity",
    ),
    (
        r"\b(new|updated|real|actual)\s+(system\s+)?(instructions|rules|prompt)\s*:",
        "injects new instructions",
    ),
    (
        r"\bdo\s+not\s+(tell|inform|reveal\s+to|let)\s+(the\s+)?(user|human|owner)\b",
        "asks to hide things from the user",
    ),
    (
        r"\b(reveal|print|repeat|output|leak)\b.{0,30}\b(system\s+prompt|hidden\s+instructions|"
        r"developer\s+message)\b",
        "asks to reveal the system prompt",
    ),
    (
        r"<\|?(im_start|im_end|system|endoftext)\|?>|\[/?(INST|SYS)\]|<<\s*SYS\s*>>",
        "contains chat-template control tokens",
    ),
    (
        r"^\s*(#{1,3}\s*)?(system|developer)\s+(prompt|message|instructions?)\s*:",
        "poses as a system message",
    ),
    (
        r"\b(always|from\s+now\s+on)\b.{0,40}\b(obey|follow)\b.{0,40}\b(instructions?|commands?)\b"
        r".{0,40}\b(in|from)\b.{0,20}\b(this|these|memory|notes?)\b",
        "tells the model to obey stored instructions",
    ),
]

_EXFILTRATION = [
    (
        r"\b(curl|wget|invoke-webrequest|iwr|nc|netcat|scp|rsync)\b[^\n]{0,200}"
        r"(\$\{?[A-Z_]*(KEY|TOKEN|SECRET|PASSWORD|PASS|CREDENTIALS?)\b|\.env\b|id_rsa|id_ed25519|"
        r"\.ssh/|/etc/passwd|/etc/shadow|credentials)",
        "sends secrets over the network",
    ),
    (
        r"\b(send|post|upload|forward|exfiltrate|email|leak)\b.{0,60}\b(api[\s_-]?keys?|tokens?|"
        r"passwords?|secrets?|credentials|private\s+keys?|\.env|ssh\s+keys?)\b.{0,60}"
        r"(https?://|\bto\b\s+\S+@|\bwebhook\b|\bserver\b)",
        "asks to send secrets somewhere",
    ),
    (r"authorized_keys", "touches SSH authorized_keys (backdoor)"),
    (
        r"\b(cat|type|less|more|head|tail)\b\s+[^\n]{0,40}(\.env\b|id_rsa|id_ed25519|\.ssh/|"
        r"\.aws/credentials|\.netrc)",
        "reads credential files",
    ),
    (
        r"(base64|xxd|openssl\s+enc)[^\n]{0,80}(\.env\b|id_rsa|\.ssh/|credentials)",
        "encodes credential files",
    ),
]


# The patterns are compiled at the first scan, not at import: ~60 regexes are a few tens of
# milliseconds that every `hermes serve` start and store-only command would pay otherwise.
@cache
def _compiled() -> list[tuple[re.Pattern[str], str, str]]:
    return [
        (re.compile(p, _I | re.MULTILINE), "prompt-injection", d)
        for p, d in _INJECTION + scan_phrases.INJECTION
    ] + [
        (re.compile(p, _I), "exfiltration", d) for p, d in _EXFILTRATION + scan_phrases.EXFILTRATION
    ]


_COMPACT = [
    (
        r"(ignore|disregard|forget|override|bypass)(all|any|the|your|of)*(previous|prior|above|"
        r"earlier|system|developer)(instructions?|prompts?|directives|guidelines|rules)",
        "asks to ignore earlier instructions",
    ),
    (r"youarenow(jailbroken|unrestricted|dan)", "tries to replace the assistant's identity"),
    (
        r"(reveal|print|repeat|output|leak)(the|your)?(systemprompt|hiddeninstructions|"
        r"developermessage)",
        "asks to reveal the system prompt",
    ),
    (r"donot(tell|inform|let)(the)?(user|human|owner)", "asks to hide things from the user"),
]


@cache
def _compact_compiled() -> list[tuple[re.Pattern[str], str, str]]:
    return [(re.compile(p), "prompt-injection", d) for p, d in _COMPACT]


# Credentials that must never sit in a file that is pasted into every prompt.
_SECRETS = [
    (r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY-----", "a private key"),
    (r"\bsk-(?:proj-|ant-|or-v1-|svcacct-)?[A-Za-z0-9_-]{20,}", "an API key (sk-…)"),
    (r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,})", "a GitHub token"),
    (r"\bglpat-[A-Za-z0-9_-]{20,}", "a GitLab token"),
    (r"\bxox[abposr]-[A-Za-z0-9-]{10,}", "a Slack token"),
    (r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b", "an AWS access key"),
    (r"\bAIza[0-9A-Za-z_-]{35}", "a Google API key"),
    (r"\b[rs]k_live_[0-9A-Za-z]{16,}", "a Stripe key"),
    (r"\b\d{8,10}:AA[0-9A-Za-z_-]{33}\b", "a Telegram bot token"),
    (
        r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}",
        "a signed token (JWT)",
    ),
    (
        r"\b(?:api[_ -]?key|secret[_ -]?key|access[_ -]?token|auth[_ -]?token|client[_ -]?secret|"
        r"password|passwd|private[_ -]?key)\b\s*[:=]\s*['\"]?[^\s'\"]{8,}",
        "a credential assignment",
    ),
]


@cache
def _secrets_compiled() -> list[tuple[re.Pattern[str], str]]:
    return [(re.compile(p, re.IGNORECASE), d) for p, d in _SECRETS]


def _invisible(text: str) -> Threat | None:
    ch = first_invisible(text)
    if ch is None:
        return None
    name = unicodedata.name(ch, f"U+{ord(ch):04X}")
    return Threat("invisible-unicode", f"contains invisible character {name} (U+{ord(ch):04X})")


def _secret(text: str) -> Threat | None:
    for pattern, what in _secrets_compiled():
        if pattern.search(text):
            return Threat("secret", f"contains what looks like {what}; keep secrets in .env")
    return None


def _patterns(text: str, seen: set[str], where: str = "") -> list[Threat]:
    """Injection and exfiltration patterns over every normalised view of `text`."""
    folded = fold(text)
    views = [folded, despace(folded)] if folded != despace(folded) else [folded]
    found: list[Threat] = []
    for view in views:
        for pattern, family, detail in _compiled():
            if family not in seen and pattern.search(view):
                found.append(Threat(family, detail + where))
                seen.add(family)
    squeezed = compact(folded)
    for pattern, family, detail in _compact_compiled():
        if family not in seen and pattern.search(squeezed):
            found.append(Threat(family, detail + where))
            seen.add(family)
    return found


def _embedder(settings: Settings | None) -> Embedder | None:
    """With settings, the model is loaded at the first scan that asks (a memory or skill write
    is rare, and waits for the load once); without, only a model this process has already
    loaded is used, so rendering a prompt never waits for one."""
    if settings is None or settings.search.embeddings == "endpoint":
        return embeddings.loaded()
    try:
        return embeddings.load(settings)
    except embeddings.EmbeddingsUnavailableError:
        return None


def prepare(settings: Settings) -> None:
    """Load the model the meaning stage compares with, before a write is scanned: called
    where a write begins (the memory and skill tools, the CLI, job creation), so a scan
    deep inside, which has no settings, finds it loaded."""
    _embedder(settings)


def _meaning(text: str, settings: Settings | None, seen: set[str]) -> list[Threat]:
    if {"prompt-injection", "exfiltration"} <= seen:
        return []
    match = closest_intent(text, _embedder(settings))
    if match is None or match.family in seen:
        return []
    quote = match.sentence
    if len(quote) > MAX_QUOTE:
        quote = quote[: MAX_QUOTE - 1] + "…"
    seen.add(match.family)
    return [Threat(match.family, f"{match.detail}: “{quote}”")]


def scan_text(text: str, *, settings: Settings | None = None) -> list[Threat]:
    """Every threat family found in `text` (one Threat per family); [] when clean.

    Look-alike letters, spaced-out letters, invisible characters and base64 are undone
    first (`hermes.memory.normalize`), so a disguised instruction is still found. `settings`
    lets the scan load the embedding model for the meaning stage (see `_embedder`)."""
    if len(text) > MAX_SCAN_CHARS:
        return [Threat("too-long", f"{len(text):,} characters is more than the scanner reads")]
    threats = [t for t in (_invisible(text), _secret(text)) if t is not None]
    seen = {t.name for t in threats}
    threats += _patterns(text, seen)
    for payload in base64_payloads(text):
        threats += _patterns(payload, seen, " (hidden in base64)")
        secret = _secret(payload) if "secret" not in seen else None
        if secret is not None:
            threats.append(secret)
            seen.add("secret")
    threats += _meaning(text, settings, seen)
    return threats


def describe(threats: list[Threat]) -> str:
    return "; ".join(str(t) for t in threats)
