"""Screen items of the dashboard issue not covered elsewhere, in headless Chromium: the
Sessions screen (search by words and by meaning, a long transcript paged from its newest
messages with compression summaries and undone ranges, rename, fork, delete), Status with
the store's row, the keyboard (focus on sign-in, Enter, Escape out of a confirm step), a
390-px phone with no sideways scrolling, and the key kept out of the logs."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest
from selenium.webdriver.common.keys import Keys

from hermes.store.base import NewMessage, NewSession
from hermes.store.sqlite import SQLiteStore

from .conftest import KEY, Server, css, make_driver, screenshot, sign_in, text_of, wait_for

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


PHONE_SCREENS = ["status", "chat", "sessions", "memory", "users", "cron", "keys", "logs"]
PHONE_SCREENS += ["gateway", "tools", "skills", "usage"]


def test_readable_on_a_phone_without_sideways_scrolling(server: Server) -> None:
    seed_long_session(server.home)
    profile = tempfile.mkdtemp(prefix="hermes-ui-phone-")
    phone = make_driver(profile, width=390, height=844)
    try:
        sign_in(phone, server.base, KEY)
        for screen in [*PHONE_SCREENS, "sessions/long"]:
            open_fresh(phone, server, screen)
            wide = phone.execute_script(
                "return [document.documentElement.scrollWidth, window.innerWidth]"
            )
            assert wide[0] <= wide[1], f"{screen} scrolls sideways on a phone: {wide}"
            if screen in ("chat", "memory", "sessions/long", "status"):
                screenshot(phone, "phone-" + screen.replace("/long", ""))
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
    lines = server.api("GET", "/api/logs?limit=2000").json()["lines"]
    text = str(lines)
    assert len(lines) > 3  # the server did log (its start, the sign-ins' requests)
    assert KEY not in text and "a-wrong-key-that-is-long-enough" not in text
    for path in server.home.rglob("*.log"):
        content = path.read_text(errors="replace")
        assert KEY not in content and "a-wrong-key" not in content, path
