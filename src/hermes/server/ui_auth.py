"""Dashboard sign-in: an httpOnly cookie that stands in for the bearer key, plus a CSRF token.

The cookie holds an HMAC-signed token (never the key): who signed in (the owner, or a scoped
key named by its secret's SHA-256, re-checked on every request so a revoked key ends its
sign-ins), a random nonce, and when it was issued and last used. Signed rather than kept in a
table because the signing secret derives from the server key, so every replica that shares
the key accepts the same sign-ins with no schema change, and rotating the key ends them all.
An open loopback server (no key) signs with a random per-process secret instead. Signing
out is a store record (`ui_signout`, kept until the sign-in would have expired), so a
signed-out cookie is refused by every replica, not only the one that saw the sign-out.

A cookie is sent by the browser on any request to the host, so the API accepts it only with
`X-CSRF-Token` (bound to the sign-in's nonce) on every state-changing method.
"""

from __future__ import annotations

import asyncio
import base64
import functools
import hashlib
import hmac
import json
import secrets
import time
from dataclasses import dataclass
from typing import Any

from fastapi import Request
from starlette.responses import Response

from hermes.auth.keys import PREFIX, hash_secret
from hermes.config.home import DEFAULT_PROFILE
from hermes.server.errors import APIError
from hermes.store.api_keys import ApiKeyRecord, ApiKeyStore
from hermes.store.base import DEFAULT_SCOPE
from hermes.store.records import records_of

COOKIE = "hermes_ui"
CSRF_HEADER = "x-csrf-token"
IDLE_SECONDS = 12 * 3600
MAX_AGE_SECONDS = 7 * 86400
REFRESH_AFTER = 300.0
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
KEY_CACHE_SECONDS = 5.0


@dataclass(frozen=True, slots=True)
class SignIn:
    """One dashboard sign-in: `kind` is "owner" or "scoped" (then `key_hash` names the key)."""

    kind: str
    key_hash: str | None
    nonce: str
    issued: float
    seen: float

    def payload(self) -> dict[str, Any]:
        return {
            "k": self.kind,
            "h": self.key_hash,
            "n": self.nonce,
            "i": self.issued,
            "t": self.seen,
        }


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _secret(request: Request) -> bytes:
    """HMAC key: derived from the server key (replicas agree), else random per process."""
    state = request.app.state
    cached: bytes | None = getattr(state, "ui_secret", None)
    if cached is None:
        secret = state.runtime.settings.server.api_key
        key = secret.get_secret_value() if secret is not None else ""
        if key:
            cached = hmac.new(key.encode("utf-8"), b"hermes-ui-session-v1", hashlib.sha256).digest()
        else:
            cached = secrets.token_bytes(32)
        state.ui_secret = cached
    return cached


SIGNED_OUT = "ui_signout"


async def _signed_out(request: Request, nonce: str) -> bool:
    """Whether the sign-in was ended with "sign out", on any replica (a store record that
    lives until the sign-in would have expired anyway)."""
    records = records_of(request.app.state.runtime.store)
    found = await asyncio.to_thread(records.get_record, SIGNED_OUT, DEFAULT_SCOPE, nonce)
    return found is not None


def encode(request: Request, sign_in: SignIn) -> str:
    body = _b64(json.dumps(sign_in.payload(), separators=(",", ":")).encode())
    mac = hmac.new(_secret(request), body.encode(), hashlib.sha256).digest()
    return f"{body}.{_b64(mac)}"


def decode(request: Request, token: str, now: float | None = None) -> SignIn | None:
    """The sign-in the token is, or None when it is forged, expired or idle (whether it was
    signed out is the store's to say: `current`, `cookie_auth`)."""
    body, _, mac = token.partition(".")
    if not body or not mac:
        return None
    expected = hmac.new(_secret(request), body.encode(), hashlib.sha256).digest()
    try:
        if not hmac.compare_digest(_unb64(mac), expected):
            return None
        data = json.loads(_unb64(body))
        sign_in = SignIn(
            str(data["k"]), data["h"], str(data["n"]), float(data["i"]), float(data["t"])
        )
    except (ValueError, KeyError, TypeError):
        return None
    now = time.time() if now is None else now
    if now - sign_in.seen > IDLE_SECONDS or now - sign_in.issued > MAX_AGE_SECONDS:
        return None
    return sign_in


def csrf_token(request: Request, sign_in: SignIn) -> str:
    """Bound to the sign-in: a token from another sign-in (or none) is refused."""
    return hmac.new(_secret(request), b"csrf:" + sign_in.nonce.encode(), hashlib.sha256).hexdigest()


async def check_key(request: Request, key: str) -> SignIn | None:
    """A sign-in for `key` if the API would accept it as a bearer, else None."""
    now = time.time()
    nonce = secrets.token_urlsafe(16)
    if key.startswith(PREFIX):
        record = await scoped_record(request, hash_secret(key))
        return SignIn("scoped", hash_secret(key), nonce, now, now) if record else None
    secret = request.app.state.runtime.settings.server.api_key
    expected = secret.get_secret_value() if secret is not None else ""
    if expected and not hmac.compare_digest(key.encode("utf-8"), expected.encode("utf-8")):
        return None
    return SignIn("owner", None, nonce, now, now)


async def scoped_record(request: Request, key_hash: str) -> ApiKeyRecord | None:
    """The usable scoped key with this hash, cached briefly (a revoke lands within seconds)."""
    state = request.app.state
    cache: dict[str, tuple[float, ApiKeyRecord | None]] | None = getattr(
        state, "ui_key_cache", None
    )
    if cache is None:
        cache = {}
        state.ui_key_cache = cache
    now = time.monotonic()
    hit = cache.get(key_hash)
    if hit is not None and now - hit[0] < KEY_CACHE_SECONDS:
        return hit[1] if hit[1] is not None and hit[1].usable() else None
    store = state.runtime.store
    if not isinstance(store, ApiKeyStore):
        return None
    record = await asyncio.to_thread(store.api_key_by_hash, key_hash)
    if len(cache) > 10_000:
        cache.clear()
    cache[key_hash] = (now, record)
    return record if record is not None and record.usable() else None


async def sign_out(request: Request, sign_in: SignIn) -> None:
    records = records_of(request.app.state.runtime.store)
    ttl = max(sign_in.issued + MAX_AGE_SECONDS - time.time(), 1.0)
    await asyncio.to_thread(
        functools.partial(records.put_record, SIGNED_OUT, DEFAULT_SCOPE, sign_in.nonce, {}, ttl=ttl)
    )


def cookie_name(request: Request) -> str:
    """`hermes_ui` for the default profile, `hermes_ui_<name>` for a named one: a browser
    signed in to several profiles of one server (`/p/<name>/ui`) keeps one cookie for each."""
    profile: str = request.app.state.runtime.settings.profile
    return COOKIE if profile == DEFAULT_PROFILE else f"{COOKIE}_{profile}"


def cookie_path(request: Request) -> str:
    """`/` for the default profile, `/p/<name>/` (where it is served) for a named one."""
    profile: str = request.app.state.runtime.settings.profile
    return "/" if profile == DEFAULT_PROFILE else f"/p/{profile}/"


def over_tls(request: Request) -> bool:
    """The browser reached us over HTTPS: directly, or through a TLS-terminating proxy that
    says so (`X-Forwarded-Proto: https`, `Forwarded: proto=https`; `hermes serve` itself
    speaks plain HTTP). The header is trusted from anyone: it can only add Secure to the
    sender's own cookie, never take it away."""
    if request.url.scheme == "https":
        return True
    forwarded_proto = request.headers.get("x-forwarded-proto", "").split(",")[0]
    if forwarded_proto.strip().lower() == "https":
        return True
    first_hop = request.headers.get("forwarded", "").split(",")[0]
    pairs = (part.strip().partition("=") for part in first_hop.split(";"))
    return any(k.lower() == "proto" and v.strip('"').lower() == "https" for k, _, v in pairs)


def set_cookie(request: Request, response: Response, sign_in: SignIn) -> None:
    response.set_cookie(
        cookie_name(request),
        encode(request, sign_in),
        max_age=IDLE_SECONDS,
        path=cookie_path(request),
        httponly=True,
        samesite="strict",
        secure=over_tls(request),
    )


def clear_cookie(request: Request, response: Response) -> None:
    response.delete_cookie(
        cookie_name(request),
        path=cookie_path(request),
        httponly=True,
        samesite="strict",
        secure=over_tls(request),
    )


async def current(request: Request) -> SignIn | None:
    token = request.cookies.get(cookie_name(request))
    sign_in = decode(request, token) if token else None
    if sign_in is None or await _signed_out(request, sign_in.nonce):
        return None
    return sign_in


def refreshed(sign_in: SignIn) -> SignIn | None:
    """The sign-in with `seen` moved to now, when worth a new cookie (idle expiry slides)."""
    now = time.time()
    if now - sign_in.seen < REFRESH_AFTER:
        return None
    return SignIn(sign_in.kind, sign_in.key_hash, sign_in.nonce, sign_in.issued, now)


def _unauthorized(message: str) -> APIError:
    return APIError(401, message, "authentication_error", "invalid_session_cookie")


async def cookie_auth(request: Request) -> bool:
    """Authenticate by the dashboard cookie when no bearer header was sent. True when the
    cookie decided (accepted: `request.state.api_key` set for a scoped sign-in); False when
    there is no cookie. Raises 401 for a dead sign-in, 403 for a missing CSRF token."""
    token = request.cookies.get(cookie_name(request))
    if not token:
        return False
    sign_in = decode(request, token)
    if sign_in is None or await _signed_out(request, sign_in.nonce):
        raise _unauthorized("Your dashboard sign-in expired or was signed out; sign in again.")
    if request.method not in SAFE_METHODS:
        given = request.headers.get(CSRF_HEADER, "")
        if not hmac.compare_digest(given.encode("latin-1"), csrf_token(request, sign_in).encode()):
            raise APIError(
                403,
                "A request signed in by the dashboard cookie must carry its X-CSRF-Token "
                "header on every state-changing method.",
                "permission_error",
                "csrf_token_invalid",
                "X-CSRF-Token",
            )
    if sign_in.kind == "scoped":
        record = await scoped_record(request, sign_in.key_hash or "")
        if record is None:
            raise _unauthorized("The scoped key you signed in with is revoked or expired.")
        request.state.api_key = record
    return True
