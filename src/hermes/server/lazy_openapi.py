"""FastAPI imported with its OpenAPI models built when the document is first asked for.

`import fastapi` defines ~50 pydantic models describing an OpenAPI document
(`fastapi.openapi.models`) and builds their validators and serializers at once: about a third
of FastAPI's import, on the path of every `hermes serve` start, although they are used only
to render `/openapi.json`. pydantic's `defer_build` postpones a model's build to its first use;
a model takes its base's config, so the models defined while `BaseModel`'s config asks for it
are deferred (for good) and every model defined after is built as usual. The document is the
same; its first rendering builds them (tens of milliseconds, once).

FastAPI also asks of every route's parameter and response type whether it is a `pydantic.v1`
model, and answers by importing `pydantic.v1` (~40 ms, a whole second pydantic) the first
time. No class can be a `pydantic.v1` model before that module is imported, so the check is
answered "no" without importing it while it is not; once anything imports it, FastAPI's own
check runs as before (and refuses a v1 model as it always did).
"""

from __future__ import annotations

import sys
import threading

_lock = threading.Lock()


def import_fastapi() -> None:
    """Import FastAPI, deferring its OpenAPI models; a no-op once FastAPI is imported. Call it
    before any other thread defines pydantic models (those would be deferred too: harmless,
    they are built at their first use instead)."""
    if "fastapi" in sys.modules:
        return
    from pydantic import BaseModel

    with _lock:
        config = BaseModel.model_config
        if "defer_build" in config:  # someone chose already: leave it to them
            import fastapi  # noqa: F401

            return
        config["defer_build"] = True
        try:
            import fastapi  # noqa: F401
        finally:
            del config["defer_build"]
        _check_v1_without_importing_it()


def _check_v1_without_importing_it() -> None:
    try:
        from fastapi._compat import shared
    except ImportError:  # another FastAPI: its own check, as it is
        return
    check = getattr(shared, "is_pydantic_v1_model_class", None)
    if check is None or getattr(check, "_hermes_lazy", False):
        return

    def is_pydantic_v1_model_class(cls: object) -> bool:
        return "pydantic.v1" in sys.modules and bool(check(cls))

    is_pydantic_v1_model_class._hermes_lazy = True  # type: ignore[attr-defined]
    shared.is_pydantic_v1_model_class = is_pydantic_v1_model_class
