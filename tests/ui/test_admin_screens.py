"""The admin screens (Users, Cron, Keys, Logs, Gateway, Tools & MCP, Skills, Usage) in headless
Chromium against a real `hermes serve` with the fake model; each saves docs/ui-<screen>.png."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from hermes.testing.fake_model import Error, Text

from .conftest import KEY, Server, css, page_text, screenshot, sign_in, text_of, wait_for

pytestmark = pytest.mark.browser


def shot(driver: Any, name: str) -> None:
    """ui-<name>.png in the folder HERMES_UI_SCREENSHOTS names (docs/ to refresh README's
    pictures); a plain test run writes nothing into the repository."""
    screenshot(driver, name)


def open_screen(driver: Any, server: Server, hash_: str) -> None:
    sign_in(driver, server.base, KEY)
    driver.get(server.base + "/ui/" + hash_)


def test_users_forget_through_the_confirm_step(server: Server, browser: Any) -> None:
    for user, content in [("alice", "alice likes jazz"), ("bob", "bob likes tea")]:
        r = server.api(
            "POST",
            "/api/memory",
            user=user,
            json={"action": "add", "target": "user", "content": content},
        )
        assert r.status_code == 200, r.text
    for user in ("alice", "bob"):
        server.fake.enqueue(Text(f"hello {user}"))
        r = server.api("POST", f"/api/sessions/{user}-1/chat", user=user, json={"message": "hi"})
        assert r.status_code == 200, r.text
    open_screen(browser, server, "#/users")
    wait_for(browser, lambda d: css(d, "tr[data-user='alice'] button.forget"), "alice's row")
    assert "bob" in text_of(browser, "#users-list")
    link = css(browser, "tr[data-user='alice'] a.export")[0]
    assert link.get_attribute("href").endswith("/api/users/alice/export")
    shot(browser, "users")
    css(browser, "tr[data-user='alice'] button.forget")[0].click()
    box = wait_for(browser, lambda d: css(d, "#forget-confirm-input"), "the confirm step")[0]
    go = css(browser, "#forget-confirm-go")[0]
    box.send_keys("alic")
    assert not go.is_enabled()
    box.send_keys("e")
    assert go.is_enabled()
    go.click()
    wait_for(browser, lambda d: "Forgot alice" in text_of(d, "#forgotten"), "the forget result")
    wait_for(browser, lambda d: "alice" not in text_of(d, "#users-list"), "alice gone")
    assert "bob" in text_of(browser, "#users-list")
    users = server.api("GET", "/api/users").json()["users"]
    assert [u["id"] for u in users] == ["bob"]
    assert "hello alice" not in page_text(browser)


def test_cron_run_now_shows_the_output_and_delivery(server: Server, browser: Any) -> None:
    body = {"name": "daily digest", "schedule": "every 2h", "prompt": "Summarise the day"}
    r = server.api("POST", "/api/jobs", json=body)
    assert r.status_code == 201, r.text
    job_id = r.json()["job"]["id"]
    server.fake.enqueue(Text("Digest: cron-output-4711"))
    open_screen(browser, server, "#/cron")
    row = f"tr[data-job='{job_id}']"
    wait_for(browser, lambda d: css(d, f"{row} button.pause"), "the job's row")
    assert "every 2h" in text_of(browser, row) or "120" in text_of(browser, row)
    css(browser, f"{row} button.pause")[0].click()
    wait_for(browser, lambda d: css(d, f"{row} button.resume"), "paused")
    assert "paused" in text_of(browser, row)
    css(browser, f"{row} button.resume")[0].click()
    wait_for(browser, lambda d: css(d, f"{row} button.pause"), "resumed")
    shot(browser, "cron")
    css(browser, f"{row} button.run-now")[0].click()
    # "finished" only once the run's delivery is recorded: its output is saved first
    wait_for(browser, lambda d: "finished." in text_of(d, "#run-status"), "the run's end", 60)
    assert "cron-output-4711" in text_of(browser, "#runs")
    assert "Summarise the day" in text_of(browser, "#runs")
    assert "local" in text_of(browser, "#runs .delivery")
    assert browser.current_url.endswith(f"#/cron/{job_id}")
    shot(browser, "cron-runs")


def test_keys_create_then_revoke(server: Server, browser: Any) -> None:
    open_screen(browser, server, "#/keys")
    wait_for(browser, lambda d: css(d, "#quotas"), "the quotas")
    css(browser, "#key-user")[0].send_keys("carol")
    css(browser, "#key-label")[0].send_keys("carol's laptop")
    css(browser, "#key-create")[0].click()
    secret = wait_for(browser, lambda d: text_of(d, "#key-secret"), "the new secret").strip()
    assert secret.startswith("hk_")
    key_id = secret.split("_")[1]
    row = f"tr[data-key='{key_id}']"
    wait_for(browser, lambda d: "active" in text_of(d, row), "the key listed")
    assert "carol's laptop" in text_of(browser, row)
    assert as_key(server, "/api/me", secret).json()["user"] == "carol"
    shot(browser, "keys")
    css(browser, "#key-done")[0].click()
    assert secret not in page_text(browser)
    css(browser, f"{row} button.revoke")[0].click()
    wait_for(browser, lambda d: css(d, f"{row} button.confirm-revoke"), "the confirm")[0].click()
    wait_for(browser, lambda d: "revoked" in text_of(d, row), "the key revoked")
    assert as_key(server, "/api/me", secret).status_code == 401


def as_key(server: Server, path: str, key: str) -> httpx.Response:
    return httpx.get(server.base + path, headers={"Authorization": f"Bearer {key}"}, timeout=30)


def test_logs_live_tail_shows_a_new_line(server: Server, browser: Any) -> None:
    open_screen(browser, server, "#/logs")
    wait_for(browser, lambda d: "live" in text_of(d, "#log-state"), "the live tail")
    server.fake.default = lambda body: Error(500, f"tail-marker-991 near {KEY}")
    r = server.api("POST", "/v1/chat/completions", json=chat("hi"))
    assert r.status_code >= 500
    wait_for(browser, lambda d: "tail-marker-991" in text_of(d, "#log-lines"), "the new line")
    shown = text_of(browser, "#log-lines")
    assert "upstream model failure" in shown and KEY not in shown and "[REDACTED]" in shown
    css(browser, "#log-filter")[0].send_keys("no-such-words-here\n")
    wait_for(browser, lambda d: "tail-marker-991" not in text_of(d, "#log-lines"), "filtered")
    css(browser, "#log-filter")[0].clear()
    css(browser, "#log-filter")[0].send_keys("tail-marker\n")
    wait_for(browser, lambda d: "tail-marker-991" in text_of(d, "#log-lines"), "found again")
    shot(browser, "logs")


def chat(content: str) -> dict[str, Any]:
    return {"model": "hermes", "messages": [{"role": "user", "content": content}]}


def test_gateway_approve_a_pairing_request(server: Server, browser: Any) -> None:
    from hermes.gateway.access import PairingStore

    store = PairingStore(server.home)
    alice, mallory = store.offer("telegram:111", "Alice"), store.offer("telegram:666", "Mallory")
    assert alice and mallory
    open_screen(browser, server, "#/gateway")
    row = "#pairing-pending tr[data-identity='telegram:111']"
    wait_for(browser, lambda d: css(d, f"{row} button.approve"), "the pairing request")
    assert alice.code in text_of(browser, row)
    assert "telegram" in text_of(browser, "#adapters")
    shot(browser, "gateway")
    css(browser, f"{row} button.approve")[0].click()
    # the result line shows before the paired list has been fetched again: wait for both
    wait_for(
        browser,
        lambda d: (
            "Approved telegram:111" in text_of(d, "#pairing-result")
            and "telegram:111" in text_of(d, "#paired")
        ),
        "approval",
    )
    assert "telegram:111" in text_of(browser, "#paired")
    assert "telegram:111" in store.approved()
    other = "#pairing-pending tr[data-identity='telegram:666']"
    css(browser, f"{other} button.deny")[0].click()
    wait_for(browser, lambda d: "Denied telegram:666" in text_of(d, "#pairing-result"), "denial")
    assert store.pending() == [] and "telegram:666" not in store.approved()


def test_tools_and_mcp_show_each_callers_tools(server: Server, browser: Any) -> None:
    open_screen(browser, server, "#/tools")
    wait_for(browser, lambda d: css(d, "#toolsets tr[data-tool='terminal']"), "the tools grid")
    assert "No MCP servers configured" in text_of(browser, "#mcp-servers")
    terminal = css(browser, "#toolsets tr[data-tool='terminal'] td")
    assert [c.text for c in terminal][1:3] == ["✓", "—"]  # the owner's, never an end user's
    memory = css(browser, "#toolsets tr[data-tool='memory'] td")
    assert [c.text for c in memory][1:3] == ["✓", "✓"]
    shot(browser, "tools")


def test_skills_create_edit_and_view(server: Server, browser: Any) -> None:
    open_screen(browser, server, "#/skills")
    wait_for(browser, lambda d: css(d, "#skills-list tr[data-skill]"), "the bundled skills")
    css(browser, "#new-skill-name")[0].send_keys("pack-list\n")
    area = wait_for(browser, lambda d: css(d, "#skill-text"), "the editor")[0]
    area.clear()
    area.send_keys("---\nname: pack-list\ndescription: Make a packing list\n---\n1. Ask where.\n")
    css(browser, "#skill-category")[0].send_keys("travel")
    css(browser, "#skill-save")[0].click()
    wait_for(browser, lambda d: "Created" in text_of(d, "#skill-saved"), "created")
    area.send_keys("2. List chargers.\n")
    css(browser, "#skill-save")[0].click()
    wait_for(browser, lambda d: "Saved" in text_of(d, "#skill-saved"), "saved")
    skill = server.api("GET", "/api/skills/pack-list").json()["skill"]
    assert skill["category"] == "travel" and "2. List chargers." in skill["content"]
    browser.get(server.base + "/ui/#/skills")
    wait_for(browser, lambda d: css(d, "tr[data-skill='pack-list']"), "the new skill listed")
    shot(browser, "skills")


def test_usage_chart_shows_each_users_tokens(server: Server, browser: Any) -> None:
    for user in (None, "alice"):
        server.fake.enqueue(Text("counted", prompt_tokens=120, completion_tokens=30))
        r = server.api("POST", "/api/sessions/u-1/chat", user=user, json={"message": "hi"})
        assert r.status_code == 200, r.text
    open_screen(browser, server, "#/usage")
    wait_for(browser, lambda d: css(d, "#usage-chart rect.ubar"), "the chart's bars")
    assert "fake-model\towner\t120\t30" in text_of(browser, "#usage-rows")
    assert "fake-model" in text_of(browser, ".legend")
    select = css(browser, "#usage-by")[0]
    select.send_keys("by user")
    wait_for(browser, lambda d: "alice" in text_of(d, ".legend"), "stacked by user")
    assert {b.get_attribute("data-series") for b in css(browser, "#usage-chart rect.ubar")} == {
        "owner",
        "alice",
    }
    assert "alice" in text_of(browser, "#usage-rows")
    shot(browser, "usage")
