"""Reading mail for the gateway: who sent it, its text (HTML reduced to text, quoted replies
dropped), its attachments, and whether it is an automatic message that must never be
answered (auto-replies, bounces, lists: no mail loops)."""

from __future__ import annotations

import hashlib
import re
from email.message import EmailMessage
from email.utils import parseaddr
from html.parser import HTMLParser

_BLOCK = {
    "p",
    "div",
    "br",
    "li",
    "tr",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "blockquote",
    "pre",
    "table",
    "ul",
    "ol",
}
_SKIP = {"script", "style", "head", "title"}
_WROTE = re.compile(r"^(On .{3,200} wrote:|-----Original Message-----)\s*$", re.M)
_ID_CHARS = re.compile(r"[^A-Za-z0-9._:/@-]")


class _Text(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.skipping = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _SKIP:
            self.skipping += 1
        elif tag in _BLOCK:
            self.parts.append("\n")
        elif tag == "a":
            self.href = dict(attrs).get("href")

    def handle_endtag(self, tag: str) -> None:
        if tag in _SKIP:
            self.skipping = max(0, self.skipping - 1)
        elif tag in _BLOCK:
            self.parts.append("\n")

    def handle_data(self, data: str) -> None:
        if not self.skipping:
            self.parts.append(data)


def html_to_text(html: str) -> str:
    parser = _Text()
    parser.feed(html)
    parser.close()
    text = "".join(parser.parts)
    lines = [re.sub(r"[ \t\xa0]+", " ", line).strip() for line in text.splitlines()]
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()


def strip_quoted(text: str) -> str:
    """The new part of a reply: cut at "On … wrote:" and drop `>` quoted lines."""
    match = _WROTE.search(text)
    if match:
        text = text[: match.start()]
    return "\n".join(line for line in text.splitlines() if not line.startswith(">")).strip()


def body_text(msg: EmailMessage) -> str:
    part = msg.get_body(preferencelist=("plain", "html"))
    if part is None:
        return ""
    try:
        content = part.get_content()
    except (LookupError, ValueError):
        payload = part.get_payload(decode=True)
        content = payload.decode("utf-8", "replace") if isinstance(payload, bytes) else ""
    if part.get_content_subtype() == "html":
        content = html_to_text(content)
    return strip_quoted(str(content))


def sender_of(msg: EmailMessage) -> str:
    return parseaddr(str(msg.get("From", "")))[1].strip().lower()


def is_automatic(msg: EmailMessage, own_address: str | None) -> str | None:
    """Why this message must not be answered (RFC 3834 and common practice), or None."""
    sender = sender_of(msg)
    auto = str(msg.get("Auto-Submitted", "no")).strip().lower()
    if auto and auto != "no":
        return f"Auto-Submitted: {auto}"
    for header in (
        "X-Autoreply",
        "X-Autorespond",
        "X-Auto-Response-Suppress",
        "X-Failed-Recipients",
    ):
        if msg.get(header) is not None:
            return header
    if str(msg.get("Precedence", "")).strip().lower() in ("bulk", "junk", "list", "auto_reply"):
        return f"Precedence: {msg.get('Precedence')}"
    if msg.get("List-Id") is not None or msg.get("List-Unsubscribe") is not None:
        return "mailing list"
    if msg.get_content_type() == "multipart/report":
        return "delivery report"
    local = sender.split("@", 1)[0]
    if not sender or local in ("mailer-daemon", "postmaster", "noreply", "no-reply"):
        return f"sender {sender or '(none)'}"
    if str(msg.get("Return-Path", "")).strip() == "<>":
        return "empty Return-Path (a bounce)"
    if own_address and sender == own_address.lower():
        return "sent by this address"
    return None


def thread_root(msg: EmailMessage) -> str:
    """The Message-ID that started the conversation (first of References), else this one's."""
    refs = str(msg.get("References", "")).split()
    if refs:
        return refs[0]
    parent = str(msg.get("In-Reply-To", "")).strip()
    return parent or str(msg.get("Message-ID", "")).strip() or "no-id"


def short_hash(value: str) -> str:
    return hashlib.sha256(value.encode("utf-8", "replace")).hexdigest()[:10]


def safe_address(address: str) -> str:
    """An address as an id Hermes accepts (letters, digits, . _ : / @ -); others hashed."""
    if not _ID_CHARS.search(address):
        return address
    return _ID_CHARS.sub("_", address) + "-" + short_hash(address)[:6]
