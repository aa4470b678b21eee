"""The messaging gateway (SPEC §10): platform adapters feeding one agent, with access control,
per-chat sessions, busy-chat control, home channels and delivery."""
