"""A loopback stand-in for Supermemory's namespace API (https://supermemory.ai/docs, API
reference), enough for the official `supermemory` SDK's real HTTP client: add a document,
search, profile, delete a namespace. Its extraction learns one memory from each `user:` line
of a document (Supermemory's does this with a model).

`mode`: "hang" never answers, "garbage" answers with bytes that are not JSON."""

from __future__ import annotations

import asyncio
import itertools
from datetime import UTC, datetime
from typing import Any

from aiohttp import web

from tests.standins.standin import LoopbackServer, json_response

KEY = "sm-test-key-1234567890"


def _now() -> str:
    return datetime.now(UTC).isoformat()


class SupermemoryAPI(LoopbackServer):
    def __init__(self) -> None:
        super().__init__()
        self.mode = "ok"
        self.documents: dict[str, list[dict[str, Any]]] = {}
        self.memories: dict[str, list[dict[str, Any]]] = {}
        self._ids = itertools.count(1)
        self._release = asyncio.Event()

    def release(self) -> None:
        self._release.set()

    def routes(self, app: web.Application) -> None:
        app.router.add_post("/ns/{ns}/document", self._add)
        app.router.add_post("/ns/{ns}/search", self._search)
        app.router.add_post("/ns/{ns}/profile", self._profile)
        app.router.add_delete("/ns/{ns}", self._delete)

    async def _enter(self, request: web.Request) -> tuple[web.Response | None, Any]:
        body = await request.json() if request.can_read_body else None
        self.calls.append(f"{request.method} {request.path}")
        if request.headers.get("Authorization") != f"Bearer {KEY}":
            return json_response({"error": "Unauthorized"}, 401), body
        if self.mode == "hang":
            await self._release.wait()
            return json_response({"error": "released"}, 503), body
        if self.mode == "garbage":
            return web.Response(text="}{", status=200, content_type="application/json"), body
        return None, body

    def _memory(self, namespace: str, text: str) -> dict[str, Any]:
        return {
            "id": f"mem{next(self._ids)}",
            "memory": text,
            "metadata": {},
            "similarity": 0.9,
            "isLatest": True,
            "isInference": False,
            "system": {"createdAt": _now(), "updatedAt": _now()},
        }

    async def _add(self, request: web.Request) -> web.Response:
        early, body = await self._enter(request)
        if early:
            return early
        ns = request.match_info["ns"]
        doc_id = body.get("id") or f"doc{next(self._ids)}"
        self.documents.setdefault(ns, []).append({"id": doc_id, **body})
        for line in body["content"].splitlines():
            if line.startswith("user: "):
                learned = self._memory(ns, "The user said: " + line[len("user: ") :])
                self.memories.setdefault(ns, []).append(learned)
        return json_response({"id": doc_id, "status": "queued"})

    async def _search(self, request: web.Request) -> web.Response:
        early, body = await self._enter(request)
        if early:
            return early
        words = set(body["query"].lower().split())
        found = [
            m
            for m in self.memories.get(request.match_info["ns"], [])
            if words & set(m["memory"].lower().split())
        ]
        return json_response({"results": found[: body.get("limit") or 10], "searchTime": 1.0})

    async def _profile(self, request: web.Request) -> web.Response:
        early, _ = await self._enter(request)
        if early:
            return early
        learned = self.memories.get(request.match_info["ns"], [])
        facts = [{"id": m["id"], "memory": m["memory"]} for m in learned[:3]]
        return json_response({"profile": {"static": facts, "dynamic": [], "buckets": {}}})

    async def _delete(self, request: web.Request) -> web.Response:
        early, _ = await self._enter(request)
        if early:
            return early
        ns = request.match_info["ns"]
        if ns not in self.documents:
            return json_response({"error": "Namespace not found"}, 404)
        documents = self.documents.pop(ns)
        memories = self.memories.pop(ns, [])
        return json_response(
            {
                "status": "deleted",
                "namespace": ns,
                "deletedDocumentsCount": len(documents),
                "deletedMemoriesCount": len(memories),
            }
        )
