"""Delegation: `delegate_task` runs sub-agents, each the agent's tool loop with a fresh
context and a subset of the caller's tools. A part of its own, above `agent` and `tools`:
a tool that drives the agent cannot live among the tools the agent depends on."""
