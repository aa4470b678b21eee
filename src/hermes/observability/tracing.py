"""The one door to tracing: core code calls `span(...)`, `root_span(...)`, `traced(...)`
and `annotate(...)` here and never imports OpenTelemetry.

While tracing is off (no `observability.otlp_endpoint` / `OTEL_EXPORTER_OTLP_ENDPOINT`),
each call is one global check returning a shared no-op, so a turn pays nothing measurable.
`configure` turns it on once per process (`hermes.observability.otel` builds the SDK); tests
`install` an exporter of their own and `reset` afterwards.

Attributes never hold a raw scope (a user id): `scope_hash` is used instead, and message
text goes into spans only through `content`, which returns None unless
`observability.capture_content` is true.
"""

from __future__ import annotations

import hashlib
from collections.abc import Awaitable, Callable
from contextlib import AbstractContextManager
from functools import wraps
from typing import TYPE_CHECKING, Any, ParamSpec, Protocol, TypeVar

if TYPE_CHECKING:
    from hermes.config.settings import ObservabilitySettings
    from hermes.observability.otel import Tracing

P = ParamSpec("P")
T = TypeVar("T")

AttributeValue = str | bool | int | float


class Span(Protocol):
    """What callers may do with a span (OpenTelemetry's span has these; so does the no-op)."""

    def set_attribute(self, key: str, value: AttributeValue) -> Any: ...

    def add_event(self, name: str, attributes: dict[str, AttributeValue] | None = None) -> Any: ...


class _NoSpan:
    """The span while tracing is off: accepts everything, keeps nothing."""

    __slots__ = ()

    def set_attribute(self, key: str, value: AttributeValue) -> None:
        return None

    def add_event(self, name: str, attributes: dict[str, AttributeValue] | None = None) -> None:
        return None

    def __enter__(self) -> _NoSpan:
        return self

    def __exit__(self, *exc: object) -> None:
        return None


NO_SPAN = _NoSpan()
_tracing: Tracing | None = None
_capture = False


def enabled() -> bool:
    return _tracing is not None


def configure(settings: ObservabilitySettings) -> bool:
    """Turn tracing on when an endpoint is configured (once per process; later calls keep
    the first set-up). Raises ImportError naming the pip command when the extra is missing."""
    global _tracing, _capture
    if _tracing is not None or not settings.otlp_endpoint:
        return _tracing is not None
    from hermes.observability.otel import Tracing

    _tracing = Tracing.to_endpoint(settings.otlp_endpoint, service_name=settings.service_name)
    _capture = settings.capture_content
    return True


def install(tracing: Tracing, *, capture_content: bool = False) -> None:
    """Trace through `tracing` (tests: an in-memory exporter), replacing any set-up."""
    global _tracing, _capture
    reset()
    _tracing, _capture = tracing, capture_content


def reset() -> None:
    """Flush and stop tracing; spans are no-ops again."""
    global _tracing, _capture
    current, _tracing, _capture = _tracing, None, False
    if current is not None:
        current.shutdown()


def flush() -> None:
    if _tracing is not None:
        _tracing.flush()


def span(name: str, **attributes: AttributeValue | None) -> AbstractContextManager[Span]:
    """A child of the current span (or a new trace's root when there is none)."""
    if _tracing is None:
        return NO_SPAN
    return _tracing.span(name, _clean(attributes), root=False)


def root_span(name: str, **attributes: AttributeValue | None) -> AbstractContextManager[Span]:
    """The root of a new trace, whatever is current (a cron run, a gateway message)."""
    if _tracing is None:
        return NO_SPAN
    return _tracing.span(name, _clean(attributes), root=True)


def annotate(**attributes: AttributeValue | None) -> None:
    """Set attributes on the current span (None values are left out)."""
    if _tracing is None:
        return
    _tracing.annotate(_clean(attributes))


def event(name: str, **attributes: AttributeValue | None) -> None:
    """An event on the current span (a retry, a fallback)."""
    if _tracing is None:
        return
    _tracing.event(name, _clean(attributes))


def traced(
    name: str, *, root: bool = False
) -> Callable[[Callable[P, Awaitable[T]]], Callable[P, Awaitable[T]]]:
    """Decorator: run the coroutine function inside a span `name`."""

    def wrap(function: Callable[P, Awaitable[T]]) -> Callable[P, Awaitable[T]]:
        @wraps(function)
        async def run(*args: P.args, **kwargs: P.kwargs) -> T:
            if _tracing is None:
                return await function(*args, **kwargs)
            with _tracing.span(name, {}, root=root):
                return await function(*args, **kwargs)

        return run

    return wrap


def scope_hash(scope: str | None) -> str | None:
    """A stable, non-reversible name for a scope or session id (traces leave the machine)."""
    if scope is None:
        return None
    return hashlib.sha256(scope.encode()).hexdigest()[:16]


def content(text: str | None) -> str | None:
    """`text` when `observability.capture_content` is on, else None (left out of the span)."""
    return text if _capture and _tracing is not None else None


def _clean(attributes: dict[str, AttributeValue | None]) -> dict[str, AttributeValue]:
    return {k: v for k, v in attributes.items() if v is not None}
