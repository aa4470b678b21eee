"""The presence lock's connection meeting a server that goes away is an outage (503), not a
bug (500)."""

from __future__ import annotations

from typing import Any

import psycopg
import pytest

from hermes.store.base import StoreUnavailableError
from hermes.store.postgres.pool import Presence


class _NoPool:
    def __init__(self, url: str) -> None:
        self.url = url

    def unavailable(self, exc: BaseException) -> StoreUnavailableError:
        return StoreUnavailableError(f"unreachable ({exc})")


def test_a_server_gone_between_connect_and_lock_is_unavailable(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_connect = psycopg.connect

    def connect_then_lose(*args: Any, **kwargs: Any) -> psycopg.Connection[Any]:
        conn = real_connect(*args, **kwargs)
        conn.close()  # as a restart does right after the connection was made
        return conn

    monkeypatch.setattr(psycopg, "connect", connect_then_lose)
    with pytest.raises(StoreUnavailableError):
        Presence(_NoPool(pg_url)).ensure()  # type: ignore[arg-type]
