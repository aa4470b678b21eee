"""Mem0 (the open-source `mem0ai` library) run by Hermes itself: nothing to host.

Its fact extraction asks Hermes' own model endpoint, its vectors come from the bundled MiniLM
(or the endpoint's /v1/embeddings) and live in qdrant's on-disk local mode under
`$HERMES_HOME/mem0` (`mem0_local.py`). All of that runs in one worker process per server
(`mem0_worker`), never in the server's interpreter: the server sends it small messages
(`remote.ProcessBackend`). The worker reads its settings as any Hermes command does (the
home's config.yaml and .env, then the environment it inherits), so it sees what the server
was started with. A scope is a Mem0 `user_id`.
"""

from __future__ import annotations

from hermes.config.settings import Settings
from hermes.memory.providers.external import provider_secrets
from hermes.memory.providers.plugin import add_provider
from hermes.memory.providers.remote import ProcessBackend
from hermes.plugins import Registry
from hermes.redact import Redactor

NAME = "mem0"
WORKER = "hermes.memory.providers.mem0_worker"
ABOUT = (
    "Search the facts Mem0 has extracted about this user over all past conversations "
    "(preferences, circumstances, plans). Use it when the user refers to something they told "
    "you before that is not in your notes or this conversation."
)
MIN_CALL_TIMEOUT_S = 60.0
CALLS_PER_STEP = 6  # an add is an extraction, an update decision and embeddings, each bounded


def start_mem0(settings: Settings) -> ProcessBackend:
    """Start the Mem0 worker process for this home (ProviderError when it cannot start)."""
    bound = max(MIN_CALL_TIMEOUT_S, CALLS_PER_STEP * settings.memory.provider_timeout)
    return ProcessBackend(
        NAME,
        WORKER,
        settings.home,
        call_timeout=bound,
        scrub=Redactor(provider_secrets(settings)),
    )


BACKEND = start_mem0


def register(hermes: Registry) -> None:
    add_provider(hermes, NAME, start_mem0, ABOUT)
