"""Threat scan for text that will end up in a system prompt (notes, cron prompts, SOUL.md).

Stored text is re-read into every future prompt, so one poisoned note would steer every
later session. Three families are refused: prompt injection (instructions aimed at the
model), exfiltration (sending secrets or keys somewhere, backdoors), and invisible Unicode
(zero-width and bidi-control characters that hide text from a human reviewer). Used before
storing and again before rendering, because files can be edited by hand.

    from hermes.memory.scan import scan_text
    threats = scan_text(prompt)   # [] when clean, else short names like "prompt-injection"
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

MAX_SCAN_CHARS = 20_000


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

_COMPILED = [(re.compile(p, _I | re.MULTILINE), "prompt-injection", d) for p, d in _INJECTION] + [
    (re.compile(p, _I), "exfiltration", d) for p, d in _EXFILTRATION
]

# zero-width, bidi controls, word joiners, BOM, Unicode tags (invisible ASCII), variation
# selectors used for steganography
_INVISIBLE = re.compile(
    "[\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\u206a-\u206f\ufeff\u00ad\u180e"
    "\U000e0000-\U000e007f]"
)


def _invisible(text: str) -> Threat | None:
    found = _INVISIBLE.search(text)
    if found is None:
        return None
    ch = found.group(0)
    name = unicodedata.name(ch, f"U+{ord(ch):04X}")
    return Threat("invisible-unicode", f"contains invisible character {name} (U+{ord(ch):04X})")


def scan_text(text: str) -> list[Threat]:
    """Every threat family found in `text` (one Threat per family); [] when clean."""
    if len(text) > MAX_SCAN_CHARS:
        return [Threat("too-long", f"{len(text):,} characters is more than the scanner reads")]
    threats: list[Threat] = []
    invisible = _invisible(text)
    if invisible:
        threats.append(invisible)
    # normalise look-alike forms (full-width letters and the like) before matching words
    folded = unicodedata.normalize("NFKC", text)
    seen: set[str] = set()
    for pattern, family, detail in _COMPILED:
        if family not in seen and pattern.search(folded):
            threats.append(Threat(family, detail))
            seen.add(family)
    return threats


def describe(threats: list[Threat]) -> str:
    return "; ".join(str(t) for t in threats)
