"""Undo the disguises a poisoned note uses to slip past pattern matching.

An instruction aimed at the model still reads as an instruction when it is written in
full-width or mathematical letters, in Cyrillic or Greek look-alikes, with a space between
every letter, with invisible characters between the letters, or base64-encoded. The scanner
matches its patterns against every view this module produces of a text:

* `fold` — invisible characters dropped, NFKC, look-alike letters mapped to Latin, casefolded,
  accents dropped;
* `despace` — runs of single letters split by one separator (`i g n o r e`) joined up;
* `compact` — letters and digits only, for patterns written without word gaps;
* `base64_payloads` — the decoded text of base64-looking runs that decode to readable text.
"""

from __future__ import annotations

import base64
import binascii
import re
import unicodedata
from collections.abc import Iterator

from hermes.memory.emoji import in_emoji

# Characters that render as nothing (or as blank space indistinguishable from a space) and
# can hide text from a person reading the file: every Unicode "format" (Cf) character plus
# the ones below, which are letters or marks by category but invisible in practice.
_INVISIBLE_EXTRA = frozenset(
    [chr(c) for c in range(0xFE00, 0xFE10)]  # variation selectors 1-16
    + [chr(c) for c in range(0xE0100, 0xE01F0)]  # variation selectors 17-256
    + [chr(c) for c in range(0x180B, 0x1810)]  # Mongolian variation selectors and vowel sep.
    + ["\u115f", "\u1160", "\u3164", "\uffa0"]  # Hangul fillers
    + ["\u034f", "\u2800", "\u17b4", "\u17b5"]  # grapheme joiner, braille blank, Khmer vowels
)

# Look-alike letters from other scripts → the Latin letter they imitate (a subset of Unicode's
# confusables.txt covering Cyrillic, Greek, Armenian and Latin-extended forms that NFKC keeps).
_CONFUSABLES = str.maketrans(
    {
        # Cyrillic
        "а": "a", "в": "b", "с": "c", "ԁ": "d", "е": "e", "һ": "h", "і": "i", "ј": "j",
        "к": "k", "ӏ": "l", "м": "m", "н": "h", "о": "o", "р": "p", "ԛ": "q", "ѕ": "s",
        "т": "t", "у": "y", "ԝ": "w", "х": "x", "ь": "b", "ѵ": "v", "ү": "y", "ɡ": "g",
        "А": "a", "В": "b", "С": "c", "Е": "e", "Н": "h", "І": "i", "Ј": "j", "К": "k",
        "М": "m", "О": "o", "Р": "p", "Ѕ": "s", "Т": "t", "Х": "x", "Ү": "y", "Ԝ": "w",
        # Greek
        "α": "a", "β": "b", "ε": "e", "η": "n", "ι": "i", "κ": "k", "ν": "v", "ο": "o",
        "ρ": "p", "τ": "t", "υ": "u", "χ": "x", "γ": "y", "ω": "w",
        "Α": "a", "Β": "b", "Ε": "e", "Ζ": "z", "Η": "h", "Ι": "i", "Κ": "k", "Μ": "m",
        "Ν": "n", "Ο": "o", "Ρ": "p", "Τ": "t", "Υ": "y", "Χ": "x",
        # Armenian and Latin extensions
        "օ": "o", "ս": "u", "ց": "g", "ı": "i", "ȷ": "j", "ℓ": "l", "ǀ": "l", "ʏ": "y",
        "ɑ": "a", "ɩ": "i", "ʀ": "r", "ᴀ": "a", "ᴄ": "c", "ᴅ": "d", "ᴇ": "e", "ᴏ": "o",
        "ᴘ": "p", "ᴛ": "t", "ᴜ": "u", "ᴠ": "v", "ᴡ": "w", "ᴢ": "z",
    }
)  # fmt: skip

_SPACED_RUN = re.compile(r"(?<![^\W_])(?:[^\W_][ .\-_*|·,/]){2,}[^\W_](?![^\W_])")
_SEPARATORS = re.compile(r"[ .\-_*|·,/]")
_NOT_ALNUM = re.compile(r"[^a-z0-9]+")
_BASE64_RUN = re.compile(r"[A-Za-z0-9+/_-]{16,}={0,2}")
MAX_BASE64_RUNS = 20


def is_invisible(ch: str) -> bool:
    """True for a character that renders as nothing (format characters and friends)."""
    return ch in _INVISIBLE_EXTRA or unicodedata.category(ch) == "Cf"


def first_invisible(text: str) -> str | None:
    """The first invisible character in `text` that is not part of an ordinary emoji
    (❤️, 👨‍👩‍👧, 1️⃣, 🏴󠁧󠁢󠁳󠁣󠁴󠁿), if any."""
    for i, ch in enumerate(text):
        if ch in _INVISIBLE_EXTRA or (ord(ch) >= 0xAD and unicodedata.category(ch) == "Cf"):
            if not in_emoji(text, i):
                return ch
    return None


def fold(text: str) -> str:
    """Invisible characters dropped, NFKC, look-alikes mapped to Latin, casefolded, accents
    and other combining marks dropped (`Schlüssel` → `schlussel`, `i̸g̸n̸o̸r̸e̸` → `ignore`)."""
    visible = "".join(ch for ch in text if not is_invisible(ch))
    folded = unicodedata.normalize("NFKC", visible).translate(_CONFUSABLES).casefold()
    bare = unicodedata.normalize("NFKD", folded)
    return "".join(ch for ch in bare if not unicodedata.combining(ch))


def despace(folded: str) -> str:
    """`i g n o r e  a l l` → `ignore all`: single letters split by one separator are joined."""
    return _SPACED_RUN.sub(lambda m: _SEPARATORS.sub("", m.group(0)), folded)


def compact(folded: str) -> str:
    """Letters and digits only: `Ign-ore prev.ious` → `ignoreprevious`."""
    return _NOT_ALNUM.sub("", folded)


def _decode(run: str) -> str | None:
    padded = run + "=" * (-len(run) % 4)
    for decoder in (base64.b64decode, base64.urlsafe_b64decode):
        try:
            raw = decoder(padded)
        except (binascii.Error, ValueError):
            continue
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            continue
        printable = sum(ch.isprintable() or ch in "\n\t" for ch in text)
        if text and printable >= 0.9 * len(text) and any(ch.isalpha() for ch in text):
            return text
    return None


def base64_payloads(text: str) -> Iterator[str]:
    """Readable text hidden in base64-looking runs of `text` (at most MAX_BASE64_RUNS)."""
    for n, match in enumerate(_BASE64_RUN.finditer(text)):
        if n >= MAX_BASE64_RUNS:
            return
        decoded = _decode(match.group(0))
        if decoded is not None:
            yield decoded
