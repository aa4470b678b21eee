"""`POST /api/sessions/{id}/chat` and `/chat/stream`: one turn in a named session of the
caller's scope (SPEC §13), for clients that think in sessions rather than in messages.

`/chat` answers when the turn is done (a dangerous command is refused, as on the other
request-bound routes: nobody could approve it). `/chat/stream` starts a run in the session
and streams that run's events (the shapes of GET /v1/runs/{id}/events); its run id is in
every event, so its approval requests can be answered on /v1/runs/{id}/approval.
"""

from __future__ import annotations

from fastapi import APIRouter, Depends, Request
from pydantic import BaseModel, ConfigDict, Field
from starlette.responses import JSONResponse, Response

from hermes.agent.turn import TurnRequest
from hermes.runtime import Runtime
from hermes.server.chat import _run
from hermes.server.deps import (
    get_runtime,
    get_scope,
    require_auth,
    scope_with_session,
    session_id_or_400,
)
from hermes.server.errors import APIError
from hermes.server.runs import runs_of
from hermes.server.runs_manager import usage_body
from hermes.server.runs_sse import OPENAPI_SSE, event_stream

router = APIRouter(prefix="/api/sessions", tags=["sessions"], dependencies=[Depends(require_auth)])

SOURCE = "api"
RUN_HEADER = "X-Hermes-Run-Id"


class ChatBody(BaseModel):
    model_config = ConfigDict(extra="forbid")

    message: str = Field(description="The user's message for this turn.")


class ChatAnswer(BaseModel):
    object: str = "hermes.session.chat"
    session_id: str
    output: str
    usage: dict[str, int]


def _turn(request: Request, scope: str, session_id: str, body: ChatBody) -> TurnRequest:
    if not body.message.strip():
        raise APIError(400, "`message` is empty: send some text.", param="message")
    return TurnRequest(
        user_message=body.message,
        session_id=session_id,
        scope=scope_with_session(request, scope, session_id),
        source=SOURCE,
    )


@router.post(
    "/{session_id}/chat",
    response_model=ChatAnswer,
    summary="One turn in a session",
    description="Sends `message` as the session's next turn and answers with the reply.",
)
async def session_chat(
    session_id: str,
    body: ChatBody,
    request: Request,
    runtime: Runtime = Depends(get_runtime),
    scope: str = Depends(get_scope),
) -> JSONResponse:
    req = _turn(request, scope, session_id_or_400(session_id), body)
    result = await _run(runtime, req, None)
    return JSONResponse(
        {
            "object": "hermes.session.chat",
            "session_id": result.session_id,
            "output": result.content,
            "usage": usage_body(result),
        }
    )


@router.post(
    "/{session_id}/chat/stream",
    summary="One turn in a session, streamed (SSE)",
    description="Starts the turn as a run and streams its events, as GET /v1/runs/{id}/events.",
    responses=OPENAPI_SSE,  # type: ignore[arg-type]
    response_class=Response,
)
async def session_chat_stream(
    session_id: str,
    body: ChatBody,
    request: Request,
    runtime: Runtime = Depends(get_runtime),
    scope: str = Depends(get_scope),
) -> Response:
    req = _turn(request, scope, session_id_or_400(session_id), body)
    manager = runs_of(request)
    run = await manager.start(scope, req, model=runtime.settings.server.model_name)
    return event_stream(manager.follow(scope, run.record.id), {RUN_HEADER: run.record.id})
