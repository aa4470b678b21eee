"""Dashboard page load times in headless Chromium against a real `hermes serve` (issue 37).

    python bench/ui.py [--rounds 5] [--screenshots docs]

A server with the fake model and some data (sessions, notes, their history); a signed-in
browser loads each screen as a fresh page (`/ui/#/<screen>`) and reads, from the page's own
Performance timeline, the first contentful paint and when the screen finished drawing its
data (the shell's `screen:<id>` mark, after every API call the screen makes). The target:
each under 200 ms on loopback. `--screenshots DIR` also saves DIR/ui-<screen>.png (desktop)
and DIR/ui-phone-<screen>.png (a 390-px-wide phone).
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from hermes.testing.fake_model import FakeModel, Text, ToolCalls

KEY = "bench-ui-server-key-0123456789"
SCREENS = ["status", "chat", "sessions", "memory"]
FLAGS = [
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
]


def start_server(home: Path, fake: FakeModel) -> tuple[subprocess.Popen[str], str]:
    env = {
        **os.environ,
        "HERMES_HOME": str(home),
        "HERMES_API_KEY": KEY,
        "OPENAI_BASE_URL": fake.base_url,
        "HERMES_MODEL": "fake-model",
        "HERMES_EMBEDDINGS": "off",
    }
    log = open(home / "serve.log", "w")  # noqa: SIM115 - lives as long as the server
    proc = subprocess.Popen(
        [sys.executable, "-m", "hermes", "serve", "--port", "0"],
        stderr=log,
        stdout=subprocess.DEVNULL,
        text=True,
        env=env,
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and proc.poll() is None:
        text = Path(log.name).read_text()
        if "listening on " in text:
            return proc, text.split("listening on ", 1)[1].split()[0]
        time.sleep(0.05)
    proc.kill()
    raise SystemExit(f"hermes serve did not start: {Path(log.name).read_text()}")


def seed(base: str, fake: FakeModel) -> None:
    """A dozen sessions, a tool call, notes written by a turn, an edit (history)."""
    auth = {"Authorization": f"Bearer {KEY}"}
    with httpx.Client(base_url=base, headers=auth, timeout=30) as client:
        fake.enqueue(
            ToolCalls([("memory", {"action": "add", "target": "user", "content": "Prefers tea"})]),
            Text("Noted: you prefer tea."),
        )
        client.post("/api/sessions/welcome/chat", json={"message": "I prefer tea"})
        fake.enqueue(ToolCalls([("terminal", {"command": "echo hi"})]), Text("It printed hi."))
        client.post("/api/sessions/tools-demo/chat", json={"message": "run echo hi"})
        fake.default = lambda body: Text(f"Answer {len(body['messages'])}: all good.")
        for i in range(10):
            client.post(f"/api/sessions/topic-{i}/chat", json={"message": f"Question {i}?"})
            client.patch(f"/api/sessions/topic-{i}", json={"title": f"Topic number {i}"})
        for note in ["Works on the Hermes project", "Deploys on Fridays are banned"]:
            client.post("/api/memory", json={"action": "add", "target": "memory", "content": note})
        client.post(
            "/api/memory",
            json={
                "action": "replace",
                "target": "user",
                "old_text": "Prefers tea",
                "content": "Prefers green tea",
            },
        )


def browser(width: int, height: int) -> tuple[Any, str]:
    profile = tempfile.mkdtemp(prefix="hermes-bench-ui-")
    options = webdriver.ChromeOptions()
    options.binary_location = shutil.which("chromium") or "/usr/bin/chromium"
    for flag in FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={profile}")
    options.add_argument(f"--window-size={width},{height}")
    driver_path = shutil.which("chromedriver") or "/usr/bin/chromedriver"
    return webdriver.Chrome(options=options, service=Service(driver_path)), profile


def sign_in(driver: Any, base: str) -> None:
    driver.get(base + "/ui/")
    wait = WebDriverWait(driver, 20, poll_frequency=0.02)
    wait.until(lambda d: d.find_elements(By.ID, "key"))[0].send_keys(KEY)
    driver.find_element(By.ID, "signin").click()
    wait.until(lambda d: d.find_elements(By.ID, "signout"))


def load(driver: Any, base: str, screen: str) -> tuple[float, float]:
    """(first contentful paint, screen drawn) in ms from the navigation's start."""
    driver.get(f"{base}/ui/?t={time.monotonic_ns()}#/{screen}")
    mark = f"screen:{screen}"
    script = "return performance.getEntriesByName(arguments[0]).map(e => e.startTime)[0]"
    drawn = WebDriverWait(driver, 20, poll_frequency=0.01).until(
        lambda d: d.execute_script(script, mark)
    )
    fcp = driver.execute_script(
        "const p = performance.getEntriesByName('first-contentful-paint')[0];"
        "return p ? p.startTime : null"
    )
    return float(fcp or 0.0), float(drawn)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--screenshots", type=Path, default=None)
    args = parser.parse_args()
    home = Path(tempfile.mkdtemp(prefix="hermes-bench-ui-home-"))
    with FakeModel() as fake:
        proc, base = start_server(home, fake)
        try:
            seed(base, fake)
            driver, profile = browser(1280, 900)
            try:
                sign_in(driver, base)
                for screen in SCREENS:
                    load(driver, base, screen)  # warm: the server's first request, caches
                print(f"{'screen':<10} {'FCP p50':>8} {'drawn p50':>10} {'drawn max':>10}  (ms)")
                for screen in SCREENS:
                    runs = [load(driver, base, screen) for _ in range(args.rounds)]
                    fcp = statistics.median(r[0] for r in runs)
                    drawn = [r[1] for r in runs]
                    print(
                        f"{screen:<10} {fcp:>8.0f} {statistics.median(drawn):>10.0f} "
                        f"{max(drawn):>10.0f}"
                    )
                if args.screenshots:
                    shoot(driver, base, args.screenshots, "")
            finally:
                driver.quit()
                shutil.rmtree(profile, ignore_errors=True)
            if args.screenshots:
                phone, profile = browser(390, 844)
                try:
                    sign_in(phone, base)
                    shoot(phone, base, args.screenshots, "phone-", ["chat", "memory"])
                finally:
                    phone.quit()
                    shutil.rmtree(profile, ignore_errors=True)
        finally:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:  # a known shutdown hang after turns: not ours
                print("hermes serve did not stop within 15 s of SIGTERM; killed", file=sys.stderr)
                proc.kill()
                proc.wait()
            shutil.rmtree(home, ignore_errors=True)


def drawn(mark: str) -> Callable[[Any], Any]:
    script = "return performance.getEntriesByName(arguments[0]).length"
    return lambda driver: driver.execute_script(script, mark)


def shoot(
    driver: Any, base: str, folder: Path, prefix: str, screens: list[str] | None = None
) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for screen in screens or SCREENS:
        target = "chat/tools-demo" if screen == "chat" else screen
        driver.get(f"{base}/ui/?t={time.monotonic_ns()}#/{target}")
        WebDriverWait(driver, 20).until(drawn(f"screen:{screen}"))
        driver.save_screenshot(str(folder / f"ui-{prefix}{screen}.png"))


if __name__ == "__main__":
    main()
