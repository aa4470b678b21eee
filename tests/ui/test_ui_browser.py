"""The dashboard in headless Chromium against a real `hermes serve` with the fake model."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from selenium.common.exceptions import NoAlertPresentException
from selenium.webdriver.common.by import By

from hermes import __version__
from hermes.testing.fake_model import Text, ToolCalls

from .conftest import KEY, Server, css, page_text, screenshot, sign_in, text_of, wait_for

pytestmark = pytest.mark.browser
XSS = "<img src=x onerror=window.__xss=1>"


def has_text(text: str, selector: str) -> Callable[[Any], bool]:
    return lambda driver: text in text_of(driver, selector)


def fetch_status(driver: Any, path: str) -> int:
    """The status the page's own fetch (cookie, no bearer) gets for GET `path`."""
    status: int = driver.execute_async_script(
        "const done = arguments[arguments.length - 1];"
        "fetch(arguments[0], {credentials: 'same-origin'}).then(r => done(r.status));",
        path,
    )
    return status


def test_sign_in_and_out(server: Server, browser: Any) -> None:
    browser.get(server.base + "/ui/")
    wait_for(browser, lambda d: css(d, "#key"), "the sign-in form")
    screenshot(browser, "signin")
    css(browser, "#key")[0].send_keys("not-the-key-at-all")
    css(browser, "#signin")[0].click()
    wait_for(browser, lambda d: "not this server's key" in text_of(d, "#signin-error"), "refusal")
    sign_in(browser, server.base, KEY)
    assert [a.text for a in css(browser, "#nav a")][:4] == ["Status", "Chat", "Sessions", "Memory"]
    assert all(c["name"] != "hermes_ui" or c["httpOnly"] for c in browser.get_cookies())
    assert KEY not in str(browser.get_cookies()) and KEY not in browser.current_url
    browser.refresh()
    wait_for(browser, lambda d: css(d, "#signout"), "still signed in after a reload")
    css(browser, "#signout")[0].click()
    wait_for(browser, lambda d: css(d, "#key"), "the sign-in form again")
    browser.refresh()
    wait_for(browser, lambda d: css(d, "#key"), "signed out after a reload")
    assert fetch_status(browser, "/api/sessions") == 401


def test_status_page(server: Server, browser: Any) -> None:
    sign_in(browser, server.base, KEY)
    browser.get(server.base + "/ui/#/status")
    wait_for(browser, lambda d: css(d, "table.parts tbody tr"), "the parts table")
    assert "Hermes" in text_of(browser, "#overall")
    parts = text_of(browser, "table.parts")
    for part in ("store", "model", "disk", "notes", "cron", "gateway", "mcp", "semantic_search"):
        assert part in parts, part
    cron = [r.text for r in css(browser, "tr.part") if r.text.startswith("cron")]
    assert cron and "ok" in cron[0] and "tick" in cron[0], cron  # the ticker's own row
    assert __version__ in text_of(browser, ".facts")
    assert text_of(browser, "#uptime").endswith(" s")  # a fresh server: "0 min 3 s"
    screenshot(browser, "status")


def test_chat_streams_an_answer_with_a_tool_card(server: Server, browser: Any) -> None:
    server.fake.enqueue(
        ToolCalls([("terminal", {"command": "echo hello-from-tool"})]),
        Text("The answer is forty-two, streamed.", chunk_chars=4),
    )
    sign_in(browser, server.base, KEY)
    browser.get(server.base + "/ui/#/chat/demo-1")
    box = wait_for(browser, lambda d: css(d, "#chat-input"), "the composer")[0]
    box.send_keys("What is the answer?")
    css(browser, "#chat-send")[0].click()
    wait_for(browser, lambda d: "forty-two, streamed" in text_of(d, ".msg.assistant"), "the answer")
    card = css(browser, ".toolcard[data-tool='terminal']")[0]
    assert "echo hello-from-tool" in card.text and "done in" in card.text
    card.find_element(By.TAG_NAME, "summary").click()
    wait_for(browser, lambda d: "hello-from-tool" in text_of(d, ".toolcard .result"), "the result")
    wait_for(browser, lambda d: "demo-1" in text_of(d, ".rail"), "the session in the rail")
    screenshot(browser, "chat")


def test_approving_a_dangerous_command_inline(server: Server, browser: Any) -> None:
    server.fake.enqueue(ToolCalls([("terminal", {"command": "rm -rf junk"})]), Text("cleaned up"))
    sign_in(browser, server.base, KEY)
    browser.get(server.base + "/ui/#/chat/approve-1")
    wait_for(browser, lambda d: css(d, "#chat-input"), "the composer")[0].send_keys("clean up")
    css(browser, "#chat-send")[0].click()
    wait_for(browser, lambda d: css(d, ".approval button[data-choice='once']"), "the approval")
    assert "rm -rf junk" in text_of(browser, ".approval")
    screenshot(browser, "approval")
    css(browser, ".approval button[data-choice='once']")[0].click()
    wait_for(browser, lambda d: "cleaned up" in text_of(d, ".msg.assistant"), "the answer")
    assert "Answered: once" in text_of(browser, ".approval")


def test_editing_a_note_reverting_it_and_asking_why(server: Server, browser: Any) -> None:
    server.fake.enqueue(
        ToolCalls([("memory", {"action": "add", "target": "user", "content": "Prefers tea"})]),
        Text("Noted."),
    )
    r = server.api("POST", "/api/sessions/notes-1/chat", json={"message": "I like tea"})
    assert r.status_code == 200, r.text
    sign_in(browser, server.base, KEY)
    browser.get(server.base + "/ui/#/memory")
    wait_for(browser, lambda d: "Prefers tea" in text_of(d, "#notes-user"), "the note")
    row = css(browser, "#notes-user .entry")[0]
    row.find_element(By.CSS_SELECTOR, ".why-btn").click()
    link = wait_for(browser, lambda d: css(d, "#notes-user a.turn-link"), "the why link")[0]
    assert "notes-1" in link.text
    row.find_element(By.CSS_SELECTOR, ".edit").click()
    area = wait_for(browser, lambda d: css(d, "#notes-user .edit-text"), "the editor")[0]
    area.clear()
    area.send_keys("Prefers green tea")
    css(browser, "#notes-user .save")[0].click()
    wait_for(browser, lambda d: "Prefers green tea" in text_of(d, "#notes-user"), "the edit")
    screenshot(browser, "memory")
    edit_row = "#history li:has(button.version)"
    wait_for(browser, lambda d: "Prefers green tea" in text_of(d, edit_row), "the history")
    for row in css(browser, edit_row):
        if "Prefers green tea" in row.text:
            row.find_element(By.CSS_SELECTOR, "button.version").click()
            break
    wait_for(browser, lambda d: "+Prefers green tea" in text_of(d, "#version-detail .diff"), "diff")
    css(browser, "#revert")[0].click()
    wait_for(
        browser,
        lambda d: (
            "Prefers tea" in text_of(d, "#notes-user")
            and "green" not in text_of(d, "#notes-user .text")
        ),
        "the revert",
    )
    css(browser, "#notes-user .entry .why-btn")[0].click()
    wait_for(browser, lambda d: css(d, "#notes-user a.turn-link"), "the why link")[0].click()
    wait_for(browser, lambda d: css(d, "#transcript .msg.focus"), "the turn that wrote it")
    assert "notes-1" in browser.current_url
    screenshot(browser, "sessions-transcript")


def test_a_scoped_key_sees_only_its_own_user(server: Server, browser: Any) -> None:
    add = {"action": "add", "target": "user", "content": ""}
    for user, note in [("alice", "alice likes jazz"), ("bob", "bob's secret plan")]:
        r = server.api("POST", "/api/memory", user=user, json={**add, "content": note})
        assert r.status_code == 200, r.text
    server.fake.enqueue(Text("hi bob"))
    assert server.api("POST", "/api/sessions/bob-chat/chat", user="bob", json={"message": "x"})
    key = server.scoped_key("alice")
    sign_in(browser, server.base, key)
    assert [a.text for a in css(browser, "#nav a")] == ["Chat", "Sessions", "Memory"]
    assert "user alice" in text_of(browser, "#who")
    browser.get(server.base + "/ui/#/memory")
    wait_for(browser, lambda d: "alice likes jazz" in text_of(d, "#notes-user"), "alice's note")
    assert "What Hermes remembers about me" in page_text(browser)
    assert "bob" not in text_of(browser, "#notes")
    assert css(browser, "#forget-me")
    screenshot(browser, "memory-user")
    browser.get(server.base + "/ui/#/status")
    wait_for(browser, lambda d: "needs the server key" in page_text(d), "the refusal")
    browser.get(server.base + "/ui/#/sessions")
    wait_for(browser, lambda d: css(d, ".pager"), "the list")
    assert "bob-chat" not in page_text(browser)
    assert fetch_status(browser, "/api/users") == 403
    assert fetch_status(browser, "/api/sessions/bob-chat") == 404


def test_data_renders_as_text_never_as_markup(server: Server, browser: Any) -> None:
    server.fake.enqueue(Text(XSS))
    assert server.api("POST", "/api/sessions/x-1/chat", json={"message": XSS}).status_code == 200
    assert server.api("PATCH", "/api/sessions/x-1", json={"title": XSS}).status_code == 200
    add = {"action": "add", "target": "memory", "content": f"note {XSS}"}
    assert server.api("POST", "/api/memory", json=add).status_code == 200
    sign_in(browser, server.base, KEY)
    for hash_, where in [
        ("#/sessions", "#session-list"),
        ("#/sessions/x-1", "#transcript"),
        ("#/memory", "#notes"),
        ("#/chat/x-1", "#chat-log"),
    ]:
        browser.get(server.base + "/ui/" + hash_)
        shown = has_text(XSS, where)
        wait_for(browser, shown, f"the text on {hash_}")
        assert not css(browser, "main img"), hash_
        assert browser.execute_script("return window.__xss") is None
        with pytest.raises(NoAlertPresentException):
            browser.switch_to.alert.text  # noqa: B018
    screenshot(browser, "sessions")


def test_the_transcript_names_the_model_that_answered(server: Server, browser: Any) -> None:
    server.fake.enqueue(Text("answered by the configured model"))
    assert server.api("POST", "/api/sessions/m-1/chat", json={"message": "hi"}).status_code == 200
    imported = {
        "id": "m-2",
        "source": "cli",
        "messages": [
            {"role": "user", "content": "hello"},
            {"role": "assistant", "content": "hi there", "model": XSS},
        ],
    }
    r = server.api("POST", "/api/sessions/import", content=json.dumps(imported).encode())
    assert r.status_code in (200, 201), r.text
    sign_in(browser, server.base, KEY)
    browser.get(server.base + "/ui/#/sessions/m-1")
    wait_for(browser, has_text("fake-model", "#transcript .msg.assistant .model"), "the model")
    assert not css(browser, "#transcript .msg.user .model")  # only answers carry one
    browser.get(server.base + "/ui/#/sessions/m-2")
    wait_for(browser, has_text(XSS, "#transcript .msg.assistant .model"), "the imported model")
    assert not css(browser, "main img")
    assert browser.execute_script("return window.__xss") is None
