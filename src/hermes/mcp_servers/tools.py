"""An MCP server's tool as a Hermes tool: `mcp_<server>_<tool>` with the server's own JSON
schema; results become text for the model (bounded like every tool result)."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Awaitable, Callable
from typing import Any

from hermes.tools.registry import Tool, ToolContext, ToolError

MAX_NAME = 64  # what OpenAI-compatible APIs accept for a function name
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")

Caller = Callable[[str, dict[str, Any]], Awaitable[Any]]


def tool_name(server: str, tool: str) -> str:
    """`mcp_<server>_<tool>`, made safe for function-name rules and cut to 64 characters
    (with a short hash so two long names stay distinct)."""
    name = f"mcp_{server}_{_UNSAFE.sub('_', tool)}"
    if len(name) <= MAX_NAME:
        return name
    digest = hashlib.sha256(name.encode()).hexdigest()[:8]
    return f"{name[: MAX_NAME - 9]}_{digest}"


def _parameters(schema: dict[str, Any] | None) -> dict[str, Any]:
    params = dict(schema or {})
    params.setdefault("type", "object")
    params.setdefault("properties", {})
    return params


class McpTool(Tool):
    """A tool whose schema comes from an MCP server and whose calls go to it."""

    def __init__(
        self,
        server: str,
        remote_name: str,
        description: str,
        schema: dict[str, Any] | None,
        call: Caller,
    ) -> None:
        self.func = call
        self.name = tool_name(server, remote_name)
        self.server = server
        self.remote_name = remote_name
        self.description = (description or f"{remote_name} (from MCP server {server})").strip()
        self.parameters = _parameters(schema)
        self.is_async = True
        self.takes_context = False
        self._schema = None
        self._call = call

    async def invoke(self, ctx: ToolContext, arguments: dict[str, Any]) -> Any:
        return await self._call(self.remote_name, arguments)


def render_result(server: str, tool: str, result: Any) -> str:
    """The text of a CallToolResult; an `isError` result becomes a ToolError for the model."""
    parts: list[str] = []
    for block in result.content or []:
        kind = getattr(block, "type", None)
        if kind == "text":
            parts.append(block.text)
        elif kind in ("image", "audio"):
            size = len(getattr(block, "data", "") or "") * 3 // 4
            parts.append(f"[{kind} {getattr(block, 'mime_type', '')}, about {size} bytes]")
        elif kind == "resource":
            resource = block.resource
            text = getattr(resource, "text", None)
            parts.append(text if isinstance(text, str) else f"[resource {resource.uri}]")
        elif kind == "resource_link":
            parts.append(f"[resource {block.uri}]")
    if not parts and result.structured_content is not None:
        parts.append(json.dumps(result.structured_content, ensure_ascii=False, default=str))
    text = "\n".join(parts) or "(no output)"
    if result.is_error:
        raise ToolError(f"MCP server {server!r} says {tool} failed: {text}")
    return text
