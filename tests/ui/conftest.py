"""Browser fixtures: a real `hermes serve` with a server key and the fake model, and headless
Chromium (Debian's chromium + chromium-driver) driven by Selenium: one per test worker, reset
between tests (`_Chromium`). Without Chromium the browser tests are skipped and say why."""

from __future__ import annotations

import os
import queue
import re
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from hermes.auth.keys import create_key
from hermes.store.sqlite import SQLiteStore
from hermes.testing.fake_model import FakeModel

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


@contextmanager
def serve_in_thread(timeout: float = 30) -> Iterator[str]:
    """`hermes serve`'s own entry point (`hermes.server.serve.run`, with the settings the
    command would load from this environment) on a thread of this test worker; yields its base
    URL once it listens, and stops it as SIGTERM does when the block ends.

    Why a thread, not a subprocess: a browser test's server otherwise costs a fresh
    interpreter's imports and the dashboard's first requests (more CPU than most browser
    tests' own work, on a suite bound by two cores). `hermes serve` as a command, in its own
    process, is tested in `tests/server/test_serve.py` and the other real-subprocess tests."""
    from hermes.config.settings import load_settings
    from hermes.server.serve import run

    settings = load_settings()
    lines: queue.Queue[str | None] = queue.Queue()
    stop = threading.Event()
    failed: list[BaseException] = []

    def serve() -> None:
        try:
            run(settings, "127.0.0.1", 0, announce=lines.put, stop_when=stop)
        except BaseException as exc:  # noqa: BLE001 (said by the waiting test)
            failed.append(exc)
        finally:
            lines.put(None)

    thread = threading.Thread(target=serve, name="hermes-serve", daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + timeout
        while True:
            line = lines.get(timeout=max(0.0, deadline - time.monotonic()))
            if line is None:
                raise AssertionError(f"the server ended before it listened: {failed!r}")
            if found := re.search(r"listening on (http://\S+)", line):
                break
        yield found.group(1)
    finally:
        stop.set()
        thread.join(30)
        assert not thread.is_alive(), "the server did not stop within 30 s"
    if failed:
        raise AssertionError(f"the server failed: {failed!r}")


@pytest.fixture
def server(
    chromium: None,
    fake: FakeModel,
    model_env: dict[str, str],
    home: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> Iterator[Server]:
    monkeypatch.setenv("HERMES_API_KEY", KEY)
    with serve_in_thread() as base:
        yield Server(base, home, fake)


class _Chromium:
    """This worker's one Chromium, started at its first browser test and reset between tests.

    Why one: a Chromium start costs more CPU (about 1.3 s) than most browser tests' own
    work, and on two cores the whole suite is CPU-bound. A test gets it as a new one would
    be: one window of 1280x900 on about:blank, no cookies (a cookie is sent to every port of
    127.0.0.1, so one test's sign-in would reach the next test's server), no storage or
    cache of the origin it used, no download folder, no device emulation. A Chromium that
    died is started again."""

    def __init__(self) -> None:
        self.driver: Any = None
        self.profile = ""

    def get(self) -> Any:
        if self.driver is not None and not self._alive():
            self.quit()
        if self.driver is None:
            self.profile = tempfile.mkdtemp(prefix="hermes-ui-chrome-")
            self.driver = make_driver(self.profile)
            self.driver.set_page_load_timeout(30)
        return self.driver

    def reset(self) -> None:
        driver = self.driver
        if driver is None or not self._alive():
            self.quit()
            return
        try:
            from selenium.common.exceptions import NoAlertPresentException

            try:
                driver.switch_to.alert.dismiss()
            except NoAlertPresentException:
                pass
            for handle in driver.window_handles[1:]:
                driver.switch_to.window(handle)
                driver.close()
            driver.switch_to.window(driver.window_handles[0])
            origin = driver.execute_script("return location.origin")
            driver.get("about:blank")
            if isinstance(origin, str) and origin.startswith("http"):
                driver.execute_cdp_cmd(
                    "Storage.clearDataForOrigin", {"origin": origin, "storageTypes": "all"}
                )
            driver.execute_cdp_cmd("Network.clearBrowserCookies", {})
            driver.execute_cdp_cmd("Network.clearBrowserCache", {})
            driver.execute_cdp_cmd("Browser.setDownloadBehavior", {"behavior": "default"})
            driver.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})
            driver.set_window_size(1280, 900)
        except Exception:  # anything left in a state not known here: a new Chromium next
            self.quit()

    def _alive(self) -> bool:
        try:
            self.driver.window_handles  # noqa: B018 (a round trip to the browser)
            return True
        except Exception:
            return False

    def quit(self) -> None:
        driver, self.driver = self.driver, None
        if driver is not None:
            try:
                driver.quit()
            except Exception:
                pass  # already gone
        if self.profile:
            shutil.rmtree(self.profile, ignore_errors=True)
            self.profile = ""


@pytest.fixture(scope="session")
def _chromium_of_this_worker() -> Iterator[_Chromium]:
    shared = _Chromium()
    try:
        yield shared
    finally:
        shared.quit()


@pytest.fixture
def browser(chromium: None, _chromium_of_this_worker: _Chromium) -> Iterator[Any]:
    try:
        yield _chromium_of_this_worker.get()
    finally:
        _chromium_of_this_worker.reset()


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
