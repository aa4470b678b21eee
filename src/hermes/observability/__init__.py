"""Seeing inside Hermes (SPEC §17): traces (`tracing`, a facade that costs ~nothing while
off), the ids every log line carries (`context`, `logs`), latencies and counts read by
`/metrics` (`timings`), and token usage with its cost (`usage`).

Core code imports these modules only; OpenTelemetry itself is imported by `otel` alone,
and only once tracing is turned on.
"""
