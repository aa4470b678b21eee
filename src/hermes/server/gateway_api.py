"""`/api/gateway`: the messaging gateway's adapters and state, and pairing requests to
approve or deny (issue 37), as `hermes gateway status|pairing|pair`. Owner only: a pairing
code lets a stranger in, so codes are never shown to anyone else (a scoped key gets 403).
"""

from __future__ import annotations

import asyncio
import re
from typing import Any

from fastapi import APIRouter, Depends
from fastapi import Path as PathParam

from hermes.gateway.access import CODE_ALPHABET, CODE_LENGTH, CODE_TTL, PairingError, PairingStore
from hermes.gateway.status import gateway_report
from hermes.runtime import Runtime
from hermes.server.deps import get_runtime, require_auth
from hermes.server.errors import APIError
from hermes.server.users_api import require_admin

router = APIRouter(
    prefix="/api/gateway",
    tags=["gateway"],
    dependencies=[Depends(require_auth), Depends(require_admin)],
)

_CODE = re.compile(rf"^[{CODE_ALPHABET}]{{{CODE_LENGTH}}}$")
Code = PathParam(..., description="The code the bot sent to the person.", examples=["K7M2QX9P"])
ADAPTER = {
    "configured": True,
    "connected": True,
    "messages_in": 12,
    "messages_out": 11,
    "restarts": 0,
    "last_error": None,
}
PENDING = {
    "code": "K7M2QX9P",
    "identity": "telegram:123456",
    "name": "Alice",
    "created_at": 1767225600.0,
    "expires_at": 1767229200.0,
}


def _ok(example: dict[str, Any]) -> dict[int | str, dict[str, Any]]:
    return {200: {"content": {"application/json": {"example": example}}}}


def _code(code: str) -> str:
    wanted = code.strip().upper()
    if not _CODE.match(wanted):
        raise APIError(
            400,
            f"{code!r} is not a pairing code ({CODE_LENGTH} letters and digits, e.g. K7M2QX9P).",
            code="invalid_pairing_code",
            param="code",
        )
    return wanted


def _not_found(exc: PairingError) -> APIError:
    text = str(exc)
    return APIError(404, text[:1].upper() + text[1:] + ".", code="pairing_code_not_found")


@router.get(
    "",
    summary="Gateway adapters and state",
    responses=_ok(
        {
            "running": True,
            "pid": 4242,
            "home": "telegram:123456",
            "busy_mode": "interrupt",
            "pairing": True,
            "owners": ["telegram:123456"],
            "adapters": {"telegram": ADAPTER},
        }
    ),
)
async def status(runtime: Runtime = Depends(get_runtime)) -> dict[str, Any]:
    """What `hermes gateway status --json` shows, plus whether pairing is on and who the
    owners are: each platform configured or not, connected, messages, restarts, last error."""
    records = runtime.store.records if runtime.store.documents is not None else None
    report = await asyncio.to_thread(gateway_report, runtime.settings, records, runtime.registry)
    gateway = runtime.settings.gateway
    return {**report, "pairing": gateway.pairing, "owners": list(gateway.owner)}


@router.get(
    "/pairing",
    summary="Pairing requests waiting, and who is paired",
    responses=_ok({"pending": [PENDING], "approved": [{"identity": "telegram:42"}]}),
)
async def pairing(runtime: Runtime = Depends(get_runtime)) -> dict[str, Any]:
    """Pending codes (live for an hour) with who asked, and the paired identities."""
    store = PairingStore(runtime.settings.home, documents=runtime.store.documents)
    pending, approved = await asyncio.gather(
        asyncio.to_thread(store.pending), asyncio.to_thread(store.approved)
    )
    shown = [
        {
            "code": p["code"],
            "identity": p.get("identity"),
            "name": p.get("name"),
            "created_at": p.get("created_at"),
            "expires_at": (p.get("created_at") or 0) + CODE_TTL,
        }
        for p in sorted(pending, key=lambda p: p.get("created_at") or 0)
    ]
    paired = [
        {"identity": identity, **(v if isinstance(v, dict) else {})}
        for identity, v in sorted(approved.items())
    ]
    return {"pending": shown, "approved": paired}


@router.post(
    "/pairing/{code}/approve",
    summary="Approve a pairing request",
    responses={**_ok({"approved": "telegram:123456"}), 404: {"description": "No such code."}},
)
async def approve(code: str = Code, runtime: Runtime = Depends(get_runtime)) -> dict[str, Any]:
    """The person may talk to Hermes from now on, in their own scope (`hermes gateway pair`)."""
    return {"approved": await _answer(runtime, code, approve=True)}


@router.post(
    "/pairing/{code}/deny",
    summary="Deny a pairing request",
    responses={**_ok({"denied": "telegram:123456"}), 404: {"description": "No such code."}},
)
async def deny(code: str = Code, runtime: Runtime = Depends(get_runtime)) -> dict[str, Any]:
    """The code is dropped unapproved; the person stays a stranger."""
    return {"denied": await _answer(runtime, code, approve=False)}


async def _answer(runtime: Runtime, code: str, *, approve: bool) -> str:
    """Approve or deny a pending code; the identity it named (404 when there is none)."""
    store = PairingStore(runtime.settings.home, documents=runtime.store.documents)
    try:
        return await asyncio.to_thread(store.approve if approve else store.deny, _code(code))
    except PairingError as exc:
        raise _not_found(exc) from None
