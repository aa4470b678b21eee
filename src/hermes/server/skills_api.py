"""`/api/skills` and `/api/toolsets` (SPEC §13): the skill library over HTTP and what each
kind of caller is offered.

Listing is open to every caller (end users read skills too); one skill's text and every
change are the owner's (the default scope: an end user, by header or scoped key, gets 403).
A PUT goes through `skill_manage`'s own code (`hermes.skills.manage`): the same frontmatter
parsing, name rules and safety scan, the same history record.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from fastapi import APIRouter, Depends, Query, Request
from fastapi import Path as PathParam
from starlette.responses import JSONResponse

from hermes.memory.history import api_actor, history_for
from hermes.memory.scan import prepare
from hermes.runtime import Runtime
from hermes.server.deps import get_runtime, get_scope, require_auth
from hermes.server.errors import APIError
from hermes.skills import manage
from hermes.skills.library import Skill, SkillLibrary
from hermes.skills.store import can_write, library_for
from hermes.store.base import DEFAULT_SCOPE
from hermes.tools.toolsets import SURFACE_CRON, ToolGroups, select_toolset

router = APIRouter(tags=["skills"], dependencies=[Depends(require_auth)])

SkillName = PathParam(..., description="The skill's name (its folder).", examples=["git-rebase"])
SKILL_EXAMPLE = {
    "name": "git-rebase",
    "description": "Rebase a branch onto main safely",
    "category": "dev",
}
MAX_SKILL_BYTES = 256 * 1024


def _ok(example: dict[str, Any]) -> dict[int | str, dict[str, Any]]:
    return {200: {"content": {"application/json": {"example": example}}}}


async def require_owner(scope: str = Depends(get_scope)) -> str:
    if not can_write(scope):
        raise APIError(
            403,
            "Only the owner (the server key, no X-Hermes-User-Id) may read or change one "
            "skill's text; GET /api/skills lists them for everyone.",
            "permission_error",
            "owner_only",
        )
    return scope


def _summary(skill: Skill) -> dict[str, Any]:
    return {"name": skill.name, "description": skill.description, "category": skill.category}


def _detail(skill: Skill) -> dict[str, Any]:
    try:
        content = skill.path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError):
        content = None
    return {**_summary(skill), "content": content, "files": skill.files()}


def _find(library: SkillLibrary, name: str) -> Skill:
    skill = library.find(name)
    if skill is None:
        problem = library.problem_for(name)
        if problem is not None:
            raise APIError(
                500,
                f"The skill {name!r} is unreadable: {problem}.",
                code="skill_unreadable",
                param="name",
            )
        raise APIError(
            404,
            f"There is no skill named {name!r}; GET /api/skills lists them.",
            code="skill_not_found",
            param="name",
        )
    return skill


@router.get("/api/skills", summary="List skills", responses=_ok({"skills": [SKILL_EXAMPLE]}))
async def list_skills(runtime: Runtime = Depends(get_runtime)) -> dict[str, Any]:
    """Every readable skill: name, description, category."""
    library = library_for(runtime.settings)
    skills = await asyncio.to_thread(library.skills)
    return {"skills": [_summary(s) for s in sorted(skills, key=lambda s: s.name)]}


@router.get(
    "/api/skills/{name}",
    summary="Read one skill",
    dependencies=[Depends(require_owner)],
    responses=_ok({"skill": {**SKILL_EXAMPLE, "content": "---\nname: git-rebase\n…", "files": []}}),
)
async def get_skill(
    name: str = SkillName, runtime: Runtime = Depends(get_runtime)
) -> dict[str, Any]:
    """The skill's SKILL.md text and its supporting files' names."""
    library = library_for(runtime.settings)
    skill = await asyncio.to_thread(_find, library, name)
    return {"skill": await asyncio.to_thread(_detail, skill)}


@router.put(
    "/api/skills/{name}",
    summary="Create or replace a skill",
    dependencies=[Depends(require_owner)],
    openapi_extra={
        "requestBody": {
            "required": True,
            "content": {
                "application/json": {
                    "schema": {
                        "type": "object",
                        "properties": {"content": {"type": "string"}},
                        "required": ["content"],
                    }
                },
                "text/markdown": {
                    "schema": {"type": "string"},
                    "example": "---\nname: git-rebase\ndescription: Rebase a branch onto main "
                    "safely\n---\n1. git fetch\n2. git rebase origin/main\n",
                },
            },
        }
    },
    responses={
        **_ok({"skill": {**SKILL_EXAMPLE, "content": "…", "files": []}, "created": False}),
        400: {"description": "Bad frontmatter or name, or the safety scan refused the text."},
    },
)
async def put_skill(
    request: Request,
    name: str = SkillName,
    category: str | None = Query(None, max_length=64, description="For a new skill only."),
    runtime: Runtime = Depends(get_runtime),
) -> JSONResponse:
    """The body is the whole SKILL.md (YAML frontmatter `name`, `description`, then the
    body), or JSON `{"content": "<SKILL.md>"}` (what a browser's JSON client sends). A new
    name creates the skill (201), a known one replaces its text (200)."""
    raw = await request.body()
    if len(raw) > MAX_SKILL_BYTES:
        raise APIError(
            413, f"SKILL.md is limited to {MAX_SKILL_BYTES // 1024} KiB.", code="skill_too_large"
        )
    text = _skill_text(request, raw)
    key = getattr(request.state, "api_key", None)
    settings = runtime.settings
    options: dict[str, Any] = {
        "history": history_for(runtime.store, DEFAULT_SCOPE, settings.memory.history_retention),
        "actor": api_actor(key.label or key.id if key is not None else None),
    }

    def write() -> tuple[Skill, bool]:
        prepare(settings)  # the scan's meaning model, as the skill_manage tool does
        library = library_for(settings)
        if library.find(name) is not None:
            return manage.edit(library, name, text, **options), False
        return manage.create(library, name, text, category, **options), True

    try:
        skill, created = await asyncio.to_thread(write)
    except (manage.SkillWriteError, ValueError) as exc:
        raise APIError(400, _sentence(str(exc)), code="invalid_skill", param="body") from None
    found = await asyncio.to_thread(_find, library_for(settings), skill.name)
    body = {"skill": await asyncio.to_thread(_detail, found), "created": created}
    return JSONResponse(body, status_code=201 if created else 200)


@router.delete(
    "/api/skills/{name}",
    summary="Delete a skill",
    dependencies=[Depends(require_owner)],
    responses=_ok({"name": "git-rebase", "deleted": True}),
)
async def delete_skill(
    request: Request, name: str = SkillName, runtime: Runtime = Depends(get_runtime)
) -> dict[str, Any]:
    """The skill's folder with its supporting files (its history keeps the text)."""
    settings = runtime.settings
    library = library_for(settings)
    await asyncio.to_thread(_find, library, name)
    key = getattr(request.state, "api_key", None)
    history = history_for(runtime.store, DEFAULT_SCOPE, settings.memory.history_retention)
    actor = api_actor(key.label or key.id if key is not None else None)
    try:
        await asyncio.to_thread(manage.delete, library, name, history=history, actor=actor)
    except manage.SkillWriteError as exc:
        raise APIError(404, _sentence(str(exc)), code="skill_not_found", param="name") from None
    return {"name": name, "deleted": True}


def _skill_text(request: Request, raw: bytes) -> str:
    """SKILL.md from the body: the text itself, or `content` of a JSON object."""
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise APIError(
            400, "The body is not UTF-8 text; send the SKILL.md text.", code="invalid_body"
        ) from None
    kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if kind != "application/json":
        return text
    try:
        data = json.loads(text)
    except ValueError:
        data = None
    content = data.get("content") if isinstance(data, dict) else None
    if not isinstance(content, str):
        raise APIError(
            400,
            'A JSON body must be {"content": "<the SKILL.md text>"}; or send the text itself '
            "as text/markdown.",
            code="invalid_body",
            param="content",
        )
    return content


def _sentence(text: str) -> str:
    text = text[:1].upper() + text[1:]
    return text if text.endswith((".", "?", "!")) else text + "."


@router.get(
    "/api/toolsets",
    summary="What each kind of caller is offered",
    responses=_ok(
        {
            "toolsets": {
                "owner": ["memory", "terminal", "write_file"],
                "end_user": ["memory", "session_search", "skills_list"],
                "cron": ["session_search", "terminal"],
                "end_user_cron": ["session_search"],
            }
        }
    ),
)
async def toolsets(runtime: Runtime = Depends(get_runtime)) -> dict[str, Any]:
    """Tool names per caller: the owner (CLI, API without a user), an end user (API user or
    scoped key, non-owner gateway user), and scheduled runs of each."""
    full = runtime.agent.toolset
    groups = runtime.services.find(ToolGroups) or ToolGroups()
    settings = runtime.settings
    end_user = "user:someone"

    def names(scope: str, surface: str) -> list[str]:
        return sorted(select_toolset(settings, scope, surface, full, groups).names())

    return {
        "toolsets": {
            "owner": names(DEFAULT_SCOPE, "api"),
            "end_user": names(end_user, "api"),
            "cron": names(DEFAULT_SCOPE, SURFACE_CRON),
            "end_user_cron": names(end_user, SURFACE_CRON),
        }
    }
