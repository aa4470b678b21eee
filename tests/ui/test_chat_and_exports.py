"""Chat's interrupt and rail search, the two exports a browser downloads (a session's JSONL,
a user's zip), and a scoped user correcting a note and forgetting themselves, in headless
Chromium against a real `hermes serve` (issue 37)."""

from __future__ import annotations

import json
import time
import zipfile
from pathlib import Path
from typing import Any

import httpx
import pytest
from selenium.webdriver.common.by import By

from hermes.testing.fake_model import Text

from .conftest import KEY, Server, css, sign_in, text_of, wait_for

pytestmark = pytest.mark.browser
SLOW = "word " * 120  # 120 chunks 0.1 s apart: twelve seconds unless stopped


def test_stop_interrupts_a_streaming_answer(server: Server, browser: Any) -> None:
    server.fake.enqueue(Text(SLOW, chunk_chars=5, delay=0.1))
    sign_in(browser, server.base, KEY)
    browser.get(server.base + "/ui/#/chat/stop-1")
    wait_for(browser, lambda d: css(d, "#chat-input"), "the composer")[0].send_keys("talk long")
    css(browser, "#chat-send")[0].click()
    wait_for(browser, lambda d: "word" in text_of(d, ".msg.assistant"), "the answer streaming")
    started = time.monotonic()
    css(browser, "#chat-stop")[0].click()
    wait_for(browser, lambda d: "Stopped." in text_of(d, "#chat-log"), "the run cancelled")
    assert time.monotonic() - started < 8  # well before the stream's own end
    assert not css(browser, "#chat-stop")[0].is_displayed()
    assert css(browser, "#chat-send")[0].is_enabled()
    shown = text_of(browser, ".msg.assistant")
    assert 0 < shown.count("word") < 120, shown


def narrowed(rail: str) -> bool:
    return "Trip to Lisbon" in rail and "Groceries" not in rail


def test_the_rail_search_narrows_the_sessions(server: Server, browser: Any) -> None:
    for sid, title in [("trip-1", "Trip to Lisbon"), ("food-1", "Groceries for Sunday")]:
        line = json.dumps(
            {"id": sid, "title": title, "messages": [{"role": "user", "content": "x"}]}
        )
        r = server.api("POST", "/api/sessions/import", content=line + "\n")
        assert r.status_code == 200, r.text
    sign_in(browser, server.base, KEY)
    browser.get(server.base + "/ui/#/chat")
    wait_for(browser, lambda d: "Groceries" in text_of(d, ".rail-list"), "both sessions")
    css(browser, "#rail-search")[0].send_keys("lisbon")
    # one check for both: while the rail redraws it is empty for a moment, Groceries gone too
    wait_for(browser, lambda d: narrowed(text_of(d, ".rail-list")), "the narrowed rail")
    assert "Trip to Lisbon" in text_of(browser, ".rail-list")
    css(browser, ".rail-list a")[0].click()
    wait_for(browser, lambda d: d.current_url.endswith("#/chat/trip-1"), "the session opened")


def downloads_to(browser: Any, folder: Path) -> Path:
    folder.mkdir()
    browser.execute_cdp_cmd(
        "Browser.setDownloadBehavior", {"behavior": "allow", "downloadPath": str(folder)}
    )
    return folder


def downloaded(folder: Path, suffix: str) -> Path | None:
    done = [p for p in folder.iterdir() if p.name.endswith(suffix)]
    return done[0] if done else None


def test_a_session_and_a_user_export_download(server: Server, browser: Any, tmp_path: Path) -> None:
    server.fake.enqueue(Text("exported answer"))
    r = server.api("POST", "/api/sessions/ex-1/chat", user="dora", json={"message": "hi"})
    assert r.status_code == 200, r.text
    sign_in(browser, server.base, KEY)
    folder = downloads_to(browser, tmp_path / "downloads")
    browser.get(server.base + "/ui/#/users")
    wait_for(browser, lambda d: css(d, "tr[data-user='dora'] a.export"), "dora's row")
    css(browser, "tr[data-user='dora'] a.export")[0].click()
    archive = wait_for(browser, lambda d: downloaded(folder, ".zip"), "the user's zip", 30)
    with zipfile.ZipFile(archive) as z:
        assert "exported answer" in "".join(
            z.read(n).decode(errors="replace") for n in z.namelist()
        )

    server.fake.enqueue(Text("owner's answer"))
    assert server.api("POST", "/api/sessions/ex-2/chat", json={"message": "hi"}).status_code == 200
    browser.get(server.base + "/ui/#/sessions/ex-2")
    wait_for(browser, lambda d: "owner's answer" in text_of(d, "#transcript"), "the transcript")
    browser.find_element(By.ID, "export").click()
    jsonl = wait_for(browser, lambda d: downloaded(folder, ".jsonl"), "the session's JSONL", 30)
    [record] = [json.loads(line) for line in jsonl.read_text().splitlines() if line.strip()]
    assert record["id"] == "ex-2"
    assert "owner's answer" in json.dumps(record["messages"])


def test_a_scoped_user_corrects_a_note_then_forgets_themselves(
    server: Server, browser: Any
) -> None:
    add = {"action": "add", "target": "user", "content": "alice likes jazz"}
    assert server.api("POST", "/api/memory", user="alice", json=add).status_code == 200
    server.fake.enqueue(Text("hello alice"))
    r = server.api("POST", "/api/sessions/alice-1/chat", user="alice", json={"message": "hi"})
    assert r.status_code == 200, r.text
    key = server.scoped_key("alice")
    sign_in(browser, server.base, key)
    browser.get(server.base + "/ui/#/memory")
    wait_for(browser, lambda d: "alice likes jazz" in text_of(d, "#notes-user"), "her note")
    css(browser, "#notes-user .entry .edit")[0].click()
    area = wait_for(browser, lambda d: css(d, "#notes-user .edit-text"), "the editor")[0]
    area.clear()
    area.send_keys("alice likes free jazz")
    css(browser, "#notes-user .save")[0].click()
    wait_for(browser, lambda d: "free jazz" in text_of(d, "#notes-user"), "the correction")
    notes = server.api("GET", "/api/memory", user="alice").json()["user"]["entries"]
    assert notes == ["alice likes free jazz"]
    css(browser, "#forget-me")[0].click()
    wait_for(browser, lambda d: d.switch_to.alert, "the confirm dialog").accept()
    wait_for(browser, lambda d: "no longer holds anything of alice" in text_of(d, "main"), "done")
    assert "alice" not in [u["id"] for u in server.api("GET", "/api/users").json()["users"]]
    assert server.api("GET", "/api/memory", user="alice").json()["user"]["entries"] == []
    assert server.api("GET", "/api/sessions/alice-1", user="alice").status_code == 404
    gone = httpx.get(server.base + "/api/me", headers={"Authorization": f"Bearer {key}"})
    assert gone.status_code == 401
