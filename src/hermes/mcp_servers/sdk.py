"""The guarded import of the official MCP SDK (the `mcp` extra)."""

from __future__ import annotations

from types import ModuleType

from hermes.errors import HermesError

INSTALL_HINT = "pip install 'hermes-agent-server[mcp]'"


class McpUnavailableError(HermesError, RuntimeError):
    """The MCP SDK is not installed; the message names the pip command."""


def require_sdk() -> ModuleType:
    try:
        import mcp
    except ImportError:
        raise McpUnavailableError(
            f"MCP support needs the official MCP SDK: {INSTALL_HINT}"
        ) from None
    return mcp
