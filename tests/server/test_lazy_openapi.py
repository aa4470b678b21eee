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
import sys

v1 = "pydantic.v1" in sys.modules  # FastAPI's "is it a v1 model?" needs no import of it
print(json.dumps({{"deferred": deferred, "v1": v1, "document": app.openapi()}}))
"""

V1_REFUSED = """
from hermes.server.lazy_openapi import import_fastapi

import_fastapi()
from fastapi import FastAPI
from fastapi.exceptions import PydanticV1NotSupportedError
from pydantic.v1 import BaseModel


class Old(BaseModel):
    name: str


app = FastAPI()
try:

    @app.get("/old")
    async def old() -> Old:
        return Old(name="x")

except PydanticV1NotSupportedError:
    print("refused")
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
    assert not out["v1"], "pydantic.v1 was imported to check the routes' types"
    assert out["document"] == _eager_document()


def test_a_pydantic_v1_model_is_still_refused() -> None:
    run = subprocess.run(
        [sys.executable, "-c", V1_REFUSED], capture_output=True, text=True, timeout=60
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "refused"


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
