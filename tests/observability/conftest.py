"""Fixtures of the observability tests: a keyed server's settings, and tracing left off
(a test that turns it on gets it reset afterwards)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from pydantic import SecretStr

from hermes.config.settings import Settings
from hermes.observability import tracing

from ..server.conftest import SERVER_KEY


@pytest.fixture(autouse=True)
def no_otel_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_ENDPOINT", raising=False)
    yield
    tracing.reset()


@pytest.fixture
def keyed_settings(settings: Settings) -> Settings:
    settings.server.api_key = SecretStr(SERVER_KEY)
    return settings
