"""Profiles over HTTP (SPEC §16): one app serves the default profile at `/v1` and every
other profile under `/p/<name>/…`, each with its own key, store, notes, skills and jobs.

Like the scope tests, every check that one profile cannot see another's data has a positive
control: the owner does see it, so a test cannot pass because nothing was stored.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
import yaml
from pydantic import SecretStr

from hermes.config.settings import Settings, load_settings
from hermes.profiles import create
from hermes.runtime import build_runtime
from hermes.server.app import create_app
from hermes.server.profiles import ProfileRouter
from hermes.testing.fake_model import Error, FakeModel, Text, ToolCalls

from .conftest import chat_body

pytestmark = pytest.mark.usefixtures("on_each_backend")

ROOT_KEY = "root-key-0123456789abcdef"
KEYS = {"alpha": "alpha-key-0123456789abcdef", "beta": "beta-key-0123456789abcdef"}


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def add_profile(home: Path, name: str, key: str | None, config: dict | None = None) -> Path:
    profile = create(home, name).home
    if key is not None:
        (profile / ".env").write_text(f"HERMES_API_KEY={key}\n", encoding="utf-8")
    if config is not None:
        (profile / "config.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    return profile


@dataclass
class Served:
    client: httpx.AsyncClient
    router: ProfileRouter
    home: Path

    @property
    def on_files(self) -> bool:
        """SQLite: each profile's store, notes and jobs are files in its own home."""
        return self.router.default_settings.database_url.startswith("sqlite")

    async def get(self, profile: str, path: str, key: str | None = None) -> httpx.Response:
        return await self.client.get(prefix(profile) + path, headers=self._auth(profile, key))

    async def post(
        self, profile: str, path: str, key: str | None = None, **kwargs: object
    ) -> httpx.Response:
        headers = {**self._auth(profile, key), **kwargs.pop("headers", {})}  # type: ignore[dict-item]
        return await self.client.post(prefix(profile) + path, headers=headers, **kwargs)  # type: ignore[arg-type]

    @staticmethod
    def _auth(profile: str, key: str | None) -> dict[str, str]:
        return bearer(key or (ROOT_KEY if profile == "default" else KEYS[profile]))


def prefix(profile: str) -> str:
    return "" if profile == "default" else f"/p/{profile}"


def _quick(settings: Settings) -> Settings:
    settings.model.max_retries = 0
    return settings


def _drop_profile_schemas(url: str) -> None:
    """This run's database is emptied per test in `public`; the profiles' schemas go here."""
    import psycopg

    from hermes.config.database import profile_schema

    with psycopg.connect(url, autocommit=True) as conn:
        for name in ("alpha", "beta", "gamma"):
            conn.execute(f'DROP SCHEMA IF EXISTS "{profile_schema(name)}" CASCADE')


@pytest.fixture
async def served(
    home: Path,
    model_env: dict[str, str],
    fake: FakeModel,
    monkeypatch: pytest.MonkeyPatch,
    on_each_backend: str,
) -> AsyncIterator[Served]:
    """The default profile (key from the environment, as Docker sets it) plus alpha and beta;
    beta names its own model and a fallback in its own config.yaml. On PostgreSQL all three
    share one database (HERMES_DATABASE_URL), as replicas would."""
    if on_each_backend.startswith("postgresql"):
        _drop_profile_schemas(on_each_backend)
    monkeypatch.setenv("HERMES_API_KEY", ROOT_KEY)
    add_profile(home, "alpha", KEYS["alpha"])
    beta_model = {"name": "beta-model", "max_retries": 0, "fallbacks": [{"name": "beta-backup"}]}
    add_profile(home, "beta", KEYS["beta"], {"model": beta_model})
    fake.default = Text("ok")
    settings = _quick(load_settings())
    router = ProfileRouter(home, None, settings, lambda s: create_app(build_runtime(_quick(s))))
    app = create_app(
        build_runtime(settings), daemons=[router.daemon()], routers=[router.api_router()]
    )
    router.default_app = app
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(router)
        async with httpx.AsyncClient(transport=transport, base_url="http://hermes.test") as client:
            yield Served(client, router, home)


PROFILES = ["default", "alpha", "beta"]


async def test_each_profile_advertises_its_own_model_name(served: Served) -> None:
    names = {}
    for profile in PROFILES:
        r = await served.get(profile, "/v1/models")
        assert r.status_code == 200, r.text
        names[profile] = r.json()["data"][0]["id"]
    assert names == {"default": "hermes", "alpha": "alpha", "beta": "beta"}
    same = await served.client.get("/p/default/v1/models", headers=bearer(ROOT_KEY))
    assert same.json()["data"][0]["id"] == "hermes"  # /p/default is the root profile


@pytest.mark.parametrize(
    ("profile", "key"),
    [
        ("alpha", ROOT_KEY),  # the default profile's key opens no other profile
        ("alpha", KEYS["beta"]),
        ("beta", KEYS["alpha"]),
        ("default", KEYS["alpha"]),
        ("alpha", "not-a-key"),
    ],
)
async def test_a_key_opens_its_own_profile_only(served: Served, profile: str, key: str) -> None:
    r = await served.get(profile, "/api/sessions", key=key)
    assert r.status_code == 401
    assert r.json()["error"]["code"] == "invalid_api_key"
    assert (await served.get(profile, "/api/sessions")).status_code == 200  # its own key does


@pytest.mark.parametrize(
    "path",
    ["/p/nope/v1/models", "/p/Upper/v1/models", "/p/a..b/v1/models", "/p/x%2F..%2Fy/v1/models"],
)
async def test_an_unknown_profile_is_a_clear_404(served: Served, path: str) -> None:
    r = await served.client.get(path, headers=bearer(ROOT_KEY))
    assert r.status_code == 404
    error = r.json()["error"]
    assert error["code"] == "profile_not_found" and "hermes profile create" in error["message"]


async def test_sessions_and_transcripts_stay_in_their_profile(
    served: Served, fake: FakeModel
) -> None:
    for profile in PROFILES:
        fake.enqueue(Text(f"noted for {profile}"))
        r = await served.post(
            profile,
            "/v1/chat/completions",
            json=chat_body(f"secret of {profile}"),
            headers={"X-Hermes-Session-Id": "same-name"},
        )
        assert r.status_code == 200, r.text
    for profile in PROFILES:
        r = await served.get(profile, "/api/sessions/same-name/messages")
        assert r.status_code == 200, r.text
        texts = json.dumps(r.json()["messages"])
        assert f"secret of {profile}" in texts
        others = [p for p in PROFILES if p != profile]
        assert not any(f"secret of {other}" in texts for other in others)
        listed = (await served.get(profile, "/api/sessions")).json()["sessions"]
        assert [s["id"] for s in listed] == ["same-name"]
    # on SQLite the store of a profile is a file in its own home
    assert (served.home / "profiles" / "alpha" / "state.db").is_file() is served.on_files


def _tool_output(fake: FakeModel) -> str:
    """The tool results the model got in the newest request, minus the echo of the query."""
    results = [m["content"] for m in fake.chat_requests()[-1]["messages"] if m["role"] == "tool"]
    assert results, "the scripted tool call did not run"
    out = []
    for text in results:
        try:
            data = json.loads(text)
        except ValueError:
            out.append(text)
            continue
        if isinstance(data, dict):
            data.pop("query", None)
        out.append(json.dumps(data))
    return "\n".join(out)


async def test_session_search_never_finds_or_reads_another_profiles_sessions(
    served: Served, fake: FakeModel
) -> None:
    secret = "ALPHA-SECRET-4c1d"
    fake.enqueue(Text("Noted."))
    said = chat_body(f"The vault code is {secret}.")
    r = await served.post(
        "alpha", "/v1/chat/completions", json=said, headers={"X-Hermes-Session-Id": "vault"}
    )
    assert r.status_code == 200, r.text
    probes: list[dict[str, object]] = [
        {"query": secret},
        {"query": "vault code"},
        {"session_id": "vault"},
        {"session_id": "vault", "around": 0},
        {},
    ]
    for other in ("beta", "default"):
        for args in probes:
            fake.enqueue(ToolCalls([("session_search", args)]), Text("done"))
            r = await served.post(
                other,
                "/v1/chat/completions",
                json=chat_body("search my past"),
                headers={"X-Hermes-Session-Id": "probe"},
            )
            assert r.status_code == 200, r.text
            assert secret not in _tool_output(fake), (other, args)
    # positive control: alpha's own search finds it
    fake.enqueue(ToolCalls([("session_search", {"query": "vault code"})]), Text("found"))
    r = await served.post(
        "alpha",
        "/v1/chat/completions",
        json=chat_body("search my past"),
        headers={"X-Hermes-Session-Id": "probe"},
    )
    assert r.status_code == 200, r.text
    assert secret in _tool_output(fake)


async def test_an_idempotency_key_never_replays_another_profiles_answer(
    served: Served, fake: FakeModel
) -> None:
    body = chat_body("tell me the code")
    fake.enqueue(Text("It is ALPHA-CODE-77."))
    same = {"Idempotency-Key": "same-key"}
    r = await served.post("alpha", "/v1/chat/completions", json=body, headers=same)
    assert "ALPHA-CODE-77" in r.text
    assert (
        "idempotency-replayed"
        in (await served.post("alpha", "/v1/chat/completions", json=body, headers=same)).headers
    )  # positive control: alpha's own retry is replayed
    for other in ("beta", "default"):
        r = await served.post(other, "/v1/chat/completions", json=body, headers=same)
        assert r.status_code == 200 and "ALPHA-CODE-77" not in r.text
        assert "idempotency-replayed" not in r.headers


async def test_notes_stay_in_their_profile(served: Served) -> None:
    note = {"action": "add", "target": "memory", "content": "alpha deploys on Fridays"}
    assert (await served.post("alpha", "/api/memory", json=note)).status_code in (200, 201)
    seen = {p: json.dumps((await served.get(p, "/api/memory")).json()) for p in PROFILES}
    assert "alpha deploys on Fridays" in seen["alpha"]
    assert "Fridays" not in seen["beta"] and "Fridays" not in seen["default"]
    if served.on_files:  # (on PostgreSQL notes are rows in the profile's schema)
        memory_file = served.home / "profiles" / "alpha" / "memories" / "MEMORY.md"
        assert "alpha deploys on Fridays" in memory_file.read_text(encoding="utf-8")


async def test_skills_stay_in_their_profile(served: Served) -> None:
    skill = "---\nname: alpha-deploy\ndescription: How alpha ships\n---\nRun the pipeline.\n"
    r = await served.client.put(
        "/p/alpha/api/skills/alpha-deploy",
        content=skill,
        headers={**bearer(KEYS["alpha"]), "Content-Type": "text/markdown"},
    )
    assert r.status_code == 201, r.text
    names = {
        p: [s["name"] for s in (await served.get(p, "/api/skills")).json()["skills"]]
        for p in PROFILES
    }
    assert "alpha-deploy" in names["alpha"]
    assert "alpha-deploy" not in names["beta"] and "alpha-deploy" not in names["default"]


async def test_a_job_of_one_profile_is_never_listed_or_run_in_another(
    served: Served, fake: FakeModel
) -> None:
    job = {"name": "alpha-standup", "schedule": "every 1h", "prompt": "standup for alpha"}
    r = await served.post("alpha", "/api/jobs", json=job)
    assert r.status_code == 201, r.text
    job_id = r.json()["job"]["id"]
    for profile in PROFILES:
        jobs = (await served.get(profile, "/api/jobs")).json()["jobs"]
        assert ([j["id"] for j in jobs] == [job_id]) is (profile == "alpha")
    for other in ("beta", "default"):
        assert (await served.get(other, f"/api/jobs/{job_id}")).status_code == 404
        assert (await served.post(other, f"/api/jobs/{job_id}/run")).status_code == 404
    if served.on_files:
        jobs_file = served.home / "profiles" / "alpha" / "cron" / "jobs.json"
        assert job_id in jobs_file.read_text(encoding="utf-8")
        root_jobs = served.home / "cron" / "jobs.json"
        assert not root_jobs.exists() or job_id not in root_jobs.read_text(encoding="utf-8")
    # run now: it runs in alpha, with alpha's model name, and its output stays in alpha's home
    fake.enqueue(Text("alpha standup done"))
    assert (await served.post("alpha", f"/api/jobs/{job_id}/run")).status_code == 200

    runs: list = []
    for _ in range(250):  # up to ~5 s for the background run to be recorded
        runs = (await served.get("alpha", f"/api/jobs/{job_id}/runs")).json()["runs"]
        if runs and "alpha standup done" in json.dumps(runs):
            break
        await asyncio.sleep(0.02)
    assert runs and "alpha standup done" in json.dumps(runs)
    alpha_output = served.home / "profiles" / "alpha" / "cron" / "output" / job_id
    assert alpha_output.is_dir() is served.on_files
    assert not (served.home / "cron" / "output" / job_id).exists()
    assert not (served.home / "cron" / "output" / job_id).exists()


async def test_a_profile_names_its_own_model_and_fallbacks(served: Served, fake: FakeModel) -> None:
    fake.enqueue(Error(503), when=lambda body: body.get("model") == "beta-model")
    fake.enqueue(Text("from the backup"), when=lambda body: body.get("model") == "beta-backup")
    r = await served.post("beta", "/v1/chat/completions", json=chat_body("hi", model="beta"))
    assert r.status_code == 200, r.text
    assert r.json()["choices"][0]["message"]["content"] == "from the backup"
    assert [q["model"] for q in fake.chat_requests()] == ["beta-model", "beta-backup"]
    fake.enqueue(Text("default answer"))
    r = await served.post("default", "/v1/chat/completions", json=chat_body("hi"))
    assert r.status_code == 200 and fake.chat_requests()[-1]["model"] == "fake-model"


async def test_a_profile_created_while_serving_is_served_on_first_request(served: Served) -> None:
    assert (await served.client.get("/p/gamma/v1/models")).status_code == 404
    add_profile(served.home, "gamma", "gamma-key-0123456789abcdef")
    r = await served.client.get("/p/gamma/v1/models", headers=bearer("gamma-key-0123456789abcdef"))
    assert r.status_code == 200 and r.json()["data"][0]["id"] == "gamma"


async def test_the_profile_list_shows_what_a_key_opens(served: Served) -> None:
    r = await served.client.get("/api/profiles", headers=bearer(KEYS["alpha"]))
    assert r.status_code == 200
    assert r.json() == {"profiles": [{"name": "alpha", "base": "/p/alpha"}]}
    r = await served.client.get("/api/profiles", headers=bearer(ROOT_KEY))
    assert [p["name"] for p in r.json()["profiles"]] == ["default"]
    r = await served.client.get("/api/profiles", headers=bearer("wrong"))
    assert r.status_code == 401 and r.json()["error"]["code"] == "invalid_api_key"
    capabilities = await served.get("default", "/v1/capabilities")
    listed = capabilities.json()["endpoints"].values()
    assert {"method": "GET", "path": "/api/profiles"} in listed  # in the OpenAPI document


async def test_a_profile_deleted_while_serving_is_closed_and_404(served: Served) -> None:
    from hermes.profiles import delete

    assert (await served.get("alpha", "/v1/models")).status_code == 200
    assert "alpha" in served.router.served()
    delete(served.home, "alpha")
    r = await served.get("alpha", "/v1/models")
    assert r.status_code == 404 and r.json()["error"]["code"] == "profile_not_found"
    assert "alpha" not in served.router.served()
    assert (await served.get("beta", "/v1/models")).status_code == 200


async def test_on_a_public_bind_a_profile_without_a_strong_key_is_not_served(
    home: Path, model_env: dict[str, str], on_each_backend: str
) -> None:
    from hermes.server.serve import _profile_router

    if on_each_backend.startswith("postgresql"):
        _drop_profile_schemas(on_each_backend)
    add_profile(home, "alpha", None)  # no key at all
    add_profile(home, "beta", "short")
    add_profile(home, "gamma", KEYS["alpha"])
    settings = _quick(load_settings())
    settings.server.api_key = SecretStr(ROOT_KEY)
    lines: list[str] = []
    router = _profile_router(settings, "0.0.0.0", lines.append)
    assert router is not None
    app = create_app(
        build_runtime(settings), daemons=[router.daemon()], routers=[router.api_router()]
    )
    router.default_app = app
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(router)
        async with httpx.AsyncClient(transport=transport, base_url="http://h.test") as client:
            for name in ("alpha", "beta"):
                r = await client.get(f"/p/{name}/v1/models", headers=bearer("anything"))
                assert r.status_code == 503, r.text
                error = r.json()["error"]
                assert error["code"] == "profile_unavailable"
                assert "HERMES_API_KEY" in error["message"]
            r = await client.get("/p/gamma/v1/models", headers=bearer(KEYS["alpha"]))
            assert r.status_code == 200
    assert router.served() == []  # closed with the server


async def test_the_log_masks_every_profiles_secrets(
    home: Path,
    model_env: dict[str, str],
    on_each_backend: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """One process, one log: a profile's key is masked like the default profile's."""
    import logging
    import sys

    from hermes.server.serve import _profile_router

    if on_each_backend.startswith("postgresql"):
        _drop_profile_schemas(on_each_backend)
    add_profile(home, "alpha", KEYS["alpha"])
    settings = _quick(load_settings())
    settings.server.api_key = SecretStr(ROOT_KEY)
    router = _profile_router(settings, "127.0.0.1", lambda line: None)
    assert router is not None
    console = logging.StreamHandler(sys.stderr)
    logging.getLogger().addHandler(console)
    try:
        app = create_app(
            build_runtime(settings), daemons=[router.daemon()], routers=[router.api_router()]
        )
        router.default_app = app
        async with app.router.lifespan_context(app):
            assert router.served() == ["alpha"]
            logging.getLogger("hermes.test").warning("keys %s and %s", ROOT_KEY, KEYS["alpha"])
    finally:
        logging.getLogger().removeHandler(console)
    err = capsys.readouterr().err
    assert "keys " in err
    assert ROOT_KEY not in err and KEYS["alpha"] not in err


async def test_a_profile_created_while_serving_with_another_profiles_bot_is_refused(
    home: Path, model_env: dict[str, str], on_each_backend: str
) -> None:
    from hermes.server.serve import _profile_router

    if on_each_backend.startswith("postgresql"):
        _drop_profile_schemas(on_each_backend)
    settings = _quick(load_settings())
    router = _profile_router(settings, "127.0.0.1", lambda line: None)
    assert router is not None
    app = create_app(
        build_runtime(settings), daemons=[router.daemon()], routers=[router.api_router()]
    )
    router.default_app = app
    async with app.router.lifespan_context(app):
        for name in ("alpha", "gamma"):  # the same bot in both (never started: no network)
            profile = add_profile(home, name, KEYS["alpha"])
            (profile / ".env").write_text(
                f"HERMES_API_KEY={KEYS['alpha']}\nTELEGRAM_BOT_TOKEN=123:same-bot\n"
            )
        transport = httpx.ASGITransport(router)
        async with httpx.AsyncClient(transport=transport, base_url="http://h.test") as client:
            r = await client.get("/p/gamma/v1/models", headers=bearer(KEYS["alpha"]))
    assert r.status_code == 503
    message = r.json()["error"]["message"]
    assert "'alpha' and 'gamma'" in message and "telegram" in message
    assert "same-bot" not in message
    assert router.served() == []
