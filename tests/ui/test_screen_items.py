"""Screen items of the dashboard issue not covered elsewhere, in headless Chromium: the
Sessions screen (search by words and by meaning, a long transcript paged from its newest
messages with compression summaries and undone ranges, rename, fork, delete), Status with
the store's row, the keyboard (focus on sign-in, Enter, Escape out of a confirm step), a
390-px phone with no sideways scrolling, and the key kept out of the logs."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from selenium.webdriver.common.keys import Keys

from hermes.store.base import NewMessage, NewSession
from hermes.store.sqlite import SQLiteStore
from hermes.testing.fake_model import Error, Text

from .conftest import (
    KEY,
    Server,
    css,
    make_driver,
    screenshot,
    serve_in_thread,
    sign_in,
    text_of,
    wait_for,
)

pytestmark = pytest.mark.browser
LONG = 250


def drawn(driver: Any, screen: str) -> bool:
    """The shell marks `screen:<id>` once the screen has drawn its data."""
    count: int = driver.execute_script(
        "return performance.getEntriesByName(arguments[0]).length", f"screen:{screen}"
    )
    return count > 0


def open_fresh(driver: Any, server: Server, route: str) -> None:
    driver.get(f"{server.base}/ui/?fresh={route.replace('/', '-')}#/{route}")
    wait_for(driver, lambda d: drawn(d, route.split("/")[0]), f"the {route} screen drawn")


def seed_long_session(home: Path) -> None:
    store = SQLiteStore(home / "state.db")
    try:
        messages = [
            NewMessage(
                "user" if i % 2 == 0 else "assistant",
                f"turn {i} about the zeppelin hangar" if i == 3 else f"turn {i} of the talk",
                timestamp=1.7e9 + i,
            )
            for i in range(LONG)
        ]
        store.import_sessions("default", [NewSession("long", "api", messages, title="Long one")])
        store.add_compaction(
            "default",
            "long",
            head_end=0,
            upto_idx=40,
            summary="Early talk, summed up.",
            kind="auto",
        )
        store.hide_messages("default", "long", start=245, end=247)
    finally:
        store.close()


def turns(driver: Any) -> list[int]:
    found: list[int] = driver.execute_script(
        "return Array.from(document.querySelectorAll('#transcript [data-index]'))"
        ".map(e => Number(e.dataset.index))"
    )
    return found


def test_sessions_search_transcript_rename_fork_delete(server: Server, browser: Any) -> None:
    seed_long_session(server.home)
    sign_in(browser, server.base, KEY)
    open_fresh(browser, server, "sessions")
    wait_for(browser, lambda d: "Long one" in text_of(d, "#session-list"), "the session listed")
    css(browser, "#session-search")[0].send_keys("zeppelin", Keys.ENTER)
    wait_for(browser, lambda d: "zeppelin" in text_of(d, "#session-list"), "the words' snippet")
    assert "Long one" in text_of(browser, "#session-list")
    screenshot(browser, "sessions-search")
    css(browser, "#session-search-mode option[value='meaning']")[0].click()
    css(browser, "#session-search")[0].send_keys(Keys.ENTER)
    wait_for(  # this server runs with search by meaning off: the screen says so and why
        browser,
        lambda d: "Search by meaning is off" in text_of(d, ".screen-sessions"),
        "the meaning search's refusal",
    )
    assert "search.embeddings" in text_of(browser, ".screen-sessions")

    open_fresh(browser, server, "sessions/long")
    wait_for(browser, lambda d: turns(d), "the transcript")
    assert turns(browser) == list(range(LONG - 100, LONG))  # the newest 100 first
    assert "#245–#246" in text_of(browser, ".screen-sessions")  # undone range named
    assert css(browser, "#turn-245.undone") and not css(browser, "#turn-244.undone")
    assert css(browser, "#newer")[0].is_displayed() is False
    for shown in (50, 0):
        css(browser, "#older")[0].click()
        wait_for(browser, lambda d, s=shown: turns(d)[0] == s, f"older messages from #{shown}")
    assert turns(browser) == list(range(LONG))
    assert not css(browser, "#older")[0].is_displayed()
    assert "Early talk, summed up." in text_of(browser, ".summary")
    assert css(browser, "#turn-10.compressed")
    screenshot(browser, "sessions-long")

    title = css(browser, "#rename-input")[0]
    title.clear()
    title.send_keys("Renamed in the browser", Keys.ENTER)
    wait_for(browser, lambda d: text_of(d, "#session-title") == "Renamed in the browser", "rename")
    assert server.api("GET", "/api/sessions/long").json()["session"]["title"] == (
        "Renamed in the browser"
    )

    css(browser, "#fork")[0].click()
    wait_for(browser, lambda d: "#/sessions/long-fork-" in d.current_url, "the fork opened")
    fork_id = browser.current_url.split("#/sessions/", 1)[1]
    wait_for(browser, lambda d: "forked from" in text_of(d, ".screen-sessions"), "its parent")
    fork = server.api("GET", f"/api/sessions/{fork_id}").json()["session"]
    assert fork["parent_session_id"] == "long" and fork["message_count"] == LONG

    wait_for(browser, lambda d: turns(d), "the fork's transcript")
    css(browser, "#delete")[0].click()
    alert = wait_for(browser, lambda d: d.switch_to.alert, "the confirm dialog")
    assert fork_id in alert.text
    alert.accept()
    wait_for(browser, lambda d: d.current_url.endswith("#/sessions"), "back to the list")
    assert server.api("GET", f"/api/sessions/{fork_id}").status_code == 404
    assert server.api("GET", "/api/sessions/long").status_code == 200


def test_status_shows_the_store_and_each_part(server: Server, browser: Any) -> None:
    sign_in(browser, server.base, KEY)
    open_fresh(browser, server, "status")
    store_row = text_of(browser, "tr.part:first-child")
    assert store_row.startswith("store") and "ok" in store_row and "schema" in store_row


def test_keyboard_sign_in_and_escape_out_of_a_confirm(server: Server, browser: Any) -> None:
    line = '{"id": "c1", "messages": [{"role": "user", "content": "hi"}]}\n'
    r = server.api("POST", "/api/sessions/import", user="carol", content=line)
    assert r.status_code == 200, r.text
    browser.get(server.base + "/ui/")
    wait_for(browser, lambda d: css(d, "#key"), "the sign-in form")
    assert browser.switch_to.active_element.get_attribute("id") == "key"  # focus starts there
    browser.switch_to.active_element.send_keys(KEY, Keys.ENTER)  # Enter signs in
    wait_for(browser, lambda d: css(d, "#signout"), "signed in by Enter")
    open_fresh(browser, server, "users")
    row = "tr[data-user='carol'] button.forget"
    forget = wait_for(browser, lambda d: css(d, row), "carol's row")[0]
    forget.send_keys(Keys.ENTER)  # a button answers Enter
    wait_for(
        browser,
        lambda d: d.switch_to.active_element.get_attribute("id") == "forget-confirm-input",
        "the confirm step focused",
    )
    browser.switch_to.active_element.send_keys(Keys.ESCAPE)
    wait_for(browser, lambda d: not css(d, "#forget-confirm"), "the confirm step gone")
    assert browser.switch_to.active_element.get_attribute("data-user") == "carol"
    assert [u["id"] for u in server.api("GET", "/api/users").json()["users"]] == ["carol"]
    # Tab walks the navigation in its order before the screen
    css(browser, "#nav a")[0].send_keys(Keys.TAB)
    assert browser.switch_to.active_element.get_attribute("data-id") == "chat"


WIDEST = (  # the elements that reach past the window's right edge, for the failure message
    "return Array.from(document.querySelectorAll('body *'))"
    ".filter(e => e.getBoundingClientRect().right > window.innerWidth + 1)"
    ".slice(-4).map(e => e.tagName + '.' + e.className + ' ' + Math.round(e.getBoundingClientRect().right))"
)
PHONE_SCREENS = ["status", "chat", "sessions", "memory", "users", "cron", "keys", "logs"]
PHONE_SCREENS += ["gateway", "tools", "skills", "usage"]


def test_readable_on_a_phone_without_sideways_scrolling(server: Server) -> None:
    seed_long_session(server.home)
    profile = tempfile.mkdtemp(prefix="hermes-ui-phone-")
    phone = make_driver(profile, width=390, height=844)
    try:  # headless Chromium keeps windows at least 500 px wide: emulate the phone's screen
        phone.execute_cdp_cmd(
            "Emulation.setDeviceMetricsOverride",
            {"width": 390, "height": 844, "deviceScaleFactor": 1, "mobile": False},
        )
        sign_in(phone, server.base, KEY)
        assert phone.execute_script("return window.innerWidth") == 390
        wider: list[str] = []
        for screen in [*PHONE_SCREENS, "sessions/long"]:
            open_fresh(phone, server, screen)
            wide = phone.execute_script(
                "return [document.documentElement.scrollWidth, window.innerWidth]"
            )
            if wide[0] > wide[1]:
                wider.append(f"{screen}: {wide} {phone.execute_script(WIDEST)}")
            if screen in ("chat", "memory", "sessions/long", "status"):
                screenshot(phone, "phone-" + screen.replace("/long", ""))
        assert not wider, f"screens that scroll sideways on a 390-px phone: {wider}"
    finally:
        phone.quit()
        shutil.rmtree(profile, ignore_errors=True)


def test_the_key_is_never_in_a_url_or_the_logs(server: Server, browser: Any) -> None:
    browser.get(server.base + "/ui/")
    wait_for(browser, lambda d: css(d, "#key"), "the sign-in form")
    css(browser, "#key")[0].send_keys("a-wrong-key-that-is-long-enough", Keys.ENTER)
    wait_for(browser, lambda d: text_of(d, "#signin-error"), "the refusal")
    sign_in(browser, server.base, KEY)
    open_fresh(browser, server, "logs")
    urls: list[str] = browser.execute_script(
        "return performance.getEntriesByType('resource').map(e => e.name).concat([location.href])"
    )
    assert urls and not [u for u in urls if KEY in u or "wrong-key" in u]
    server.fake.default = lambda body: Error(500, "log-marker-5150")  # a line is logged
    chat = {"model": "hermes", "messages": [{"role": "user", "content": "hi"}]}
    assert server.api("POST", "/v1/chat/completions", json=chat).status_code >= 500
    lines = server.api("GET", "/api/logs?limit=2000").json()["lines"]
    text = str(lines)
    assert "log-marker-5150" in text  # the tail is read, and holds this server's lines
    assert KEY not in text and "a-wrong-key-that-is-long-enough" not in text
    for path in server.home.rglob("*.log"):
        content = path.read_text(errors="replace")
        assert KEY not in content and "a-wrong-key" not in content, path


@pytest.fixture
def bare_server(chromium: None, home: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Server]:
    """A server with no model configured and an MCP server that cannot start (Status
    degraded, each with its fix), and a home chat."""
    from hermes.testing.fake_model import FakeModel

    home.mkdir(parents=True, exist_ok=True)
    (home / "config.yaml").write_text(
        "gateway:\n  home: telegram:4242\n"
        f"mcp_servers:\n  broken:\n    command: {home / 'no-such-mcp-server'}\n"
    )
    monkeypatch.setenv("HERMES_API_KEY", KEY)
    with FakeModel() as unused, serve_in_thread() as base:
        yield Server(base, home, unused)


def test_status_names_what_is_degraded_and_its_fix(bare_server: Server, browser: Any) -> None:
    sign_in(browser, bare_server.base, KEY)
    open_fresh(browser, bare_server, "status")
    assert "degraded" in text_of(browser, "#overall")
    assert "no model is configured" in text_of(browser, "#reasons")
    model = text_of(browser, "tr.part.status-not_configured")
    assert model.startswith("model") and "Fix:" in model and "hermes setup" in model
    mcp = text_of(browser, "tr.part[data-part='mcp']")  # a part of members: one line each
    assert "broken" in text_of(browser, "tr.part[data-part='mcp'] li[data-member='broken']")
    assert "Fix:" in mcp and "hermes mcp list" in mcp
    assert "MCP servers failing: broken" in text_of(browser, "#reasons")
    screenshot(browser, "status-degraded")


def test_gateway_shows_the_home_chat_and_each_adapter(bare_server: Server, browser: Any) -> None:
    sign_in(browser, bare_server.base, KEY)
    open_fresh(browser, bare_server, "gateway")
    assert text_of(browser, "#home-chat") == "telegram:4242"
    for platform in ("telegram", "discord", "slack"):
        assert css(browser, f"#adapters tr[data-platform='{platform}']"), platform


def test_memory_shows_each_notes_usage_bar(server: Server, browser: Any) -> None:
    for target, text in [("memory", "Deploys on Fridays are banned"), ("user", "Likes tea")]:
        body = {"action": "add", "target": target, "content": text}
        assert server.api("POST", "/api/memory", json=body).status_code == 200
    limits = server.api("GET", "/api/memory").json()
    sign_in(browser, server.base, KEY)
    open_fresh(browser, server, "memory")
    for target in ("memory", "user"):
        bar = wait_for(browser, lambda d, t=target: css(d, f"#notes-{t} [role=meter]"), target)[0]
        chars, limit = int(bar.get_attribute("aria-valuenow")), bar.get_attribute("aria-valuemax")
        assert chars > 0 and int(limit) > chars, (target, chars, limit)
        assert (chars, int(limit)) == (limits[target]["chars"], limits[target]["limit"])
        assert f"/ {int(limit):,} chars" in text_of(browser, f"#notes-{target}")


def test_the_owner_switches_to_a_users_data(server: Server, browser: Any) -> None:
    from selenium.webdriver.support.ui import Select

    add = {"action": "add", "target": "user", "content": ""}
    for user, note in [("alice", "alice likes jazz"), (None, "the owner's own note")]:
        r = server.api("POST", "/api/memory", user=user, json={**add, "content": note})
        assert r.status_code == 200, r.text
    server.fake.enqueue(Text("hi alice"))
    assert server.api("POST", "/api/sessions/alice-1/chat", user="alice", json={"message": "x"})
    sign_in(browser, server.base, KEY)
    open_fresh(browser, server, "memory")
    assert "the owner's own note" in text_of(browser, "#notes-user")
    assert "alice" not in text_of(browser, "#notes")
    pick = wait_for(browser, lambda d: css(d, "#scope-pick option[value='alice']"), "alice")
    assert pick
    Select(css(browser, "#scope-pick")[0]).select_by_value("alice")
    wait_for(browser, lambda d: "alice likes jazz" in text_of(d, "#notes-user"), "alice's notes")
    assert "the owner's own note" not in text_of(browser, "#notes")
    open_fresh(browser, server, "sessions")  # the choice holds across screens
    wait_for(browser, lambda d: "alice-1" in text_of(d, "#session-list"), "alice's session")
    Select(css(browser, "#scope-pick")[0]).select_by_value("")
    wait_for(browser, lambda d: "alice-1" not in text_of(d, "#session-list"), "the owner's own")
