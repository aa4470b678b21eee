"""The wire shapes of `/v1/runs`: request bodies (validated, documented in OpenAPI), the
input's message and history, and the run object clients read back."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from hermes.server.errors import APIError
from hermes.store.base import RunRecord


class InputItem(BaseModel):
    """One message of an `input` array (a Responses-style `type` is accepted and ignored)."""

    model_config = ConfigDict(extra="forbid")

    type: Literal["message"] | None = None
    role: Literal["user", "assistant", "system", "developer"] = "user"
    content: str | list[dict[str, Any]]


class RunCreate(BaseModel):
    """POST /v1/runs body; unknown fields are refused so typos do not pass silently."""

    model_config = ConfigDict(extra="forbid")

    input: str | list[InputItem] = Field(
        description="The message, or an array of messages whose last one is the message "
        "and whose earlier ones are the conversation so far."
    )
    instructions: str | None = Field(
        default=None, description="Extra system instructions for this run."
    )
    session_id: str | None = Field(
        default=None,
        description="Continue this server-side session of your scope (as X-Hermes-Session-Id).",
    )
    previous_response_id: str | None = Field(
        default=None, description="Continue the session of this stored /v1/responses response."
    )
    model: str | None = Field(default=None, description="One of GET /v1/models (default: hermes).")


class RunAccepted(BaseModel):
    run_id: str
    status: Literal["queued", "running"]


class RunObject(BaseModel):
    """GET /v1/runs/{id}."""

    object: Literal["hermes.run"] = "hermes.run"
    run_id: str
    status: str
    session_id: str | None
    model: str | None
    created_at: float
    updated_at: float
    output: str | None = None
    usage: dict[str, int] | None = None
    error: dict[str, Any] | None = None


class SteerBody(BaseModel):
    model_config = ConfigDict(extra="forbid")

    text: str = Field(description="Added to the running turn before its next model call.")


class SteerAccepted(BaseModel):
    object: Literal["hermes.run.steer_response"] = "hermes.run.steer_response"
    run_id: str
    accepted: bool


class ApprovalBody(BaseModel):
    model_config = ConfigDict(extra="forbid")

    choice: str = Field(description="once, session, always or deny.")
    all: bool = Field(default=False, description="Answer every pending request, not the oldest.")


class ApprovalAnswered(BaseModel):
    object: Literal["hermes.run.approval_response"] = "hermes.run.approval_response"
    run_id: str
    choice: str
    resolved: int


@dataclass
class RunInput:
    message: str
    history: list[dict[str, Any]]
    system_extra: str | None


def _text(content: str | list[dict[str, Any]], where: str) -> str:
    """A message's text: a string, or the `text` of its parts (`input_text`, `text`, ...)."""
    if isinstance(content, str):
        return content
    texts = []
    for i, part in enumerate(content):
        text = part.get("text") if isinstance(part, dict) else None
        if not isinstance(text, str):
            raise APIError(
                400,
                f"`{where}.content[{i}]` is not a text part: runs take text only (parts "
                'like {"type": "input_text", "text": "..."}).',
                code="unsupported_content",
                param=f"{where}.content[{i}]",
            )
        texts.append(text)
    return "".join(texts)


def run_input(body: RunCreate) -> RunInput:
    """The run's message, the history before it, and system text (`instructions` and any
    system/developer items of the array)."""
    system = [body.instructions] if body.instructions else []
    history: list[dict[str, Any]]
    if isinstance(body.input, str):
        message, history = body.input, []
    else:
        if not body.input:
            raise APIError(
                400, "`input` is an empty array: send at least one message.", param="input"
            )
        *earlier, last = body.input
        message = _text(last.content, f"input[{len(earlier)}]")
        history = []
        for i, item in enumerate(earlier):
            text = _text(item.content, f"input[{i}]")
            if item.role in ("system", "developer"):
                system.append(text)
            else:
                history.append({"role": item.role, "content": text})
    if not message.strip():
        raise APIError(400, "The run's message is empty: send some text in `input`.", param="input")
    return RunInput(message, history, "\n\n".join(system) or None)


def run_body(record: RunRecord) -> dict[str, Any]:
    body: dict[str, Any] = {
        "object": "hermes.run",
        "run_id": record.id,
        "status": record.status,
        "session_id": record.session_id,
        "model": record.model,
        "created_at": record.created_at,
        "updated_at": record.updated_at,
    }
    for name in ("output", "usage", "error"):
        value = getattr(record, name)
        if value is not None:
            body[name] = value
    return body
