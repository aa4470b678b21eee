"""`hermes serve` imports FastAPI with its OpenAPI models built at the document's first rendering
(hermes.server.lazy_openapi, cold start): the document is still served, complete, and the same
as one rendered by FastAPI imported as usual."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import httpx
import pytest

from .test_openapi_document import SPEC_ROUTES
from .test_serve import hermes_serve

APP = """
from fastapi import FastAPI, Query
from pydantic import BaseModel, Field


class Item(BaseModel):
    name: str = Field(description="what it is called")
    size: int | None = Field(default=None, ge=0)
    tags: list[str] = []


app = FastAPI(title="t")


@app.post("/items/{item_id}", tags=["items"])
async def put(item_id: int, item: Item, dry_run: bool = Query(False)) -> Item:
    return item


@app.get("/items", responses={404: {"description": "none yet"}})
async def listing(limit: int = Query(10, ge=1, le=100)) -> list[Item]:
    return []
"""

DEFERRED = f"""
import json
from hermes.server.lazy_openapi import import_fastapi

import_fastapi()
from fastapi.openapi.models import OpenAPI

deferred = not OpenAPI.__pydantic_complete__
{APP}
print(json.dumps({{"deferred": deferred, "document": app.openapi()}}))
"""


def _eager_document() -> dict[str, Any]:
    namespace: dict[str, Any] = {}
    exec(APP, namespace)  # this process imported FastAPI as usual
    document: dict[str, Any] = namespace["app"].openapi()
    return document


def test_the_document_is_the_same_with_deferred_models() -> None:
    run = subprocess.run(
        [sys.executable, "-c", DEFERRED], capture_output=True, text=True, timeout=60
    )
    assert run.returncode == 0, run.stderr
    out = json.loads(run.stdout)
    assert out["deferred"], "FastAPI's OpenAPI models were built at import"
    assert out["document"] == _eager_document()


@pytest.mark.usefixtures("model_env")
def test_hermes_serve_serves_the_whole_document() -> None:
    with hermes_serve() as (_, base):
        r = httpx.get(f"{base}/openapi.json", timeout=30)
    assert r.status_code == 200, r.text
    document = r.json()
    assert document["openapi"].startswith("3.")
    for path, methods in SPEC_ROUTES.items():
        assert methods <= set(document["paths"][path]), path
    assert document["components"]["schemas"]
