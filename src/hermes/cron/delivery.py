"""Where a run's answer goes: `local` (the saved file is enough), a webhook URL (POST JSON,
retried), or any target a registered `Deliverer` accepts (the gateway's platforms)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from hermes import tls
from hermes.cron.jobs import origin_target
from hermes.cron.runner import RunResult
from hermes.cron.store import Job
from hermes.delivery import Deliverers, DeliveryError, Outbound
from hermes.netguard import DestinationRefused, PinnedDestination, pin_destination

if TYPE_CHECKING:
    import httpx

log = logging.getLogger(__name__)

# Attempts = 1 + len(RETRY_DELAYS); seconds slept before each retry.
RETRY_DELAYS: tuple[float, ...] = (2.0, 8.0)
WEBHOOK_TIMEOUT = 15.0
NO_DELIVERER = (
    "nothing can deliver to {target!r}: messaging targets need `hermes serve` with that "
    "platform configured (see `hermes gateway status`); 'local' and webhook URLs always work"
)


@dataclass
class DeliveryReport:
    delivered: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)  # the targets of `errors`
    skipped: str | None = None  # why nothing was sent ("silent", "empty", "local")

    @property
    def error(self) -> str | None:
        return "; ".join(self.errors) or None


def message_for(job: Job, result: RunResult) -> str | None:
    """What to deliver: the answer, or a one-line failure notice; None when nothing to say."""
    if result.status != "ok":
        return f"⚠️ Cron '{job.get('name')}' failed: {result.error or 'unknown error'}"
    if result.silent:
        return None
    text = (result.response or "").strip()
    return text or None


def webhook_payload(job: Job, result: RunResult, content: str) -> dict[str, Any]:
    return {
        "job_id": job["id"],
        "job_name": job.get("name"),
        "status": result.status,
        "content": content,
        "response": result.response,
        "error": result.error,
        "session_id": result.session_id,
        "run_at": result.started_at.isoformat(timespec="seconds"),
        "output_file": result.output_path.name if result.output_path else None,
    }


async def post_webhook(
    client: httpx.AsyncClient,
    url: str,
    payload: dict[str, Any],
    *,
    allow_private: bool = False,
    retry_delays: Sequence[float] = RETRY_DELAYS,
) -> str | None:
    """POST with retries on network errors, 429 and 5xx; returns an error sentence or None.

    The URL's host is resolved and checked first (`hermes.netguard`); a refused
    destination is reported, not retried, and never contacted."""
    import httpx  # here, not at import: it pulls rich and click (cold start)

    try:
        target = await pin_destination(url, allow_private=allow_private)
    except DestinationRefused as exc:
        log.warning("webhook %s refused: %s", url, exc)
        return f"webhook {url} refused: {exc}"
    problem, attempts = "no attempt was made", 0
    for delay in (0.0, *retry_delays):
        if delay:
            await asyncio.sleep(delay)
        attempts += 1
        try:
            response = await _post_pinned(client, target, payload)
        except httpx.HTTPError as exc:
            problem = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
            log.warning("webhook %s attempt %d failed: %s", url, attempts, problem)
            continue
        if response.is_success:
            return None
        problem = f"HTTP {response.status_code}"
        log.warning("webhook %s attempt %d answered %s", url, attempts, problem)
        if response.status_code != 429 and response.status_code < 500:
            break
    return f"webhook {url} failed after {attempts} attempt(s): {problem}"


async def _post_pinned(
    client: httpx.AsyncClient, target: PinnedDestination, payload: dict[str, Any]
) -> httpx.Response:
    """POST to the first of the checked addresses that accepts a connection."""
    import httpx

    refused: httpx.ConnectError | None = None
    for url in target.urls:  # never empty: pin_destination refuses a host without addresses
        try:
            return await client.post(
                url,
                json=payload,
                timeout=WEBHOOK_TIMEOUT,
                **target.request_options(),  # type: ignore[arg-type]
            )
        except httpx.ConnectError as exc:
            refused = exc
    assert refused is not None
    raise refused


async def deliver(
    job: Job,
    result: RunResult,
    *,
    http_client: httpx.AsyncClient | None = None,
    allow_private: bool = False,
    retry_delays: Sequence[float] = RETRY_DELAYS,
    deliverers: Deliverers | None = None,
    first_time: Callable[[str], Awaitable[bool]] | None = None,
) -> DeliveryReport:
    """Send the run's message to every target of `job['deliver']` (comma-separated).
    `first_time(target)` (the store's delivery key) is False when this run's message to
    that target already went out from some process: it is then not sent again."""
    import httpx

    report = DeliveryReport()
    content = message_for(job, result)
    if content is None:
        report.skipped = "silent" if result.silent else "empty"
        return report
    targets = [t.strip() for t in str(job.get("deliver") or "local").split(",") if t.strip()]
    targets = [origin_target(job) if t == "origin" else t for t in targets]
    remote = [t for t in targets if t != "local"]
    if not remote:
        report.skipped = "local"
        return report
    own_client = http_client is None
    client = http_client or httpx.AsyncClient(verify=tls.httpx_context())
    try:
        for target in remote:
            if first_time is not None and not await first_time(target):
                report.delivered.append(f"{target} (sent once already)")
                continue
            if target.startswith(("http://", "https://")):
                error = await post_webhook(
                    client,
                    target,
                    webhook_payload(job, result, content),
                    allow_private=allow_private,
                    retry_delays=retry_delays,
                )
            else:
                error = await _to_deliverer(
                    deliverers, target, job, result, content, retry_delays=retry_delays
                )
            if error:
                report.errors.append(error)
                report.failed.append(target)
            else:
                report.delivered.append(target)
    finally:
        if own_client:
            await client.aclose()
    return report


async def _to_deliverer(
    deliverers: Deliverers | None,
    target: str,
    job: Job,
    result: RunResult,
    content: str,
    *,
    retry_delays: Sequence[float] = RETRY_DELAYS,
) -> str | None:
    """Hand a non-webhook target to the deliverer that accepts it, retrying failures it calls
    retryable (with back-off); the error text, or None."""
    error: str | None = None
    for attempt, delay in enumerate((0.0, *retry_delays), start=1):
        if delay:
            await asyncio.sleep(delay)
        error, retryable = await _deliver_once(deliverers, target, job, result, content)
        if error is None or not retryable:
            break
        log.warning("delivery to %s attempt %d failed: %s", target, attempt, error)
        error = f"{error} (after {attempt} attempt(s))"
    return error


async def _deliver_once(
    deliverers: Deliverers | None, target: str, job: Job, result: RunResult, content: str
) -> tuple[str | None, bool]:
    found = deliverers.find(target) if deliverers is not None else None
    if found is None:
        return NO_DELIVERER.format(target=target), False
    message = Outbound(
        text=content,
        scope=result.scope,
        source="cron",
        title=str(job.get("name") or job["id"]),
        details=webhook_payload(job, result, content),
    )
    try:
        await found.deliver(target, message)
    except DeliveryError as exc:
        return f"{target}: {exc}", exc.retryable
    except Exception as exc:  # a broken deliverer must not lose the run record
        log.exception("deliverer %s failed for %s", found.name, target)
        return f"{target}: {type(exc).__name__}: {exc}", False
    return None, False
