"""A streamed turn as Responses API events (`event: response.*` with a `sequence_number`).

Order: `response.created`, `response.in_progress`; the answer's message item (added, content
part added, `response.output_text.delta`s, text done, part done, item done); one
`function_call` item per call of the caller's tools a paused turn hands back (added,
arguments delta and done, item done); then `response.completed` carrying the whole response
(or `response.failed`). Hermes' own tool activity goes out as SSE comments, which every client
skips, so long tool runs keep the connection visibly alive.
"""

from __future__ import annotations

import json
from typing import Any

from hermes.agent.turn import TurnResult
from hermes.server.errors import APIError
from hermes.server.responses_wire import ResponseBuilder


class ResponseEvents:
    """`StreamFormat` for /v1/responses."""

    def __init__(self, builder: ResponseBuilder) -> None:
        self.builder = builder
        self._sequence = 0
        self._message_open = False
        self._text: list[str] = []

    def _event(self, kind: str, **fields: Any) -> bytes:
        payload = {"type": kind, "sequence_number": self._sequence, **fields}
        self._sequence += 1
        return f"event: {kind}\ndata: {json.dumps(payload)}\n\n".encode()

    def opening(self) -> bytes:
        snapshot = self.builder.envelope("in_progress", [])
        return self._event("response.created", response=snapshot) + self._event(
            "response.in_progress", response=snapshot
        )

    def _open_message(self) -> bytes:
        self._message_open = True
        item = self.builder.message_item("", status="in_progress")
        part = {"type": "output_text", "text": "", "annotations": [], "logprobs": []}
        return self._event("response.output_item.added", output_index=0, item=item) + self._event(
            "response.content_part.added",
            item_id=item["id"],
            output_index=0,
            content_index=0,
            part=part,
        )

    def delta(self, text: str) -> bytes:
        out = b"" if self._message_open else self._open_message()
        self._text.append(text)
        return out + self._event(
            "response.output_text.delta",
            item_id=self.builder.message_id,
            output_index=0,
            content_index=0,
            delta=text,
            logprobs=[],
        )

    def tool_progress(self, tool: str, call_id: str, status: str) -> bytes:
        return f": hermes tool {tool} {status}\n\n".encode()

    def _close_message(self) -> bytes:
        text = "".join(self._text)
        item = self.builder.message_item(text)
        ids: dict[str, Any] = {"item_id": item["id"], "output_index": 0, "content_index": 0}
        return (
            self._event("response.output_text.done", **ids, text=text, logprobs=[])
            + self._event("response.content_part.done", **ids, part=item["content"][0])
            + self._event("response.output_item.done", output_index=0, item=item)
        )

    def _calls(self, result: TurnResult, first_index: int) -> bytes:
        out = b""
        for index, call in enumerate(result.tool_calls, start=first_index):
            done = self.builder.call_item(call.id, call.name, call.arguments)
            added = {**done, "arguments": "", "status": "in_progress"}
            ids = {"item_id": done["id"], "output_index": index}
            out += self._event("response.output_item.added", output_index=index, item=added)
            out += self._event(
                "response.function_call_arguments.delta", **ids, delta=call.arguments
            )
            out += self._event(
                "response.function_call_arguments.done",
                **ids,
                name=call.name,
                arguments=call.arguments,
            )
            out += self._event("response.output_item.done", output_index=index, item=done)
        return out

    def closing(self, result: TurnResult, streamed: bool) -> bytes:
        out = b""
        if not self._message_open and result.content:
            out += self.delta(result.content)
        elif self._message_open and "".join(self._text) != result.content:
            # text from steps before Hermes' own tool calls was streamed too; the item ends
            # with the answer the response object holds
            self._text = [result.content]
        if self._message_open:
            out += self._close_message()
        out += self._calls(result, 1 if self._message_open else 0)
        return out + self._event("response.completed", response=self.builder.body(result))

    def failure(self, err: APIError) -> bytes:
        failed = self.builder.envelope("failed", [])
        failed["error"] = {"code": err.code or "server_error", "message": err.message}
        return self._event("response.failed", response=failed)
