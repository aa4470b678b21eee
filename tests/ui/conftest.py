"""Browser fixtures: a real `hermes serve` with a server key and the fake model, and headless
Chromium (Debian's chromium + chromium-driver) driven by Selenium, each test in a fresh
profile. Without Chromium the browser tests are skipped and say why."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from hermes.auth.keys import create_key
from hermes.store.sqlite import SQLiteStore
from hermes.testing.fake_model import FakeModel

from ..server.test_serve import hermes_serve

KEY = "ui-test-server-key-0123456789"
CHROMIUM = os.environ.get("HERMES_CHROMIUM", "/usr/bin/chromium")
CHROMEDRIVER = os.environ.get("HERMES_CHROMEDRIVER", "/usr/bin/chromedriver")
CHROME_FLAGS = [
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
]


def chromium_missing() -> str | None:
    """Why the browser tests cannot run here, or None."""
    if not (Path(CHROMIUM).exists() or shutil.which("chromium")):
        return "no Chromium: apt-get install chromium chromium-driver (scripts/test does)"
    if not (Path(CHROMEDRIVER).exists() or shutil.which("chromedriver")):
        return "no chromedriver: apt-get install chromium-driver (scripts/test does)"
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed (pip install -e '.[test]')"
    return None


def make_driver(user_data_dir: str, width: int = 1280, height: int = 900) -> Any:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM if Path(CHROMIUM).exists() else str(shutil.which("chromium"))
    for flag in CHROME_FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={user_data_dir}")
    options.add_argument(f"--window-size={width},{height}")
    driver_path = CHROMEDRIVER if Path(CHROMEDRIVER).exists() else str(shutil.which("chromedriver"))
    return webdriver.Chrome(options=options, service=Service(driver_path))


@dataclass
class Server:
    base: str
    home: Path
    fake: FakeModel

    def api(self, method: str, path: str, user: str | None = None, **kw: Any) -> httpx.Response:
        headers = {"Authorization": f"Bearer {KEY}", **({"X-Hermes-User-Id": user} if user else {})}
        return httpx.request(method, self.base + path, headers=headers, timeout=30, **kw)

    def scoped_key(self, user: str) -> str:
        store = SQLiteStore(self.home / "state.db")
        try:
            return create_key(store, user)[0]
        finally:
            store.close()


@pytest.fixture
def chromium() -> None:
    """Skips the test when Chromium cannot run here; fails it instead under
    HERMES_REQUIRE_BROWSER=1 (CI), so the browser tests cannot vanish from a run unnoticed."""
    reason = chromium_missing()
    if reason and os.environ.get("HERMES_REQUIRE_BROWSER") == "1":
        pytest.fail(f"HERMES_REQUIRE_BROWSER=1 but {reason}")
    if reason:
        pytest.skip(reason)


@pytest.fixture
def server(
    chromium: None, fake: FakeModel, model_env: dict[str, str], home: Path
) -> Iterator[Server]:
    with hermes_serve(env={"HERMES_API_KEY": KEY}) as (_, base):
        yield Server(base, home, fake)


@pytest.fixture
def browser(chromium: None) -> Iterator[Any]:
    profile = tempfile.mkdtemp(prefix="hermes-ui-chrome-")
    driver = make_driver(profile)
    driver.set_page_load_timeout(30)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def wait_for(driver: Any, check: Callable[[Any], Any], what: str, timeout: float = 15) -> Any:
    from selenium.common.exceptions import TimeoutException
    from selenium.webdriver.support.ui import WebDriverWait

    try:
        return WebDriverWait(driver, timeout, poll_frequency=0.05).until(check)
    except TimeoutException:
        raise AssertionError(
            f"timed out waiting for {what}; page: {page_text(driver)[:2000]}"
        ) from None


def page_text(driver: Any) -> str:
    from selenium.webdriver.common.by import By

    text: str = driver.find_element(By.TAG_NAME, "body").text
    return text


def sign_in(driver: Any, base: str, key: str) -> None:
    from selenium.webdriver.common.by import By

    driver.get(base + "/ui/")
    field = wait_for(driver, lambda d: d.find_element(By.ID, "key"), "the sign-in form")
    field.send_keys(key)
    driver.find_element(By.ID, "signin").click()
    wait_for(driver, lambda d: d.find_elements(By.ID, "signout"), "signing in")


def screenshot(driver: Any, name: str) -> None:
    """docs/ui-<name>.png when HERMES_UI_SCREENSHOTS names a folder (e.g. docs)."""
    folder = os.environ.get("HERMES_UI_SCREENSHOTS")
    if folder:
        Path(folder).mkdir(parents=True, exist_ok=True)
        driver.save_screenshot(str(Path(folder) / f"ui-{name}.png"))


def css(driver: Any, selector: str) -> list[Any]:
    from selenium.webdriver.common.by import By

    found: list[Any] = driver.find_elements(By.CSS_SELECTOR, selector)
    return found


def text_of(driver: Any, selector: str) -> str:
    """The rendered text of every match, read in one script (no stale element mid-render)."""
    text: str = driver.execute_script(
        "return Array.from(document.querySelectorAll(arguments[0]))"
        ".map(e => e.innerText).join(' ')",
        selector,
    )
    return text
