"""`/api/logs` and `/api/logs/stream` (issue 37): the log tail `hermes serve` keeps, secrets
masked, filtered by level and text, followed live over SSE; owner only."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import httpx
import pytest

from hermes import tls
from hermes.observability.log_tail import LogTail, attached
from hermes.redact import Redactor
from hermes.testing.fake_model import Error, FakeModel

from .conftest import SERVER_KEY, Api, chat_body
from .test_serve import hermes_serve

log = logging.getLogger("hermes.test.logs")
PROVIDER_KEY = "sk-proj-Abcdefghijklmnopqrstuvwxyz0123"


async def test_recent_lines_are_filtered_and_masked(keyed_api: Api) -> None:
    tail = LogTail(Redactor([SERVER_KEY]))
    keyed_api.app.state.log_tail = tail
    with attached(tail):
        log.warning("first: the key is %s, bearer %s", PROVIDER_KEY, SERVER_KEY)
        log.error("second: disk nearly full")
        log.warning("third: Authorization: Bearer %s", SERVER_KEY)
    r = await keyed_api.client.get("/api/logs")
    assert r.status_code == 200, r.text
    body = r.json()
    mine = [line for line in body["lines"] if line["logger"] == "hermes.test.logs"]
    assert [line["message"].split(":")[0] for line in mine] == ["first", "second", "third"]
    assert SERVER_KEY not in r.text and PROVIDER_KEY not in r.text and "[REDACTED]" in r.text
    assert body["last_id"] == mine[-1]["id"] and mine[0]["level"] == "warning"

    errors = (await keyed_api.client.get("/api/logs?level=error")).json()["lines"]
    assert [line["message"] for line in errors] == ["second: disk nearly full"]
    found = (await keyed_api.client.get("/api/logs?q=THIRD")).json()["lines"]
    assert len(found) == 1 and found[0]["message"].startswith("third")
    later = (await keyed_api.client.get(f"/api/logs?after={mine[1]['id']}")).json()["lines"]
    assert [line["id"] for line in later] == [mine[2]["id"]]
    assert len((await keyed_api.client.get("/api/logs?limit=1")).json()["lines"]) == 1


async def test_bad_filters_and_no_tail(keyed_api: Api) -> None:
    r = await keyed_api.client.get("/api/logs")
    assert r.status_code == 503 and r.json()["error"]["code"] == "log_tail_unavailable"
    keyed_api.app.state.log_tail = LogTail(Redactor())
    r = await keyed_api.client.get("/api/logs?level=loud")
    assert r.status_code == 400 and r.json()["error"]["param"] == "level"
    r = await keyed_api.client.get("/api/logs?limit=0")
    assert r.status_code == 400


def test_hermes_serve_streams_new_lines_masked(
    fake: FakeModel, model_env: dict[str, str], home: Path
) -> None:
    """A real `hermes serve`: a failing model call's warning reaches a follower of the
    stream at once, with the server key masked."""
    fake.default = lambda body: Error(500, f"upstream exploded near {SERVER_KEY}")  # retries too
    auth = {"Authorization": f"Bearer {SERVER_KEY}"}
    with (
        hermes_serve(env={"HERMES_API_KEY": SERVER_KEY}) as (_, base),
        httpx.Client(verify=tls.httpx_context(), base_url=base, headers=auth, timeout=30) as client,
    ):
        start = client.get("/api/logs").json()["last_id"]
        with client.stream("GET", f"/api/logs/stream?after={start}&level=warning") as stream:
            assert stream.status_code == 200
            assert stream.headers["content-type"].startswith("text/event-stream")
            failed = client.post("/v1/chat/completions", json=chat_body("hi"))
            assert failed.status_code >= 500
            lines = stream.iter_lines()
            seen = ""
            while "upstream model failure" not in seen:
                raw = next(lines)
                if raw.startswith("data: "):
                    line = json.loads(raw[6:])
                    seen = line["message"]
                    assert line["id"] > start and line["level"] in ("warning", "error")
                    assert SERVER_KEY not in raw
        assert "upstream exploded" in seen and "[REDACTED]" in seen
        recent = client.get("/api/logs?q=upstream").text
        assert "upstream model failure" in recent and SERVER_KEY not in recent


@pytest.mark.parametrize("path", ["/api/logs", "/api/logs/stream"])
async def test_a_scoped_key_is_refused(keyed_api: Api, path: str) -> None:
    keyed_api.app.state.log_tail = LogTail(Redactor())
    made = (await keyed_api.client.post("/api/keys", json={"user": "eve"})).json()
    r = await keyed_api.client.get(path, headers={"Authorization": f"Bearer {made['secret']}"})
    assert r.status_code == 403 and r.json()["error"]["code"] == "admin_only"
