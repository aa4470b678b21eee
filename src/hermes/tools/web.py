"""`web_search` through the configured backend (SearXNG JSON, Brave, Tavily) and `web_extract`,
which fetches pages as readable text (trafilatura). Pages are fetched only from public
addresses (`hermes.netguard`, the check cron webhooks use) unless `web.allow_private: true`;
every fetch is capped in bytes, characters and seconds."""

from __future__ import annotations

import asyncio
import html
import re
from typing import TYPE_CHECKING, Any

from hermes import tls
from hermes.config.settings import Settings, WebSearchSettings
from hermes.netguard import DestinationRefused, pin_destination
from hermes.tools.registry import ToolContext, ToolError, tool

if TYPE_CHECKING:
    import httpx

BRAVE_API = "https://api.search.brave.com/res/v1"
TAVILY_API = "https://api.tavily.com"
MAX_URLS = 5
MAX_REDIRECTS = 5
TOTAL_CHARS = 40_000
SNIPPET_CHARS = 300
USER_AGENT = "Mozilla/5.0 (compatible; Hermes-Agent; +https://github.com/)"
_TEXTUAL = ("text/", "application/json", "application/xml", "application/xhtml", "+xml", "+json")
_TITLE = re.compile(r"<title[^>]*>(.*?)</title>", re.IGNORECASE | re.DOTALL)


# ---------------------------------------------------------------------- search


def backend_of(search: WebSearchSettings) -> str | None:
    """The configured backend, or the first one whose URL / key is set."""
    if search.backend:
        return search.backend
    if search.searxng_url:
        return "searxng"
    if search.brave_api_key:
        return "brave"
    if search.tavily_api_key:
        return "tavily"
    return None


def _secret(value: Any, name: str, backend: str) -> str:
    if value is None or not value.get_secret_value():
        raise ToolError(
            f"web search uses {backend}, but no key is set: put {name} in $HERMES_HOME/.env"
        )
    return str(value.get_secret_value())


async def _searxng(client: httpx.AsyncClient, s: WebSearchSettings, query: str) -> list[dict]:
    if not s.searxng_url:
        raise ToolError("web.search.backend is searxng but web.search.searxng_url is not set")
    base = s.searxng_url.rstrip("/")
    response = await client.get(f"{base}/search", params={"q": query, "format": "json"})
    response.raise_for_status()
    return [
        {"title": r.get("title"), "url": r.get("url"), "snippet": r.get("content")}
        for r in response.json().get("results") or []
    ]


async def _brave(client: httpx.AsyncClient, s: WebSearchSettings, query: str) -> list[dict]:
    key = _secret(s.brave_api_key, "BRAVE_API_KEY", "brave")
    base = (s.api_base or BRAVE_API).rstrip("/")
    response = await client.get(
        f"{base}/web/search",
        params={"q": query, "count": s.max_results},
        headers={"X-Subscription-Token": key, "Accept": "application/json"},
    )
    response.raise_for_status()
    results = (response.json().get("web") or {}).get("results") or []
    return [
        {"title": r.get("title"), "url": r.get("url"), "snippet": r.get("description")}
        for r in results
    ]


async def _tavily(client: httpx.AsyncClient, s: WebSearchSettings, query: str) -> list[dict]:
    key = _secret(s.tavily_api_key, "TAVILY_API_KEY", "tavily")
    base = (s.api_base or TAVILY_API).rstrip("/")
    response = await client.post(
        f"{base}/search",
        json={"query": query, "max_results": s.max_results},
        headers={"Authorization": f"Bearer {key}"},
    )
    response.raise_for_status()
    return [
        {"title": r.get("title"), "url": r.get("url"), "snippet": r.get("content")}
        for r in response.json().get("results") or []
    ]


_BACKENDS = {"searxng": _searxng, "brave": _brave, "tavily": _tavily}


def _clean(text: Any, limit: int) -> str:
    flat = " ".join(re.sub(r"<[^>]+>", "", html.unescape(str(text or ""))).split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


@tool
async def web_search(ctx: ToolContext, query: str, limit: int = 5) -> str:
    """Search the web; returns titles, URLs and snippets (read pages with web_extract).

    Args:
        query: What to search for.
        limit: Maximum results.
    """
    import httpx  # here, not at import: it pulls rich and click (cold start)

    s = ctx.settings.web.search
    backend = backend_of(s)
    if backend is None:
        raise ToolError(
            "web search is not configured: set web.search.searxng_url (SearXNG), or "
            "BRAVE_API_KEY / TAVILY_API_KEY in $HERMES_HOME/.env"
        )
    if not query.strip():
        raise ToolError("the query is empty")
    # the backend is the operator's own choice (often SearXNG on localhost): not SSRF-checked
    async with httpx.AsyncClient(
        verify=tls.httpx_context(), timeout=s.timeout, trust_env=False
    ) as client:
        try:
            results = await _BACKENDS[backend](client, s, query.strip())
        except httpx.HTTPStatusError as exc:
            raise ToolError(
                f"the {backend} search backend answered HTTP {exc.response.status_code}"
            ) from None
        except (httpx.HTTPError, ValueError) as exc:
            raise ToolError(f"the {backend} search backend failed: {type(exc).__name__}") from None
    results = [r for r in results if r.get("url")][: max(1, min(limit, s.max_results))]
    if not results:
        return f"No results for {query!r}."
    return "\n".join(
        f"{n}. {_clean(r['title'], 200) or '(untitled)'}\n   {r['url']}\n"
        f"   {_clean(r.get('snippet'), SNIPPET_CHARS)}"
        for n, r in enumerate(results, start=1)
    )


# ---------------------------------------------------------------------- extract


async def _get_capped(
    client: httpx.AsyncClient, settings: Settings, url: str
) -> tuple[str, str, bytes]:
    """GET with redirects followed by hand (each hop checked); returns (final url,
    content-type, body up to max_bytes)."""
    import httpx

    web = settings.web
    for _ in range(MAX_REDIRECTS + 1):
        target = await pin_destination(
            url, allow_private=web.allow_private, allow_setting="web.allow_private"
        )
        request = client.build_request(
            "GET",
            target.urls[0],
            headers={"Host": target.host_header, "User-Agent": USER_AGENT},
            extensions={"sni_hostname": target.sni_hostname},
        )
        response = await client.send(request, stream=True)
        try:
            if response.is_redirect and "location" in response.headers:
                url = str(httpx.URL(url).join(response.headers["location"]))
                continue
            if response.status_code >= 400:
                raise ToolError(f"{url} answered HTTP {response.status_code}")
            body = bytearray()
            async for chunk in response.aiter_bytes():
                body += chunk
                if len(body) >= web.extract.max_bytes:
                    break
            cut = bytes(body[: web.extract.max_bytes])
            return url, response.headers.get("content-type", ""), cut
        finally:
            await response.aclose()
    raise ToolError(f"{url} redirected more than {MAX_REDIRECTS} times")


def _readable(raw: bytes, content_type: str, url: str) -> tuple[str, str]:
    """(title, text) of a fetched document."""
    kind = content_type.split(";")[0].strip().lower()
    text = raw.decode("utf-8", errors="replace")
    if kind and not any(marker in kind for marker in _TEXTUAL):
        raise ToolError(f"{url} is {kind}, not a text page; web_extract reads HTML and text only")
    if "html" not in kind and not text.lstrip()[:200].lower().startswith(("<!doctype", "<html")):
        return "", text
    import trafilatura  # heavy: loaded on first use

    match = _TITLE.search(text)
    title = _clean(match.group(1), 200) if match else ""
    extracted = trafilatura.extract(
        text, url=url, output_format="markdown", include_comments=False, favor_recall=True
    )
    if not extracted:
        extracted = _clean(re.sub(r"(?is)<(script|style)[^>]*>.*?</\1>", " ", text), 10**9)
    return title, extracted


async def _extract_one(client: httpx.AsyncClient, settings: Settings, url: str, cap: int) -> str:
    import httpx

    try:
        async with asyncio.timeout(settings.web.extract.timeout):
            final, kind, raw = await _get_capped(client, settings, url)
        title, text = await asyncio.to_thread(_readable, raw, kind, final)
    except DestinationRefused as exc:
        return f"## {url}\nRefused: {exc}"
    except ToolError as exc:
        return f"## {url}\nError: {exc}"
    except TimeoutError:
        return f"## {url}\nError: no answer within {settings.web.extract.timeout:g}s"
    except httpx.HTTPError as exc:
        return f"## {url}\nError: could not fetch it ({type(exc).__name__})"
    text = text.strip() or "(no readable text)"
    if len(text) > cap:
        text = text[:cap] + f"\n[... cut at {cap:,} characters of {len(text):,}]"
    heading = f"## {title}\n{final}" if title else f"## {final}"
    return f"{heading}\n\n{text}"


@tool
async def web_extract(ctx: ToolContext, urls: list[str]) -> str:
    """Fetch web pages and return their readable text.

    Args:
        urls: Up to 5 http(s) URLs.
    """
    import httpx

    wanted = list(dict.fromkeys(u.strip() for u in urls if u.strip()))
    if not wanted:
        raise ToolError("give at least one URL")
    if len(wanted) > MAX_URLS:
        raise ToolError(f"{len(wanted)} URLs given; at most {MAX_URLS} per call")
    settings = ctx.settings
    cap = min(settings.web.extract.max_chars, TOTAL_CHARS // len(wanted))
    timeout = httpx.Timeout(settings.web.extract.timeout)
    async with httpx.AsyncClient(
        verify=tls.httpx_context(), timeout=timeout, trust_env=False, follow_redirects=False
    ) as c:
        pages = await asyncio.gather(*(_extract_one(c, settings, u, cap) for u in wanted))
    return "\n\n".join(pages)
