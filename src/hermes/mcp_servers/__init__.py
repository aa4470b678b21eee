"""MCP both ways: tools from configured MCP servers (`mcp_servers:`), and Hermes' memory,
search and cron offered to other agents (`hermes mcp serve`). Named `mcp_servers` so it is
never confused with the official SDK's `mcp` package, which it uses."""
