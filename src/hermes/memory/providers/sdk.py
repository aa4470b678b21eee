"""Importing a provider's SDK: guarded (a missing extra is a sentence naming the pip command,
not a traceback) and quiet (no SDK reports usage to a third party: telemetry is switched off
before the first import, since the SDKs read these switches when they load)."""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from pathlib import Path
from types import ModuleType

from hermes.memory.providers.backend import ProviderError

# environment switches the SDKs read at import time; all of them mean "no usage reports"
TELEMETRY_OFF = {
    "MEM0_TELEMETRY": "False",  # mem0: PostHog events on init/add/search/... (us.i.posthog.com)
    "POSTHOG_DISABLED": "1",
    "ANONYMIZED_TELEMETRY": "False",  # chroma/qdrant-style switch some backends honour
    "DO_NOT_TRACK": "1",
}


def install_hint(extra: str) -> str:
    return (
        f"pip install -e '.[{extra}]' from a clone, or pip install 'hermes-agent-server[{extra}]'"
    )


def installed(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


def require(module: str, extra: str, what: str) -> ModuleType:
    """`module`, or a ProviderError telling how to install `what`."""
    quiet()
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise ProviderError(
            f"memory.provider is {extra} but {what} is not installed ({exc.name or module} "
            f"cannot be imported): {install_hint(extra)}"
        ) from None


def quiet() -> None:
    """Telemetry off for every SDK, before any of them is imported."""
    for name, value in TELEMETRY_OFF.items():
        os.environ[name] = value


def quiet_mem0(home: Path) -> None:
    """mem0 keeps a config file (with an anonymous id) in ~/.mem0 and may fetch notices or a
    spaCy model from the internet: keep its files under the Hermes home, and with telemetry
    off and spaCy's model absent, make sure neither download is attempted."""
    quiet()
    folder = home / "mem0"
    folder.mkdir(parents=True, exist_ok=True)
    os.environ["MEM0_DIR"] = str(folder)
    try:
        vars(importlib.import_module("mem0.memory.setup"))["mem0_dir"] = str(folder)
        spacy_models = importlib.import_module("mem0.utils.spacy_models")
        telemetry = importlib.import_module("mem0.memory.telemetry")
    except ImportError:
        return
    # loaded before the switch was set (another import path): turn it off where it is read
    vars(telemetry)["MEM0_TELEMETRY"] = False
    main = sys.modules.get("mem0.memory.main")
    if main is not None:
        vars(main)["MEM0_TELEMETRY"] = False
    if not installed("spacy") or not installed("en_core_web_sm"):
        # its loader would run `spacy download` (a network fetch) when spaCy has no model
        vars(spacy_models).update(_load_failed_full=True, _load_failed_lemma=True)
