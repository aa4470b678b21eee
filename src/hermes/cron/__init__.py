"""Scheduled prompts: job store, schedule grammar, ticker, runs and delivery (SPEC §9)."""
