"""web_search against loopback stand-ins of SearXNG, Brave and Tavily (shaped after their
public JSON APIs), and web_extract of a loopback page (private addresses allowed explicitly)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

import pytest
from pydantic import SecretStr

from hermes.config.settings import Settings
from tests.tools.conftest import Tools

ARTICLE = (
    "<html><head><title>Hermes release notes</title><script>var tracking = 1;</script></head>"
    "<body><nav>Home | About</nav><article><h1>Hermes 2.0</h1>"
    + "<p>The agent now ships file, terminal and web tools with approvals. </p>" * 8
    + "</article><footer>copyright</footer></body></html>"
)


class _Handler(BaseHTTPRequestHandler):
    seen: list[dict[str, Any]]

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        return None

    def _send(
        self, status: int, body: bytes, kind: str, extra: dict[str, str] | None = None
    ) -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        for k, v in (extra or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        url = urlparse(self.path)
        query = parse_qs(url.query)
        self.seen.append({"path": url.path, "query": query, "headers": dict(self.headers)})
        if url.path == "/search" and query.get("format") == ["json"]:  # SearXNG
            results = [
                {
                    "title": f"Result <b>{n}</b>",
                    "url": f"https://ex.org/{n}",
                    "content": f"about {query['q'][0]} {n}",
                }
                for n in range(1, 8)
            ]
            self._send(
                200,
                json.dumps({"query": query["q"][0], "results": results}).encode(),
                "application/json",
            )
        elif url.path == "/res/v1/web/search":  # Brave
            if self.headers.get("X-Subscription-Token") != "brave-key-123":
                self._send(401, b"{}", "application/json")
                return
            web = {
                "results": [
                    {"title": "Brave hit", "url": "https://b.org", "description": "from brave"}
                ]
            }
            self._send(200, json.dumps({"web": web}).encode(), "application/json")
        elif url.path == "/article":
            self._send(200, ARTICLE.encode(), "text/html; charset=utf-8")
        elif url.path == "/moved":
            self._send(302, b"", "text/plain", {"Location": "/article"})
        elif url.path == "/big":
            self._send(200, b"x" * 200_000, "text/plain")
        elif url.path == "/image":
            self._send(200, b"\x89PNG....", "image/png")
        else:
            self._send(404, b"not here", "text/plain")

    def do_POST(self) -> None:  # Tavily
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length))
        self.seen.append({"path": self.path, "body": body, "headers": dict(self.headers)})
        if self.path != "/search" or self.headers.get("Authorization") != "Bearer tvly-key-123":
            self._send(401, b"{}", "application/json")
            return
        results = [
            {"title": "Tavily hit", "url": "https://t.org", "content": f"on {body['query']}"}
        ]
        self._send(200, json.dumps({"results": results}).encode(), "application/json")


@pytest.fixture
def site() -> Iterator[tuple[str, list[dict[str, Any]]]]:
    seen: list[dict[str, Any]] = []
    handler = type("Handler", (_Handler,), {"seen": seen})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", seen
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


async def test_search_through_searxng(tools: Tools, settings: Settings, site: tuple) -> None:
    base, seen = site
    settings.web.search.searxng_url = base
    out = await tools.text("web_search", query="hermes agent", limit=3)
    assert out.splitlines()[:3] == ["1. Result 1", "   https://ex.org/1", "   about hermes agent 1"]
    assert "4." not in out
    assert seen[0]["query"]["q"] == ["hermes agent"]


async def test_search_through_brave_and_tavily(
    tools: Tools, settings: Settings, site: tuple
) -> None:
    base, _ = site
    settings.web.search.backend = "brave"
    settings.web.search.api_base = f"{base}/res/v1"
    assert "key is set" in await tools.text("web_search", query="x")
    settings.web.search.brave_api_key = SecretStr("brave-key-123")
    assert "https://b.org" in await tools.text("web_search", query="x")

    settings.web.search.backend = "tavily"
    settings.web.search.api_base = base
    settings.web.search.tavily_api_key = SecretStr("tvly-key-123")
    assert "on y" in await tools.text("web_search", query="y")
    settings.web.search.tavily_api_key = SecretStr("tvly-wrong-000")
    failed = await tools("web_search", query="y")
    assert not failed.ok and "HTTP 401" in failed.text


async def test_search_without_a_backend_says_how_to_configure_one(tools: Tools) -> None:
    out = await tools("web_search", query="x")
    assert not out.ok and "web.search.searxng_url" in out.text


async def test_extract_reads_the_article_and_follows_redirects(
    tools: Tools, settings: Settings, site: tuple
) -> None:
    base, _ = site
    settings.web.allow_private = True  # the stand-in page lives on loopback
    out = await tools.text("web_extract", urls=[f"{base}/moved"])
    assert out.startswith("## Hermes release notes\n" + f"{base}/article")
    assert "ships file, terminal and web tools" in out
    assert "tracking" not in out


async def test_extract_refuses_private_addresses_by_default(tools: Tools, site: tuple) -> None:
    base, seen = site
    out = await tools.text("web_extract", urls=[f"{base}/article", "http://169.254.169.254/"])
    assert out.count("Refused") == 2 and "web.allow_private" in out
    assert seen == []  # nothing was contacted


async def test_extract_caps_size_and_refuses_non_text(
    tools: Tools, settings: Settings, site: tuple
) -> None:
    base, _ = site
    settings.web.allow_private = True
    settings.web.extract.max_bytes = 50_000
    settings.web.extract.max_chars = 1000
    out = await tools.text("web_extract", urls=[f"{base}/big", f"{base}/image", f"{base}/gone"])
    assert "cut at 1,000 characters of 50,000" in out
    assert "image/png, not a text page" in out
    assert "HTTP 404" in out
    too_many = await tools("web_extract", urls=[f"{base}/{n}" for n in range(6)])
    assert not too_many.ok and "at most 5" in too_many.text


def test_workdir_is_untouched_by_web_tools(workdir: Path) -> None:
    assert list(workdir.iterdir()) == []
