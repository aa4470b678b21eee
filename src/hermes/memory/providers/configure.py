"""What `hermes memory setup|status|off` do, kept apart from the command-line parsing: save
the choice (config.yaml; keys in .env, 0600), and connect once to say whether it works."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import yaml
from dotenv import set_key

from hermes.config.settings import Settings
from hermes.memory.providers.backend import ProviderError
from hermes.memory.providers.forget import make_backend

KEY_VARS = {"honcho": "HONCHO_API_KEY", "supermemory": "SUPERMEMORY_API_KEY"}


def save_choice(home: Path, provider: str | None, options: dict[str, Any]) -> None:
    """Write `memory.provider` (None: off) and `memory.<provider>.*` into config.yaml."""
    path = home / "config.yaml"
    data = yaml.safe_load(path.read_text(encoding="utf-8")) if path.exists() else None
    data = data if isinstance(data, dict) else {}
    memory = data.setdefault("memory", {})
    memory["provider"] = provider or "none"
    if provider and options:
        memory.setdefault(provider, {}).update(options)
    tmp = path.with_suffix(".yaml.tmp")
    tmp.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    tmp.replace(path)


def save_key(home: Path, provider: str, key: str) -> None:
    """The provider's key goes to .env (0600), never config.yaml."""
    env = home / ".env"
    env.touch(mode=0o600, exist_ok=True)
    os.chmod(env, 0o600)
    set_key(str(env), KEY_VARS[provider], key, quote_mode="never")


def connect_once(settings: Settings) -> str:
    """Open the configured provider and reach it; the sentence to show. Raises ProviderError
    with a sentence when it does not work."""
    backend = make_backend(settings)
    try:
        return backend.check()
    except ProviderError:
        raise
    except Exception as exc:
        raise ProviderError(
            f"{settings.memory.provider} did not answer: {type(exc).__name__}: {exc}"
        ) from None
    finally:
        backend.close()
