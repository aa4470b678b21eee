"""A model chain pinned by something other than the configuration (a cron job's `model`,
`base_url` and `fallbacks`): its own models first, then the configured chain behind them.

Pins carry no keys (a job's record is readable over the API): the key for a pinned endpoint is
the configured one for that endpoint, `model.api_key` for `model.base_url` or a
`model.fallbacks` entry's key for its `base_url`; any other endpoint is called without a key.
Rest periods are shared with the configured chain, by the same `"<base_url> <name>"` labels,
so a model one turn saw fail is skipped by the others whoever pinned it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from hermes.config.settings import Settings
from hermes.models.client import ModelClient, OpenAICompatClient
from hermes.models.fallback import Candidate, Cooldowns, FallbackClient

if TYPE_CHECKING:
    from hermes.store.base import RecordStore


@dataclass(frozen=True)
class Pin:
    """One pinned model: its name, and its endpoint (None: the configured `model.base_url`)."""

    name: str
    base_url: str | None = None


def key_for(settings: Settings, base_url: str | None) -> str | None:
    """The configured key for `base_url`, if the configuration names that endpoint."""
    main = settings.model
    if base_url == main.base_url and main.api_key is not None:
        return main.api_key.get_secret_value()
    for entry in main.fallbacks:
        if entry.api_key is not None and (entry.base_url or main.base_url) == base_url:
            return entry.api_key.get_secret_value()
    return None


class PinnedChain(FallbackClient):
    """The pinned models, then `configured` (the agent's own client, its fallbacks included).

    Only the pinned clients are made here, so `aclose` closes those and leaves the agent's."""

    def __init__(
        self, candidates: Sequence[Candidate], cooldowns: Cooldowns, cooldown_seconds: float
    ) -> None:
        super().__init__(candidates, cooldowns, cooldown_seconds)
        self.owned = [c.client for c in candidates[:-1]]

    async def aclose(self) -> None:
        for client in self.owned:
            await client.aclose()


def pinned_chain(
    settings: Settings,
    pins: Sequence[Pin],
    configured: ModelClient,
    records: RecordStore | None = None,
) -> PinnedChain:
    """A client that tries `pins` in order, then `configured`."""
    if not pins:
        raise ValueError("a pinned chain needs at least one model")
    main = settings.model
    candidates: list[Candidate] = []
    for pin in pins:
        base_url = pin.base_url or main.base_url
        client = OpenAICompatClient(
            base_url=base_url,
            api_key=key_for(settings, base_url),
            model=pin.name,
            timeout=main.timeout,
            max_retries=main.max_retries,
            total_timeout=main.total_timeout,
        )
        candidates.append(Candidate(client, f"{base_url} {pin.name}"))
    candidates.append(Candidate(configured, "the configured model chain"))
    if isinstance(configured, FallbackClient):
        cooldowns = configured.cooldowns
    else:
        cooldowns = Cooldowns(settings.home / "model_cooldowns.json")
        cooldowns.share_state(records)
    return PinnedChain(candidates, cooldowns, main.fallback_cooldown)
