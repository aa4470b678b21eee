"""POST /v1/chat/completions: one agent turn per request, stateful with X-Hermes-Session-Id."""

from __future__ import annotations

import asyncio
import functools
import json

from fastapi import APIRouter, Request
from starlette.responses import Response

from hermes.agent.turn import TurnObserver, TurnRequest, TurnResult
from hermes.runtime import Runtime
from hermes.server.deps import (
    SESSION_HEADER,
    get_runtime,
    get_scope,
    require_auth,
    session_from_headers,
)
from hermes.server.errors import from_turn_error
from hermes.server.idempotency import (
    StoredResponse,
    answer_once,
)
from hermes.server.model_names import OFF_LOOP_BYTES, image_limits, model_or_404
from hermes.server.openai_compat import (
    ChatCall,
    ChunkWriter,
    completion_body,
    new_completion_id,
    parse_chat_body,
)
from hermes.server.streaming import TurnStreamResponse

router = APIRouter()

SOURCE = "api"


def _turn_request(call: ChatCall, session_id: str | None, scope: str) -> TurnRequest:
    return TurnRequest(
        user_message=call.user_message,
        session_id=session_id,
        scope=scope,
        source=SOURCE,
        history=None if session_id is not None else call.history,
        system_extra=call.system_extra,
        model_options=call.options,
        client_tools=call.client_tools,
        tool_results=call.tool_results,
        images=call.images.blobs if call.images is not None else {},
    )


async def _run(runtime: Runtime, req: TurnRequest, observer: TurnObserver | None) -> TurnResult:
    """Run one turn; model and lock failures become envelopes (the agent stored nothing)."""
    try:
        return await runtime.agent.run_turn(req, observer)
    except Exception as exc:
        err = from_turn_error(exc)
        if err is None:
            raise
        raise err from None


async def _complete(runtime: Runtime, req: TurnRequest, call: ChatCall) -> StoredResponse:
    result = await _run(runtime, req, None)
    body = completion_body(
        new_completion_id(),
        call.model,
        result.content,
        result.finish_reason or "stop",
        result.usage,
        result.tool_calls,
    )
    return StoredResponse(200, json.dumps(body).encode(), {SESSION_HEADER: result.session_id})


async def chat_completions(request: Request) -> Response:
    """The endpoint. A plain Starlette route rather than a FastAPI one: it reads its body itself
    and has nothing to validate or document, and FastAPI's dependency solving and request
    wrapping were a tenth of a turn's CPU (bench/api.py). Auth and scope are the same functions
    the other routes use as dependencies."""
    await require_auth(request)
    runtime = await get_runtime(request)
    scope = await get_scope(request)
    session_id = session_from_headers(request)
    raw = await request.body()
    settings = runtime.settings.server
    limits = await image_limits(runtime, raw)
    parse = functools.partial(
        parse_chat_body,
        raw,
        default_model=settings.model_name,
        ignore_client_tools=settings.ignore_client_tools,
        image_limits=limits,
    )
    # decoding and hashing megabytes of base64 would stall every other request meanwhile
    call = await asyncio.to_thread(parse) if limits and len(raw) > OFF_LOOP_BYTES else parse()
    call.model = model_or_404(call.model, runtime.settings)
    req = _turn_request(call, session_id, scope)
    if call.stream:
        headers = {SESSION_HEADER: session_id} if session_id else {}
        return TurnStreamResponse(
            lambda obs: _run(runtime, req, obs),
            ChunkWriter(new_completion_id(), call.model),
            headers,
        )
    return await answer_once(request, scope, raw, session_id, lambda: _complete(runtime, req, call))


router.add_route(
    "/v1/chat/completions", chat_completions, methods=["POST"], include_in_schema=False
)
