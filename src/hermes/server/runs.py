"""`/v1/runs`: an agent turn as a run the server owns (SPEC §13). Start it, read its status,
follow its events (SSE, with replay), stop it, steer it, answer its approval requests.
Any replica answers for any run: commands for a run another replica runs travel through
the store (`runs_remote`, approvals: `runs_live.RunApprover`).

A run belongs to the caller's scope; another scope's run is a 404 like an unknown one. The
turn is a task of the server, not of the request, so it finishes when the client goes away.
"""

from __future__ import annotations

import asyncio
import json
from typing import get_args

from fastapi import APIRouter, Depends, Request
from starlette.responses import JSONResponse, Response

from hermes.agent.turn import TurnRequest
from hermes.runtime import Runtime
from hermes.server.deps import (
    get_runtime,
    get_scope,
    require_auth,
    scope_with_session,
    session_from_headers,
)
from hermes.server.errors import APIError
from hermes.server.idempotency import (
    StoredResponse,
    answer_once,
)
from hermes.server.model_names import model_or_404
from hermes.server.responses import named_session, previous_session
from hermes.server.runs_live import ANSWER, LiveRun
from hermes.server.runs_manager import STOP_WAIT_SECONDS, RunManager
from hermes.server.runs_remote import send_steer, send_stop
from hermes.server.runs_sse import OPENAPI_SSE, event_stream
from hermes.server.runs_wire import (
    ApprovalAnswered,
    ApprovalBody,
    RunAccepted,
    RunCreate,
    RunObject,
    SteerAccepted,
    SteerBody,
    run_body,
    run_input,
)
from hermes.store.base import RUN_FINAL, RecordStore, RunRecord
from hermes.tools.approval import Decision

router = APIRouter(prefix="/v1/runs", tags=["runs"], dependencies=[Depends(require_auth)])

SOURCE = "api"
STEER_MAX_CHARS = 20_000


def runs_of(request: Request) -> RunManager:
    manager: RunManager = request.app.state.runs
    return manager


def run_not_found(run_id: str) -> APIError:
    return APIError(
        404,
        f"No run {run_id!r} in your scope (unknown, or started by another user or key).",
        code="run_not_found",
        param="run_id",
    )


async def _session_for(request: Request, body: RunCreate, scope: str) -> str | None:
    """The session the run continues: `session_id`, the session header, or the session of
    `previous_response_id` (400 when they name different sessions)."""
    header = session_from_headers(request)
    session_id = header
    if body.session_id is not None:
        session_id = named_session(
            body.session_id,
            header,
            param="session_id",
            what="session id",
            code="invalid_session_id",
            prefix="`session_id`: ",
        )
    if body.previous_response_id is not None:
        session_id = await previous_session(
            request, scope, body.previous_response_id, session_id, "the one named"
        )
    return session_id


@router.post(
    "",
    status_code=202,
    response_model=RunAccepted,
    summary="Start a run",
    description="Starts an agent turn the server owns and answers at once with its id; "
    "follow it with GET /v1/runs/{id}/events. Honours Idempotency-Key.",
)
async def create_run(
    body: RunCreate,
    request: Request,
    runtime: Runtime = Depends(get_runtime),
    scope: str = Depends(get_scope),
) -> Response:
    model = model_or_404(body.model, runtime.settings)
    session_id = await _session_for(request, body, scope)
    turn_scope = scope_with_session(request, scope, session_id)
    given = run_input(body)
    manager = runs_of(request)

    async def start() -> StoredResponse:
        req = TurnRequest(
            user_message=given.message,
            session_id=session_id,
            scope=turn_scope,
            source=SOURCE,
            history=given.history or None,
            system_extra=given.system_extra,
        )
        run = await manager.start(scope, req, model=model)
        accepted = {"run_id": run.record.id, "status": run.record.status}
        return StoredResponse(202, json.dumps(accepted).encode(), {})

    return await answer_once(
        request, scope, body.model_dump_json().encode(), session_from_headers(request), start
    )


@router.get("/{run_id}", response_model=RunObject, summary="A run's status and outcome")
async def get_run(run_id: str, request: Request, scope: str = Depends(get_scope)) -> JSONResponse:
    record = await runs_of(request).get(scope, run_id)
    if record is None:
        raise run_not_found(run_id)
    return JSONResponse(run_body(record))


@router.get(
    "/{run_id}/events",
    summary="Follow a run's events (SSE)",
    description="Every event so far first, then live ones; ends after run.completed, "
    "run.failed or run.cancelled.",
    responses=OPENAPI_SSE,  # type: ignore[arg-type]
    response_class=Response,
)
async def run_events(run_id: str, request: Request, scope: str = Depends(get_scope)) -> Response:
    manager = runs_of(request)
    if await manager.get(scope, run_id) is None:
        raise run_not_found(run_id)
    return event_stream(manager.follow(scope, run_id))


async def _live(request: Request, scope: str, run_id: str) -> LiveRun | RunRecord:
    """The run as this process holds it, else its stored record (another replica runs it,
    or it is over and let go of); 404 if the scope has no such run."""
    manager = runs_of(request)
    run = manager.live(scope, run_id)
    if run is not None:
        return run
    record = await manager.get(scope, run_id)
    if record is None:
        raise run_not_found(run_id)
    return record


def _to_other_replica(request: Request, run_id: str) -> RecordStore:
    """Where a command for a run another replica runs is left; 409 when the store keeps no
    shared records (then a run is controlled only where its turn runs)."""
    control = runs_of(request).control
    if control.records is None or not control.shared:
        raise APIError(
            409,
            f"Run {run_id!r} is running in another Hermes process and this store cannot "
            "pass commands between them; send this request to that process.",
            code="run_on_other_replica",
            param="run_id",
        )
    return control.records


async def _answer_elsewhere(
    request: Request, scope: str, run_id: str, choice: Decision, *, every: bool
) -> LiveRun | RunRecord | None:
    """The run as `_live` finds it; None when another replica runs it and waits for an
    approval: the answer is then left in the store for that replica to take."""
    manager = runs_of(request)
    if manager.live(scope, run_id) is None:
        record = await manager.get(scope, run_id)
        records = request.app.state.runtime.store.records
        if record is not None and record.status == "waiting_for_approval" and records:
            body = {"choice": choice, "every": every}
            await asyncio.to_thread(records.put_record, ANSWER, scope, run_id, body, ttl=600.0)
            return None
    return await _live(request, scope, run_id)


@router.post(
    "/{run_id}/stop",
    response_model=RunObject,
    summary="Stop a run",
    description="Cancels the run's turn; what it already said is kept in its session. "
    "Stopping a finished run returns it unchanged.",
)
async def stop_run(run_id: str, request: Request, scope: str = Depends(get_scope)) -> JSONResponse:
    manager = runs_of(request)
    run = await _live(request, scope, run_id)
    if isinstance(run, LiveRun):
        await manager.stop(run)
        return JSONResponse(run_body(run.record))
    if run.status in RUN_FINAL:
        return JSONResponse(run_body(run))
    records = _to_other_replica(request, run_id)
    await asyncio.to_thread(send_stop, records, scope, run_id)
    return JSONResponse(run_body(await manager.wait_over(run, STOP_WAIT_SECONDS)))


@router.post(
    "/{run_id}/steer",
    response_model=SteerAccepted,
    summary="Steer a running run",
    description="Adds text to the running turn, sent to the model before its next call.",
)
async def steer_run(
    run_id: str, body: SteerBody, request: Request, scope: str = Depends(get_scope)
) -> JSONResponse:
    text = body.text.strip()
    if not text or len(text) > STEER_MAX_CHARS:
        raise APIError(
            400,
            f"`text` must hold 1-{STEER_MAX_CHARS} characters (not only spaces).",
            code="invalid_value",
            param="text",
        )
    run = await _live(request, scope, run_id)
    record = run if isinstance(run, RunRecord) else run.record
    if record.status in RUN_FINAL:
        raise APIError(
            409,
            f"Run {run_id!r} is already {record.status}; steer a running run.",
            code="run_not_active",
            param="run_id",
        )
    if isinstance(run, LiveRun):
        run.steering.put_nowait(text)
    else:
        records = _to_other_replica(request, run_id)
        await asyncio.to_thread(send_steer, records, scope, run_id, text)
    return JSONResponse({"object": "hermes.run.steer_response", "run_id": run_id, "accepted": True})


@router.post(
    "/{run_id}/approval",
    response_model=ApprovalAnswered,
    summary="Answer a run's approval request",
    description="once, session or always lets the waiting dangerous tool call run; deny "
    "refuses it. Answers the oldest pending request (all of them with `all`).",
)
async def answer_approval(
    run_id: str, body: ApprovalBody, request: Request, scope: str = Depends(get_scope)
) -> JSONResponse:
    choices: tuple[str, ...] = get_args(Decision)
    if body.choice not in choices:
        raise APIError(
            400,
            f"`choice` {body.choice[:50]!r} is not one of {', '.join(choices)}.",
            code="invalid_approval_choice",
            param="choice",
        )
    choice: Decision = body.choice  # type: ignore[assignment]
    run = await _answer_elsewhere(request, scope, run_id, choice, every=body.all)
    resolved = 1 if run is None else 0
    if run is not None and not isinstance(run, RunRecord):
        resolved = run.resolve_approvals(choice, every=body.all)
    if run is not None and not resolved:
        status = run.status if isinstance(run, RunRecord) else run.record.status
        raise APIError(
            409,
            f"Run {run_id!r} is not waiting for an approval (status {status}).",
            code="approval_not_pending",
            param="run_id",
        )
    return JSONResponse(
        {
            "object": "hermes.run.approval_response",
            "run_id": run_id,
            "choice": choice,
            "resolved": resolved,
        }
    )
