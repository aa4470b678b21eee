"""Which invisible characters belong to an ordinary emoji and so hide nothing.

The threat scan refuses characters that render as nothing, but a few of them are how
emoji are written: VS16 asks for the colour form of ❤ (❤️), VS15 for the text form, a
zero-width joiner glues 👨 and 👩 into 👨‍👩‍👧, a keycap is `1` + VS16 + U+20E3, and the flags of
England, Scotland and Wales spell their region in tag characters. Each is allowed only in
that position, once: the same characters after a letter, in runs, or tags spelling anything
else can carry whole hidden sentences, so they stay refused.
"""

from __future__ import annotations

from bisect import bisect_right
from functools import cache

VS15, VS16, ZWJ, KEYCAP = "\ufe0e", "\ufe0f", "\u200d", "\u20e3"
_KEYCAP_BASES = frozenset("0123456789#*")
_TAG_FIRST, _TAG_LAST = 0xE0020, 0xE007F
_BLACK_FLAG = "\U0001f3f4"
# the only RGI flag tag sequences (after 🏴): England, Scotland, Wales, then CANCEL TAG
_FLAG_TAGS = frozenset(
    "".join(chr(0xE0000 + ord(c)) for c in region + "\x7f")
    for region in ("gbeng", "gbsct", "gbwls")
)

# Non-ASCII code points with the Unicode property Emoji or Extended_Pictographic
# (emoji-data.txt), as hex ranges: generated from the Unicode data, not edited by hand.
_EMOJI_RANGES = """
A9 AE 203C 2049 2122 2139 2194-2199 21A9-21AA 231A-231B 2328 23CF 23E9-23F3 23F8-23FA
24C2 25AA-25AB 25B6 25C0 25FB-25FE 2600-2604 260E 2611 2614-2615 2618 261D 2620
2622-2623 2626 262A 262E-262F 2638-263A 2640 2642 2648-2653 265F-2660 2663 2665-2666
2668 267B 267E-267F 2692-2697 2699 269B-269C 26A0-26A1 26A7 26AA-26AB 26B0-26B1
26BD-26BE 26C4-26C5 26C8 26CE-26CF 26D1 26D3-26D4 26E9-26EA 26F0-26F5 26F7-26FA 26FD
2702 2705 2708-270D 270F 2712 2714 2716 271D 2721 2728 2733-2734 2744 2747 274C 274E
2753-2755 2757 2763-2764 2795-2797 27A1 27B0 27BF 2934-2935 2B05-2B07 2B1B-2B1C 2B50
2B55 3030 303D 3297 3299 1F004 1F02C-1F02F 1F094-1F09F 1F0AF-1F0B0 1F0C0 1F0CF-1F0D0
1F0F6-1F0FF 1F170-1F171 1F17E-1F17F 1F18E 1F191-1F19A 1F1AF-1F1FF 1F201-1F20F 1F21A
1F22F 1F232-1F23A 1F23C-1F23F 1F249-1F25F 1F266-1F321 1F324-1F393 1F396-1F397
1F399-1F39B 1F39E-1F3F0 1F3F3-1F3F5 1F3F7-1F4FD 1F4FF-1F53D 1F549-1F54E 1F550-1F567
1F56F-1F570 1F573-1F57A 1F587 1F58A-1F58D 1F590 1F595-1F596 1F5A4-1F5A5 1F5A8
1F5B1-1F5B2 1F5BC 1F5C2-1F5C4 1F5D1-1F5D3 1F5DC-1F5DE 1F5E1 1F5E3 1F5E8 1F5EF 1F5F3
1F5FA-1F64F 1F680-1F6C5 1F6CB-1F6D2 1F6D5-1F6E5 1F6E9 1F6EB-1F6F0 1F6F3-1F6FF
1F7DC-1F7F0 1F80C-1F80F 1F848-1F84F 1F85A-1F85F 1F888-1F88F 1F8AE-1F8AF 1F8BC-1F8BF
1F8C2-1F8CF 1F8D9-1F8FF 1F90C-1F93A 1F93C-1F945 1F947-1F9FF 1FA58-1FA5F 1FA6E-1FAFF
1FC00-1FFFD
"""


@cache
def _table() -> tuple[list[int], list[int]]:
    starts: list[int] = []
    ends: list[int] = []
    for item in _EMOJI_RANGES.split():
        first, _, last = item.partition("-")
        starts.append(int(first, 16))
        ends.append(int(last or first, 16))
    return starts, ends


def is_emoji(ch: str) -> bool:
    """A pictograph or emoji symbol (not ASCII digits, `#` or `*`: those are keycaps only)."""
    if not ch:
        return False
    starts, ends = _table()
    i = bisect_right(starts, ord(ch)) - 1
    return i >= 0 and ord(ch) <= ends[i]


def _at(text: str, i: int) -> str:
    return text[i] if 0 <= i < len(text) else ""


def _is_tag(ch: str) -> bool:
    return ch != "" and _TAG_FIRST <= ord(ch) <= _TAG_LAST


def _flag_tags(text: str, i: int) -> bool:
    """The tag run around `i` is exactly one RGI subdivision flag's, right after 🏴."""
    start = i
    while _is_tag(_at(text, start - 1)):
        start -= 1
    end = i + 1
    while _is_tag(_at(text, end)):
        end += 1
    return _at(text, start - 1) == _BLACK_FLAG and text[start:end] in _FLAG_TAGS


def in_emoji(text: str, i: int) -> bool:
    """True when the invisible character `text[i]` is part of an emoji sequence there."""
    ch, before = text[i], _at(text, i - 1)
    if ch in (VS15, VS16):
        if is_emoji(before):
            return True
        return ch == VS16 and before in _KEYCAP_BASES and _at(text, i + 1) == KEYCAP
    if ch == ZWJ:
        if before == VS16:
            before = _at(text, i - 2)
        return is_emoji(before) and is_emoji(_at(text, i + 1))
    if _is_tag(ch):
        return _flag_tags(text, i)
    return False
