"""One configured MCP server: a background task that connects, lists its tools, keeps the
session alive (pings), and reconnects with back-off when the server dies or never answers.

Nothing here blocks the caller: `start()` returns at once, tools appear when the server is
connected and disappear while it is down, and the state (with the last error) is always
readable for `/health`, `hermes doctor` and `hermes mcp list`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from pathlib import Path
from typing import Any, TextIO

from hermes.config.settings import McpServerSettings
from hermes.errors import HermesError
from hermes.mcp_servers.sdk import require_sdk
from hermes.mcp_servers.tools import McpTool, render_result
from hermes.tools.registry import Tool, ToolError

log = logging.getLogger(__name__)

BACKOFF_START_S = 1.0
BACKOFF_MAX_S = 60.0
PING_INTERVAL_S = 30.0
MAX_TOOL_PAGES = 20


class _ConnectionLost(HermesError):
    """The session broke (process exited, stream closed, ping unanswered)."""


def _describe(exc: BaseException) -> str:
    """A one-line reason, digging into exception groups (anyio task groups wrap errors)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    if isinstance(exc, TimeoutError):
        return "did not answer in time"
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0][:300]


class McpConnection:
    def __init__(self, name: str, config: McpServerSettings, log_dir: Path | None = None) -> None:
        self.name = name
        self.config = config
        self.log_dir = log_dir
        self.state = "idle"
        self.error: str | None = None
        self.tools: list[Tool] = []
        self.connects = 0
        self.next_retry: float | None = None
        self.backoff_start = BACKOFF_START_S
        self.backoff_max = BACKOFF_MAX_S
        self.ping_interval = PING_INTERVAL_S
        self._client: Any = None
        self._task: asyncio.Task[None] | None = None
        self._stop = asyncio.Event()
        self._lost = asyncio.Event()
        self._settled = asyncio.Event()

    # -- lifecycle ------------------------------------------------------------------------

    def start(self) -> None:
        if self._task is None:
            self.state = "connecting"
            self._task = asyncio.get_running_loop().create_task(
                self._run(), name=f"mcp:{self.name}"
            )

    async def wait_settled(self, within: float) -> None:
        """Until the first attempt connected or failed (at most `within` seconds)."""
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(within):
                await self._settled.wait()

    async def aclose(self) -> None:
        self._stop.set()
        self._lost.set()
        task, self._task = self._task, None
        if task is None:
            return
        try:
            async with asyncio.timeout(10):
                await asyncio.shield(task)
        except TimeoutError:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        self.state = "stopped"

    def status(self) -> dict[str, Any]:
        report: dict[str, Any] = {
            "status": self.state,
            "transport": self.config.transport(),
            "tools": [t.name for t in self.tools],
        }
        if self.error:
            report["error"] = self.error
        if self.state in ("error", "reconnecting") and self.next_retry is not None:
            report["retry_in_s"] = round(max(0.0, self.next_retry - time.monotonic()), 1)
        return report

    # -- the background task ------------------------------------------------------------

    async def _run(self) -> None:
        delay = self.backoff_start
        while not self._stop.is_set():
            try:
                await self._session()
                delay = self.backoff_start  # it was up: start the back-off again
            except Exception as exc:
                self.error = _describe(exc)
                self.state = "error"
                log.warning("MCP server %s: %s", self.name, self.error)
            self.tools = []
            self._client = None
            self._settled.set()
            if self._stop.is_set():
                break
            self.next_retry = time.monotonic() + delay
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(delay):
                    await self._stop.wait()
            delay = min(delay * 2, self.backoff_max)
            if self.state != "error":
                self.state = "reconnecting"

    def _transport(self, stack: contextlib.AsyncExitStack) -> Any:
        require_sdk()
        if self.config.command:
            from mcp.client.stdio import StdioServerParameters, stdio_client

            params = StdioServerParameters(
                command=self.config.command, args=self.config.args, env=self.config.env or None
            )
            return stdio_client(params, errlog=self._errlog(stack))
        from mcp.client.streamable_http import streamable_http_client
        from mcp.shared._httpx_utils import create_mcp_http_client

        http = create_mcp_http_client(headers=self.config.headers or None)
        stack.push_async_callback(http.aclose)
        assert self.config.url is not None
        return streamable_http_client(self.config.url, http_client=http)

    def _errlog(self, stack: contextlib.AsyncExitStack) -> TextIO:
        """The server's stderr goes to logs/mcp-<name>.log, never into the terminal chat."""
        if self.log_dir is None:
            return stack.enter_context(
                open(  # noqa: SIM115 - closed by the stack
                    "/dev/null", "w", encoding="utf-8"
                )
            )
        self.log_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        return stack.enter_context(
            open(self.log_dir / f"mcp-{self.name}.log", "a", encoding="utf-8")  # noqa: SIM115
        )

    async def _session(self) -> None:
        from mcp import Client

        async with contextlib.AsyncExitStack() as stack:
            async with asyncio.timeout(self.config.connect_timeout):
                client = await stack.enter_async_context(
                    Client(self._transport(stack), read_timeout_seconds=self.config.connect_timeout)
                )
                listed = await self._list_tools(client)
            self._client = client
            self.tools = [t for t in listed if self._wanted(t.remote_name)]
            self.state, self.error, self.next_retry = "connected", None, None
            self.connects += 1
            self._lost.clear()
            self._settled.set()
            log.info("MCP server %s connected: %d tool(s)", self.name, len(self.tools))
            await self._watch(client)

    async def _list_tools(self, client: Any) -> list[McpTool]:
        tools: list[McpTool] = []
        cursor = None
        for _ in range(MAX_TOOL_PAGES):
            page = await client.list_tools(cursor=cursor)
            for t in page.tools:
                tools.append(
                    McpTool(self.name, t.name, t.description or "", dict(t.input_schema), self.call)
                )
            cursor = page.next_cursor
            if not cursor:
                break
        return tools

    def _wanted(self, remote: str) -> bool:
        if self.config.tools is not None and remote not in self.config.tools:
            return False
        return remote not in self.config.exclude

    async def _watch(self, client: Any) -> None:
        """Sit with the open session until it is lost or stopped; ping now and then."""
        while not self._stop.is_set():
            try:
                async with asyncio.timeout(self.ping_interval):
                    await self._lost.wait()
            except TimeoutError:
                try:
                    async with asyncio.timeout(self.config.connect_timeout):
                        await client.send_ping()
                except Exception as exc:
                    raise _ConnectionLost(f"ping failed: {_describe(exc)}") from None
                continue
            if not self._stop.is_set():
                raise _ConnectionLost(self.error or "the connection was lost")

    # -- calls ------------------------------------------------------------------------------

    async def call(self, tool: str, arguments: dict[str, Any]) -> str:
        client = self._client
        if client is None or self.state != "connected":
            raise ToolError(
                f"MCP server {self.name!r} is not connected ({self.error or self.state}); "
                "Hermes keeps retrying it in the background"
            )
        from mcp_types import CONNECTION_CLOSED

        from mcp import MCPError

        timeout = self.config.timeout
        try:
            async with asyncio.timeout(timeout):
                result = await client.call_tool(tool, arguments, read_timeout_seconds=timeout)
        except TimeoutError:
            raise ToolError(
                f"MCP server {self.name!r} did not answer {tool} within {timeout:g}s"
            ) from None
        except MCPError as exc:
            if exc.code == CONNECTION_CLOSED:
                self._mark_lost(f"the server closed the connection during {tool}")
                raise ToolError(
                    f"MCP server {self.name!r} went away during {tool}; it is being restarted"
                ) from None
            raise ToolError(f"MCP server {self.name!r}: {tool} failed: {exc}") from None
        except (OSError, EOFError) as exc:
            self._mark_lost(_describe(exc))
            raise ToolError(
                f"MCP server {self.name!r} connection failed: {_describe(exc)}"
            ) from None
        return render_result(self.name, tool, result)

    def _mark_lost(self, reason: str) -> None:
        if self.state == "connected":
            self.state, self.error = "reconnecting", reason
            self.tools = []
            self._lost.set()
