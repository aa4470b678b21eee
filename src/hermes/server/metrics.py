"""Prometheus `/metrics` (protected by the server key): what an operator graphs and alerts on.

Requests by route and status with latency histograms, turns by surface, tokens, model errors by
kind, quota refusals, leases held, compressions, and what the parts count (cron runs and
deliveries, gateway messages: `Registry.metrics`). Each app has its own `CollectorRegistry`
(several apps in one test process never collide); counts kept elsewhere (model errors, raised
deep in the model client; the parts' and the compressor's own counters) are read at scrape time.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, HistogramMetricFamily
from prometheus_client.exposition import CONTENT_TYPE_LATEST
from prometheus_client.registry import Collector
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Match
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from hermes.observability import timings
from hermes.plugins import Count
from hermes.server import errors
from hermes.server.errors import APIError

if TYPE_CHECKING:
    from fastapi import FastAPI

    from hermes.agent.loop import Agent
    from hermes.agent.turn import TurnResult
    from hermes.runtime import Runtime

log = logging.getLogger(__name__)

_LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120)


class _ModelErrors(Collector):
    def collect(self) -> Iterator[CounterMetricFamily]:
        family = CounterMetricFamily(
            "hermes_model_errors", "Upstream model failures by kind.", labels=["kind"]
        )
        for kind, count in sorted(errors.MODEL_ERROR_COUNTS.items()):
            family.add_metric([kind], count)
        yield family


class _CoreTimings(Collector):
    """Latencies and counts the core keeps per process (`hermes.observability.timings`):
    memory provider prefetches, recalls, runs by status, approvals by answer."""

    def collect(self) -> Iterator[HistogramMetricFamily | CounterMetricFamily]:
        histograms: dict[str, HistogramMetricFamily] = {}
        for name, labels, series in timings.histograms():
            keys = sorted(labels)
            family = histograms.get(name)
            if family is None:
                family = histograms[name] = HistogramMetricFamily(
                    f"hermes_{name}", timings.HELP.get(name, name), labels=keys
                )
            running, buckets = 0, list[tuple[str, float]]()
            for bound, n in zip([*timings.BUCKETS, float("inf")], series.counts, strict=True):
                running += n
                buckets.append(("+Inf" if bound == float("inf") else str(bound), running))
            family.add_metric([labels[k] for k in keys], buckets, series.total)
        yield from histograms.values()
        counters: dict[str, CounterMetricFamily] = {}
        for name, labels, n in timings.counters():
            keys = sorted(labels)
            counter = counters.get(name)
            if counter is None:
                counter = counters[name] = CounterMetricFamily(
                    f"hermes_{name}", timings.HELP.get(name, name), labels=keys
                )
            counter.add_metric([labels[k] for k in keys], n)
        yield from counters.values()


class _RuntimeCounts(Collector):
    """Counters the runtime keeps anyway, read at each scrape: the compressor's and the
    parts' (`Registry.metrics`)."""

    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime

    def collect(self) -> Iterator[CounterMetricFamily]:
        families: dict[str, CounterMetricFamily] = {}

        def add(count: Count) -> None:
            family = families.get(count.name)
            if family is None:
                family = families[count.name] = CounterMetricFamily(
                    f"hermes_{count.name}", count.help, labels=sorted(count.labels)
                )
            family.add_metric([count.labels[k] for k in sorted(count.labels)], count.value)

        for count in _compression_counts(self.runtime):
            add(count)
        for counts in self.runtime.registry.counts:
            try:
                for count in counts(self.runtime):
                    add(count)
            except Exception:  # one part's bug must not take /metrics down
                log.exception("a part's metrics could not be read")
        yield from families.values()


def _compression_counts(runtime: Runtime) -> Iterator[Count]:
    stats = getattr(runtime.agent.policy, "stats", None)
    if stats is None:
        return
    yield Count(
        "compressions",
        "Context compressions (the middle of a long session summarised).",
        stats.compressions,
    )
    yield Count(
        "compression_fallbacks",
        "Summaries replaced by a plain excerpt: the summary call failed, or is backing off "
        "after failures.",
        stats.fallbacks,
    )


class Metrics:
    """The metric objects of one app."""

    def __init__(self, runtime: Runtime) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.requests = Counter(
            "hermes_http_requests", "HTTP requests.", ["method", "route", "status"], registry=r
        )
        self.latency = Histogram(
            "hermes_http_request_duration_seconds",
            "Time to the end of each response (streams: to the last byte).",
            ["route"],
            buckets=_LATENCY_BUCKETS,
            registry=r,
        )
        self.turns = Counter("hermes_turns", "Completed agent turns.", ["source"], registry=r)
        self.tokens = Counter("hermes_tokens", "Model tokens used by turns.", ["kind"], registry=r)
        self.quota_refusals = Gauge(
            "hermes_quota_refusals", "Requests refused by quotas (429) since start.", registry=r
        )
        self.leases = Gauge("hermes_leases_held", "Session leases held now.", registry=r)
        locks = runtime.agent.locks
        self.leases.set_function(lambda: float(getattr(locks, "held", 0)))
        r.register(_ModelErrors())
        r.register(_CoreTimings())
        r.register(_RuntimeCounts(runtime))
        self._turn_series: dict[str, tuple[Any, Any, Any]] = {}
        self._request_series: dict[tuple[str, str, int], tuple[Any, Any]] = {}

    async def after_turn(self, result: TurnResult, _agent: Agent) -> None:
        source = result.source or "unknown"
        series = self._turn_series.get(source)
        if series is None:  # made at the first turn, as before: /metrics lists no zeros
            prompt, completion = self.tokens.labels("prompt"), self.tokens.labels("completion")
            series = self._turn_series[source] = (self.turns.labels(source), prompt, completion)
        turns, prompt, completion = series
        turns.inc()
        prompt.inc(result.usage.prompt_tokens)
        completion.inc(result.usage.completion_tokens)

    def count_request(self, method: str, route: str, status: int, seconds: float) -> None:
        """One request by route template and status, and its time. The labelled series are
        kept once made: asking the metric for them again on every request (`labels`)
        checked and looked them up under a lock each time."""
        key = (method, route, status)
        series = self._request_series.get(key)
        if series is None:
            series = (self.requests.labels(method, route, str(status)), self.latency.labels(route))
            self._request_series[key] = series
        series[0].inc()
        series[1].observe(seconds)

    def render(self, quotas: Any) -> bytes:
        if quotas is not None:
            self.quota_refusals.set(quotas.rejections)
        return generate_latest(self.registry)


class MetricsMiddleware:
    """Pure ASGI: counts each request by route template and status, times it to the end."""

    def __init__(self, app: ASGIApp, *, metrics: Metrics, routes: Any = ()) -> None:
        self.app = app
        self.metrics = metrics
        self.routes = routes
        self._templates: dict[int, tuple[Any, str]] = {}
        """Routes the scan below has answered with (by id: routes are unhashable), each
        with its template."""

    def _route(self, scope: Scope) -> str:
        """The matched route's template (`/api/jobs/{job_id}`), never the raw path: raw
        paths would make one time series per job id. The route the router dispatched to
        (`scope["route"]`) is asked first when the scan has named it before: one match
        instead of a scan of every route in front of it (~20 µs for a chat turn, 120 µs
        for /api/sessions/{id})."""
        dispatched = scope.get("route")
        known = self._templates.get(id(dispatched))
        if known is not None and known[0] is dispatched:
            if dispatched.matches(scope)[0] == Match.FULL:
                return known[1]
        for route in _flat(self.routes):
            match, _ = route.matches(scope)
            if match == Match.FULL:
                template = str(getattr(route, "path", "unmatched"))
                self._templates[id(route)] = (route, template)
                return template
        return "unmatched"

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500

        async def send_status(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, send_status)
        finally:
            route = self._route(scope)
            seconds = time.perf_counter() - started
            self.metrics.count_request(scope.get("method", ""), route, status, seconds)


def _flat(routes: Any) -> Iterator[Any]:
    """Routes, with FastAPI's included routers opened up."""
    for route in routes:
        inner = getattr(route, "original_router", None)
        if inner is not None:
            yield from _flat(inner.routes)
        else:
            yield route


def install(app: FastAPI, runtime: Runtime) -> Metrics:
    """Add `/metrics`, the request middleware and the turn hook to `app`."""
    metrics = Metrics(runtime)
    runtime.agent.after_turn.append(metrics.after_turn)

    async def metrics_endpoint(request: Request) -> Response:
        from hermes.server.deps import require_auth

        await require_auth(request)
        if getattr(request.state, "api_key", None) is not None:
            raise APIError(
                403,
                "/metrics covers every user: it needs the server key, not a scoped key.",
                "permission_error",
                "admin_key_required",
            )
        body = metrics.render(getattr(request.app.state, "quotas", None))
        return Response(body, media_type=CONTENT_TYPE_LATEST)

    app.add_route("/metrics", metrics_endpoint, methods=["GET"], include_in_schema=False)
    app.add_middleware(MetricsMiddleware, metrics=metrics, routes=app.router.routes)
    return metrics
