"""A loopback stand-in for the Honcho v3 API (https://docs.honcho.dev, API reference), enough
for the official `honcho-ai` SDK's real HTTP client: workspaces, peers, sessions, messages,
peer context and search, peer sessions, conclusions (created, listed, deleted). Its "deriver" turns each message a peer
writes into one explicit conclusion about that peer, as Honcho's does (without a model).

`mode` scripts misbehaviour: "hang" never answers, "garbage" answers with bytes that are not
JSON."""

from __future__ import annotations

import asyncio
import itertools
from datetime import UTC, datetime
from typing import Any

from aiohttp import web

from tests.standins.standin import LoopbackServer, json_response

KEY = "hch-test-key-1234567890"


def _now() -> str:
    return datetime.now(UTC).isoformat()


def _page(items: list[dict[str, Any]], request: web.Request) -> dict[str, Any]:
    page = int(request.query.get("page", 1))
    size = int(request.query.get("size", 50))
    chunk = items[(page - 1) * size : page * size]
    pages = max(1, -(-len(items) // size))
    return {"items": chunk, "page": page, "size": size, "total": len(items), "pages": pages}


class HonchoAPI(LoopbackServer):
    def __init__(self) -> None:
        super().__init__()
        self.mode = "ok"
        self.peers: dict[str, dict[str, Any]] = {}
        self.sessions: dict[str, dict[str, Any]] = {}
        self.messages: list[dict[str, Any]] = []
        self.conclusions: list[dict[str, Any]] = []
        self.requests: list[tuple[str, str, Any]] = []  # method, path with query, body
        self._ids = itertools.count(1)
        self._release = asyncio.Event()

    def general_recalls(self, peer: str) -> int:
        """Context reads of `peer` without a search query (what a session end asks for)."""
        path = f"/peers/{peer}/context"
        return sum(
            1
            for method, where, _ in self.requests
            if method == "GET" and path in where and "search_query" not in where
        )

    def release(self) -> None:
        """End every hanging request (they then answer 503)."""
        self._release.set()

    def routes(self, app: web.Application) -> None:
        w = "/v3/workspaces"
        p = w + "/{ws}/peers/{peer}"
        s = w + "/{ws}/sessions/{session}"
        app.router.add_post(w, self._workspace)
        app.router.add_post(w + "/{ws}/peers", self._peer)
        app.router.add_get(p + "/context", self._context)
        app.router.add_post(p + "/search", self._search)
        app.router.add_post(p + "/sessions", self._peer_sessions)
        app.router.add_post(w + "/{ws}/sessions", self._session)
        app.router.add_post(s + "/peers", self._session_peers)
        app.router.add_post(s + "/messages", self._add_messages)
        app.router.add_delete(s, self._delete_session)
        app.router.add_post(w + "/{ws}/conclusions", self._create_conclusions)
        app.router.add_post(w + "/{ws}/conclusions/list", self._list_conclusions)
        app.router.add_delete(w + "/{ws}/conclusions/{id}", self._delete_conclusion)

    async def _enter(self, request: web.Request) -> tuple[web.Response | None, Any]:
        body = await request.json() if request.can_read_body else None
        self.requests.append((request.method, request.path_qs, body))
        if request.headers.get("Authorization") != f"Bearer {KEY}":
            return json_response({"detail": "Invalid API key"}, 401), body
        if self.mode == "hang":
            await self._release.wait()
            return json_response({"detail": "released"}, 503), body
        if self.mode == "garbage":
            return web.Response(
                text="<html>oops", status=200, content_type="application/json"
            ), body
        return None, body

    async def _workspace(self, request: web.Request) -> web.Response:
        early, body = await self._enter(request)
        return early or json_response({"id": body["id"], "metadata": {}, "created_at": _now()})

    async def _peer(self, request: web.Request) -> web.Response:
        early, body = await self._enter(request)
        if early:
            return early
        ws = request.match_info["ws"]
        peer = self.peers.setdefault(
            body["id"], {"id": body["id"], "workspace_id": ws, "created_at": _now(), "metadata": {}}
        )
        return json_response(peer)

    async def _session(self, request: web.Request) -> web.Response:
        early, body = await self._enter(request)
        if early:
            return early
        ws = request.match_info["ws"]
        session = self.sessions.setdefault(
            body["id"],
            {
                "id": body["id"],
                "workspace_id": ws,
                "is_active": True,
                "metadata": {},
                "created_at": _now(),
                "peers": set(),
            },
        )
        session["peers"].update((body.get("peers") or {}).keys())
        return json_response({k: v for k, v in session.items() if k != "peers"})

    async def _session_peers(self, request: web.Request) -> web.Response:
        early, body = await self._enter(request)
        if early:
            return early
        self.sessions[request.match_info["session"]]["peers"].update(body.keys())
        return json_response({})

    async def _add_messages(self, request: web.Request) -> web.Response:
        early, body = await self._enter(request)
        if early:
            return early
        ws, session = request.match_info["ws"], request.match_info["session"]
        made = []
        for item in body["messages"]:
            message = {
                "id": f"m{next(self._ids)}",
                "content": item["content"],
                "peer_id": item["peer_id"],
                "session_id": session,
                "workspace_id": ws,
                "metadata": {},
                "created_at": _now(),
                "token_count": len(item["content"].split()),
            }
            self.messages.append(message)
            self.sessions[session]["peers"].add(item["peer_id"])
            made.append(message)
            self.conclusions.append(  # the deriver, without a model
                {
                    "id": f"c{next(self._ids)}",
                    "content": f"{item['peer_id']} said: {item['content']}",
                    "observer_id": item["peer_id"],
                    "observed_id": item["peer_id"],
                    "session_id": session,
                    "created_at": _now(),
                }
            )
        return json_response(made)

    async def _context(self, request: web.Request) -> web.Response:
        early, _ = await self._enter(request)
        if early:
            return early
        peer = request.match_info["peer"]
        mine = [c["content"] for c in self.conclusions if c["observed_id"] == peer]
        query = set(request.query.get("search_query", "").lower().split())
        if query:
            mine = [c for c in mine if query & set(c.lower().split())] or mine
        top = int(request.query.get("search_top_k", 10))
        representation = "\n".join(f"- {c}" for c in mine[-top:])
        return json_response(
            {"peer_id": peer, "target_id": peer, "representation": representation, "peer_card": []}
        )

    async def _search(self, request: web.Request) -> web.Response:
        early, body = await self._enter(request)
        if early:
            return early
        peer = request.match_info["peer"]
        words = set(body["query"].lower().split())
        found = [
            m
            for m in self.messages
            if m["peer_id"] == peer and words & set(m["content"].lower().split())
        ]
        return json_response(found[: body.get("limit") or 10])

    async def _peer_sessions(self, request: web.Request) -> web.Response:
        early, _ = await self._enter(request)
        if early:
            return early
        peer = request.match_info["peer"]
        items = [
            {k: v for k, v in s.items() if k != "peers"}
            for s in self.sessions.values()
            if peer in s["peers"]
        ]
        return json_response(_page(items, request))

    async def _delete_session(self, request: web.Request) -> web.Response:
        early, _ = await self._enter(request)
        if early:
            return early
        session = request.match_info["session"]
        self.sessions.pop(session, None)
        self.messages = [m for m in self.messages if m["session_id"] != session]
        return json_response({})  # conclusions outlive their session, as at Honcho

    async def _create_conclusions(self, request: web.Request) -> web.Response:
        early, body = await self._enter(request)
        if early:
            return early
        made = [
            {
                "id": f"c{next(self._ids)}",
                "content": item["content"],
                "observer_id": item["observer_id"],
                "observed_id": item["observed_id"],
                "session_id": item.get("session_id"),
                "created_at": _now(),
            }
            for item in body["conclusions"]
        ]
        self.conclusions.extend(made)
        return json_response(made)

    async def _list_conclusions(self, request: web.Request) -> web.Response:
        early, body = await self._enter(request)
        if early:
            return early
        filters = (body or {}).get("filters") or {}
        items = [
            c
            for c in self.conclusions
            if all(c.get(k) == v for k, v in filters.items() if k in ("observer_id", "observed_id"))
        ]
        return json_response(_page(items, request))

    async def _delete_conclusion(self, request: web.Request) -> web.Response:
        early, _ = await self._enter(request)
        if early:
            return early
        self.conclusions = [c for c in self.conclusions if c["id"] != request.match_info["id"]]
        return json_response({})
