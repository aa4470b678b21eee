"""POST /v1/responses, GET and DELETE /v1/responses/{id}: the OpenAI Responses API on Hermes'
agent, for clients that default to it (`client.responses.create`, the OpenAI Agents SDK).

Conversation state maps onto Hermes sessions: `previous_response_id` continues the session of
that (stored) response, `conversation` names a session directly, and `X-Hermes-Session-Id`
works as on chat completions; without any of them a stored response starts a new session
(named after the response id, seeded with the input's earlier items) and `store: false` runs
statelessly. Stored responses belong to the caller's scope (`X-Hermes-User-Id`).
"""

from __future__ import annotations

import asyncio
import functools
import json
from typing import Any

from fastapi import APIRouter, Request
from starlette.responses import Response

from hermes.agent.turn import TurnObserver, TurnRequest, TurnResult
from hermes.runtime import Runtime
from hermes.scopes import InvalidIdError, validate_id
from hermes.server.deps import (
    SESSION_HEADER,
    get_runtime,
    get_scope,
    require_auth,
    session_from_headers,
)
from hermes.server.errors import APIError, from_turn_error
from hermes.server.model_names import OFF_LOOP_BYTES, image_limits, model_or_404
from hermes.server.responses_stream import ResponseEvents
from hermes.server.responses_wire import (
    ResponseBuilder,
    ResponsesCall,
    new_response_id,
    parse_responses_body,
)
from hermes.server.streaming import TurnStreamResponse
from hermes.store.response_store import ResponseStore, StoredResponse

router = APIRouter()

SOURCE = "api"


def response_store(request: Request) -> ResponseStore:
    """The app's store of responses (shared records in the store), made on first use."""
    state = request.app.state
    store: ResponseStore | None = getattr(state, "responses", None)
    if store is None:
        runtime: Runtime = state.runtime
        store = state.responses = ResponseStore(
            runtime.store, legacy=runtime.settings.home / "responses.db"
        )
    return store


def named_session(
    value: str, header: str | None, *, param: str, what: str, code: str, prefix: str
) -> str:
    """The session a body field (`param`) names, checked as an id (400 `code`, the message
    opening with `prefix`) and against the session header (400 when they differ)."""
    try:
        named = validate_id(value, what=what)
    except InvalidIdError as exc:
        raise APIError(400, f"{prefix}{exc}.", code=code, param=param) from None
    if header is not None and header != named:
        raise APIError(
            400,
            f"`{param}` {named!r} and {SESSION_HEADER} {header!r} name different sessions; "
            "send one of them.",
            code="conflicting_session",
            param=param,
        )
    return named


async def previous_session(
    request: Request, scope: str, response_id: str, expected: str | None, named_by: str
) -> str | None:
    """The session of the stored response `previous_response_id` names (404 when the scope
    has none); 400 when it is not `expected`, the session `named_by` names."""
    previous = await response_store(request).get(scope, response_id)
    if previous is None:
        raise APIError(
            404,
            f"Previous response not found: {response_id!r} (it was never stored, was stored "
            "with store: false, or belongs to another user).",
            code="previous_response_not_found",
            param="previous_response_id",
        )
    if expected is not None and previous.session_id != expected:
        raise APIError(
            400,
            f"`previous_response_id` belongs to another session than {named_by}; send one of them.",
            code="conflicting_session",
            param="previous_response_id",
        )
    return previous.session_id


async def _session_for(
    request: Request, call: ResponsesCall, header: str | None, scope: str
) -> str | None:
    """The Hermes session a request continues, if any (400/404 when the ways disagree)."""
    session_id = header
    if call.conversation is not None:
        session_id = named_session(
            call.conversation,
            header,
            param="conversation",
            what="conversation id",
            code="invalid_conversation_id",
            prefix="The ",
        )
    if call.previous_response_id is not None:
        session_id = await previous_session(
            request, scope, call.previous_response_id, header, f"{SESSION_HEADER} {header!r}"
        )
    return session_id


async def _run(runtime: Runtime, req: TurnRequest, observer: TurnObserver | None) -> TurnResult:
    try:
        return await runtime.agent.run_turn(req, observer)
    except Exception as exc:
        err = from_turn_error(exc)
        if err is None:
            raise
        raise err from None


async def create_response(request: Request) -> Response:
    """The endpoint (a plain Starlette route, like chat completions)."""
    await require_auth(request)
    runtime = await get_runtime(request)
    scope = await get_scope(request)
    header = session_from_headers(request)
    raw = await request.body()
    limits = await image_limits(runtime, raw)
    parse = functools.partial(
        parse_responses_body,
        raw,
        default_model=runtime.settings.server.model_name,
        image_limits=limits,
    )
    call = await asyncio.to_thread(parse) if limits and len(raw) > OFF_LOOP_BYTES else parse()
    call.model = model_or_404(call.model, runtime.settings)
    session_id = await _session_for(request, call, header, scope)
    store = response_store(request)
    response_id = new_response_id()
    if session_id is None and call.store:
        session_id = response_id.replace("resp_", "resp-", 1)
    req = TurnRequest(
        user_message=call.user_message,
        session_id=session_id,
        scope=scope,
        source=SOURCE,
        history=call.history,
        system_extra=call.system_extra,
        model_options=call.options,
        client_tools=call.client_tools,
        tool_results=call.tool_results,
        images=call.images.blobs if call.images is not None else {},
    )
    builder = ResponseBuilder(call, response_id)

    async def run(observer: TurnObserver | None) -> TurnResult:
        result = await _run(runtime, req, observer)
        body = builder.body(result)
        if call.store:
            await store.save(scope, StoredResponse(response_id, result.session_id, body))
        return result

    if call.stream:
        headers = {SESSION_HEADER: session_id} if session_id else {}
        return TurnStreamResponse(run, ResponseEvents(builder), headers)
    result = await run(None)
    return _json(builder.body(result), {SESSION_HEADER: result.session_id})


def _json(body: dict[str, Any], headers: dict[str, str] | None = None) -> Response:
    return Response(json.dumps(body), headers=headers, media_type="application/json")


def _not_found(response_id: str) -> APIError:
    return APIError(
        404,
        f"No stored response {response_id!r} in your scope.",
        code="response_not_found",
        param="response_id",
    )


async def get_response(request: Request) -> Response:
    await require_auth(request)
    scope = await get_scope(request)
    response_id = request.path_params["response_id"]
    stored = await response_store(request).get(scope, response_id)
    if stored is None:
        raise _not_found(response_id)
    return _json(stored.body)


async def delete_response(request: Request) -> Response:
    await require_auth(request)
    scope = await get_scope(request)
    response_id = request.path_params["response_id"]
    if not await response_store(request).delete(scope, response_id):
        raise _not_found(response_id)
    return _json({"id": response_id, "object": "response", "deleted": True})


router.add_route("/v1/responses", create_response, methods=["POST"], include_in_schema=False)
router.add_route(
    "/v1/responses/{response_id}", get_response, methods=["GET"], include_in_schema=False
)
router.add_route(
    "/v1/responses/{response_id}", delete_response, methods=["DELETE"], include_in_schema=False
)
