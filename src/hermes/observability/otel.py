"""The OpenTelemetry SDK behind `hermes.observability.tracing`: a tracer provider of our
own (never the global one, so an embedding application's tracing is left alone) exporting
spans over OTLP/HTTP in batches from a background thread.

Imported only once tracing is turned on; without the extra the import error says what to
install.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Any

try:
    from opentelemetry import context as otel_context
    from opentelemetry import trace
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import (
        BatchSpanProcessor,
        SimpleSpanProcessor,
        SpanExporter,
    )
except ImportError as exc:  # pragma: no cover - exercised by hand without the extra
    raise ImportError(
        "Tracing (observability.otlp_endpoint / OTEL_EXPORTER_OTLP_ENDPOINT) needs the "
        "OpenTelemetry SDK: pip install 'hermes-agent-server[otel]'"
    ) from exc

from hermes import __version__

TRACES_PATH = "/v1/traces"


def traces_url(endpoint: str) -> str:
    """OTLP/HTTP's rule: the base endpoint gets `/v1/traces`; a full URL is kept."""
    endpoint = endpoint.rstrip("/")
    return endpoint if endpoint.endswith(TRACES_PATH) else endpoint + TRACES_PATH


class Tracing:
    """One tracer provider and its tracer."""

    def __init__(
        self, exporter: SpanExporter, *, service_name: str = "hermes", batch: bool = True
    ) -> None:
        resource = Resource.create({"service.name": service_name, "service.version": __version__})
        self.provider = TracerProvider(resource=resource)
        processor = BatchSpanProcessor(exporter) if batch else SimpleSpanProcessor(exporter)
        self.provider.add_span_processor(processor)
        self.tracer = self.provider.get_tracer("hermes", __version__)

    @classmethod
    def to_endpoint(cls, endpoint: str, *, service_name: str = "hermes") -> Tracing:
        try:
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        except ImportError as exc:  # pragma: no cover
            raise ImportError(
                "Exporting traces needs the OTLP/HTTP exporter: "
                "pip install 'hermes-agent-server[otel]'"
            ) from exc
        return cls(OTLPSpanExporter(endpoint=traces_url(endpoint)), service_name=service_name)

    def span(
        self, name: str, attributes: dict[str, Any], *, root: bool
    ) -> AbstractContextManager[Any]:
        ctx = otel_context.Context() if root else None
        return self.tracer.start_as_current_span(name, context=ctx, attributes=attributes)

    def annotate(self, attributes: dict[str, Any]) -> None:
        current = trace.get_current_span()
        if current.is_recording():
            current.set_attributes(attributes)

    def event(self, name: str, attributes: dict[str, Any]) -> None:
        current = trace.get_current_span()
        if current.is_recording():
            current.add_event(name, attributes)

    def flush(self) -> None:
        self.provider.force_flush()

    def shutdown(self) -> None:
        self.provider.shutdown()
