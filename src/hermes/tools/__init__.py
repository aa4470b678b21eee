"""Tools the agent can call: typed functions collected into composable toolsets."""

from hermes.tools.registry import Tool, ToolContext, ToolError, ToolOutcome, Toolset, tool

__all__ = ["Tool", "ToolContext", "ToolError", "ToolOutcome", "Toolset", "tool"]
