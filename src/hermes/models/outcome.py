"""How the agent's model calls went lately, for the model part of `/health/detailed`: a
configured endpoint that stopped answering otherwise shows only as failed turns.

Only the error's kind, HTTP status and the model asked are kept, never the error's text:
that may name internal hosts or echo keys, and any signed-in key may read the health.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from hermes.models.errors import (
    ModelAuthError,
    ModelBadRequestError,
    ModelError,
    ModelRateLimitError,
    ModelTimeoutError,
    ModelUnreachableError,
)

FIXES: tuple[tuple[type[ModelError], str], ...] = (
    (ModelAuthError, "check model.api_key (OPENAI_API_KEY): the endpoint refused it"),
    (ModelRateLimitError, "the endpoint is rate-limiting Hermes: wait, or add model.fallbacks"),
    (ModelUnreachableError, "check that model.base_url is reachable from this machine"),
    (ModelTimeoutError, "the endpoint is slow or down: check it, or raise model.timeout"),
    (ModelBadRequestError, "check model.name and what the endpoint accepts"),
)
OTHER_FIX = "the endpoint is failing: check its own status, or add model.fallbacks"


@dataclass
class ModelCalls:
    """The last answered and the last failed model call of this process."""

    answered_at: float | None = None
    failed_at: float | None = None
    failure: str | None = None
    fix: str | None = None

    def answered(self) -> None:
        self.answered_at = time.time()
        self.failure = self.fix = None  # answering again ends the failure

    def failed(self, exc: ModelError, model: str | None) -> None:
        kind = type(exc).__name__.removeprefix("Model").removesuffix("Error") or "Model"
        status = f", HTTP {exc.status_code}" if exc.status_code else ""
        asked = f" ({model})" if model else ""
        self.failed_at = time.time()
        self.failure = f"{kind}{status}{asked}"
        self.fix = next((fix for kind_, fix in FIXES if isinstance(exc, kind_)), OTHER_FIX)

    def health(self, now: float | None = None) -> dict[str, Any]:
        """`degraded` while the latest call failed; else `ok` with when it last answered."""
        now = time.time() if now is None else now
        if self.failure is not None and self.failed_at is not None:
            reason = f"the last model call failed {now - self.failed_at:.0f} s ago: {self.failure}"
            return {"status": "degraded", "reason": reason, "fix": self.fix}
        if self.answered_at is None:
            return {"status": "ok", "detail": "no model call yet"}
        return {"status": "ok", "detail": f"last answered {now - self.answered_at:.0f} s ago"}
