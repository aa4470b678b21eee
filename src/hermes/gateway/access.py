"""Who may reach the model, and in whose scope (SPEC §10).

Identities are `<platform>:<sender id>`. Owners (`gateway.owner`) act in the default scope;
any other allowed identity gets the scope `X-Hermes-User-Id: <identity>` would. Allowed means:
an owner, listed in the platform's allow-list, or paired. Pairing codes are one-time,
8 characters from a 31-letter alphabet (~40 bits), expire after an hour, and are rate-limited
per identity and in total; the owner approves one with `hermes gateway pair CODE`.
"""

from __future__ import annotations

import contextlib
import hashlib
import secrets
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hermes.config.settings import Settings
from hermes.errors import HermesError
from hermes.gateway.base import Inbound
from hermes.gateway.platforms import PlatformSpec
from hermes.gateway.state import SharedJson
from hermes.scopes import InvalidIdError, scope_for_user
from hermes.store.base import DEFAULT_SCOPE, DocumentStore

CODE_ALPHABET = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"
CODE_LENGTH = 8
CODE_TTL = 3600.0
RESEND_AFTER = 600.0  # a stranger who keeps writing hears their code again at most this often
MAX_PENDING = 20  # codes alive at once, over all identities


class PairingError(HermesError):
    """A pairing code that does not exist, was used, or expired; the message says which."""


@dataclass(frozen=True)
class CodeOffer:
    code: str
    fresh: bool


class PairingStore:
    """`gateway/pairing.json` (a file in the home, or a store document shared by replicas),
    shared by `hermes serve` (issues codes) and the CLI (approves them): every change
    re-reads it under an exclusive lock."""

    def __init__(
        self, home: Path, *, documents: DocumentStore | None = None, clock: Any = time.time
    ) -> None:
        self.home = home
        self.state = SharedJson(home, "pairing.json", documents)
        self.path = self.state.path
        self.clock = clock

    @contextlib.contextmanager
    def _edit(self) -> Iterator[dict[str, Any]]:
        with self.state.edit() as data:
            data.setdefault("pending", {})
            data.setdefault("approved", {})
            self._expire(data)
            yield data

    def _expire(self, data: dict[str, Any]) -> None:
        now = self.clock()
        pending = data["pending"]
        for code in [c for c, v in pending.items() if now - v.get("created_at", 0) > CODE_TTL]:
            del pending[code]

    def approved(self) -> dict[str, Any]:
        data = self.state.read().get("approved")
        return data if isinstance(data, dict) else {}

    def offer(self, identity: str, name: str | None) -> CodeOffer | None:
        """The code for `identity` (a new one, or the pending one when it is time to repeat
        it); None when the stranger should hear nothing (too soon, or too many pending)."""
        now = self.clock()
        with self._edit() as data:
            pending: dict[str, Any] = data["pending"]
            for code, entry in pending.items():
                if entry.get("identity") == identity:
                    if now - entry.get("told_at", 0) < RESEND_AFTER:
                        return None
                    entry["told_at"] = now
                    return CodeOffer(code, fresh=False)
            if len(pending) >= MAX_PENDING:
                return None
            code = "".join(secrets.choice(CODE_ALPHABET) for _ in range(CODE_LENGTH))
            pending[code] = {"identity": identity, "name": name, "created_at": now, "told_at": now}
            return CodeOffer(code, fresh=True)

    def approve(self, code: str) -> str:
        """Approve a pending code; returns the identity it belonged to."""
        wanted = code.strip().upper()
        with self._edit() as data:
            match = next(
                (c for c in data["pending"] if secrets.compare_digest(c, wanted)),
                None,
            )
            if match is None:
                raise PairingError(
                    f"no pending pairing code {wanted!r}: it was mistyped, already used, or "
                    "older than an hour (ask the person to message the bot again for a new one)"
                )
            entry = data["pending"].pop(match)
            identity = str(entry["identity"])
            data["approved"][identity] = {"name": entry.get("name"), "approved_at": self.clock()}
            return identity

    def deny(self, code: str) -> str:
        """Drop a pending code unapproved; returns the identity it belonged to. The person
        may ask again later (rate limits as for any stranger)."""
        wanted = code.strip().upper()
        with self._edit() as data:
            match = next((c for c in data["pending"] if secrets.compare_digest(c, wanted)), None)
            if match is None:
                raise PairingError(
                    f"no pending pairing code {wanted!r}: it was mistyped, already answered, "
                    "or older than an hour"
                )
            return str(data["pending"].pop(match)["identity"])

    def revoke(self, identity: str) -> bool:
        with self._edit() as data:
            return data["approved"].pop(identity, None) is not None

    def forget(self, identity: str) -> int:
        """Drop the identity's approval and pending codes (`hermes users forget`)."""
        if not self.state.exists():
            return 0
        with self._edit() as data:
            codes = [c for c, v in data["pending"].items() if v.get("identity") == identity]
            for code in codes:
                del data["pending"][code]
            approved = data["approved"].pop(identity, None) is not None
            return len(codes) + int(approved)

    def pending(self) -> list[dict[str, Any]]:
        with self._edit() as data:
            return [{"code": c, **v} for c, v in data["pending"].items()]


class Access:
    """Allow-lists, owners and pairing for one gateway."""

    def __init__(
        self,
        settings: Settings,
        specs: dict[str, PlatformSpec],
        documents: DocumentStore | None = None,
    ) -> None:
        self.owners = frozenset(_normalize(o, specs) for o in settings.gateway.owner if o.strip())
        self.pairing_enabled = settings.gateway.pairing
        self.allowed = {name: s.allowed_senders(settings) for name, s in specs.items()}
        self.pairing = PairingStore(settings.home, documents=documents)

    def is_owner(self, identity: str) -> bool:
        return identity in self.owners

    def scope_of(self, identity: str) -> str:
        if self.is_owner(identity):
            return DEFAULT_SCOPE
        try:
            return scope_for_user(identity)
        except InvalidIdError:  # an id with characters scopes do not allow: a stable stand-in
            platform, _, sender = identity.partition(":")
            digest = hashlib.sha256(sender.encode("utf-8", "replace")).hexdigest()[:16]
            return scope_for_user(f"{platform}:{digest}")

    def is_listed(self, msg: Inbound) -> bool:
        """An owner or on the platform's allow-list (no file read: the hot path)."""
        return self.is_owner(msg.identity) or msg.sender in self.allowed.get(msg.platform, ())

    def is_paired(self, identity: str) -> bool:
        """Approved with `hermes gateway pair` (reads the pairing file: call off the loop)."""
        return identity in self.pairing.approved()


def _normalize(identity: str, specs: dict[str, PlatformSpec]) -> str:
    """`platform:sender` with the sender written the way that platform's adapter writes it
    (email addresses lower-cased, for instance)."""
    platform, _, sender = identity.strip().partition(":")
    spec = specs.get(platform)
    return f"{platform}:{spec.normalize_sender(sender.strip())}" if spec else identity.strip()
