"""The dashboard's profile switcher (SPEC §16) in headless Chromium against a real
`hermes serve` serving the default profile and two others."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest

from hermes.profiles import create
from hermes.testing.fake_model import Text

from .conftest import KEY, Server, css, page_text, sign_in, text_of, wait_for
from .test_ui_browser import fetch_status

pytestmark = pytest.mark.browser
BETA_KEY = "beta-only-key-0123456789abcdef"


@pytest.fixture
def profiles(home: Path) -> None:
    """alpha shares the default profile's key (so that key opens both); beta has its own."""
    for name, key in (("alpha", KEY), ("beta", BETA_KEY)):
        env = create(home, name).home / ".env"
        env.write_text(f"HERMES_API_KEY={key}\n", encoding="utf-8")


def test_switching_profiles(profiles: None, server: Server, browser: Any) -> None:
    server.fake.default = Text("ok")
    for prefix, key, session in (
        ("/p/alpha", KEY, "alpha-only"),
        ("/p/beta", BETA_KEY, "beta-only"),
    ):
        r = httpx.post(
            f"{server.base}{prefix}/api/sessions/{session}/chat",
            json={"message": "hi"},
            headers={"Authorization": f"Bearer {key}"},
            timeout=30,
        )
        assert r.status_code == 200, r.text
    sign_in(browser, server.base, KEY)
    options = [o.text for o in css(browser, "#profile-pick option")]
    assert options == ["default", "alpha"]  # beta has a key of its own
    browser.get(server.base + "/ui/#/sessions")
    wait_for(browser, lambda d: css(d, ".pager"), "the default profile's sessions")
    assert "alpha-only" not in page_text(browser)
    css(browser, "#profile-pick option")[1].click()
    wait_for(browser, lambda d: d.current_url.startswith(server.base + "/p/alpha/ui/"), "alpha")
    wait_for(browser, lambda d: css(d, "#signout"), "already signed in to alpha")
    browser.get(server.base + "/p/alpha/ui/#/sessions")
    wait_for(browser, lambda d: "alpha-only" in text_of(d, "main"), "alpha's session")
    assert "beta-only" not in page_text(browser)
    assert fetch_status(browser, "/p/beta/api/sessions") == 401  # no cookie opens beta
    # signing out of alpha leaves the default profile signed in
    css(browser, "#signout")[0].click()
    wait_for(browser, lambda d: css(d, "#key"), "alpha's sign-in form")
    assert fetch_status(browser, "/p/alpha/api/sessions") == 401
    assert fetch_status(browser, "/api/sessions") == 200
