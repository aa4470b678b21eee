"""The three skill tools (names are the contract): `skills_list`, `skill_view`, `skill_manage`."""

from __future__ import annotations

from typing import Any, Literal

from hermes.memory.history import history_for, tool_actor
from hermes.memory.scan import prepare
from hermes.skills import manage
from hermes.skills.library import SkillLibrary, confined
from hermes.skills.store import can_write, library_for
from hermes.tools.registry import ToolContext, ToolError, tool

MAX_VIEW_CHARS = 40_000


def _library(ctx: ToolContext) -> SkillLibrary:
    return library_for(ctx.settings)


@tool(name="skills_list")
def skills_list(ctx: ToolContext, category: str | None = None) -> dict[str, Any]:
    """List installed skills (name, description, category): all, or one category.

    Args:
        category: only this category.
    """
    scan = _library(ctx).scan()
    skills = [
        {"name": s.name, "description": s.description, "category": s.category}
        for s in scan.skills
        if category is None or s.category == category
    ]
    result: dict[str, Any] = {"skills": skills, "count": len(skills)}
    if scan.problems:
        result["unreadable"] = [str(p) for p in scan.problems[:10]]
    return result


@tool(name="skill_view")
def skill_view(ctx: ToolContext, name: str, file_path: str | None = None) -> dict[str, Any]:
    """Load a skill: its full SKILL.md (instructions) and the list of its files, or one of those files.

    Args:
        name: the skill's name (or category/name).
        file_path: a file inside the skill, e.g. references/api.md; omit for SKILL.md.
    """
    library = _library(ctx)
    skill = library.find(name)
    if skill is None:
        problem = library.problem_for(name)
        if problem is not None:
            raise ToolError(f"the skill {name!r} cannot be read: {problem}")
        raise ToolError(f"there is no skill named {name!r}; skills_list shows the installed ones")
    if file_path is None:
        return {
            "name": skill.name,
            "category": skill.category,
            "description": skill.description,
            "version": skill.version,
            "content": skill.path.read_text(encoding="utf-8-sig")[:MAX_VIEW_CHARS],
            "files": skill.files(),
        }
    try:
        target = confined(skill.directory, file_path)
    except ValueError as exc:
        raise ToolError(str(exc)) from None
    if not target.is_file():
        raise ToolError(f"{file_path} is not a file of skill {name!r}; it has {skill.files()}")
    try:
        content = target.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise ToolError(f"{file_path} is a binary file; it cannot be shown as text") from None
    return {"name": skill.name, "file_path": file_path, "content": content[:MAX_VIEW_CHARS]}


@tool(name="skill_manage")
def skill_manage(
    ctx: ToolContext,
    action: Literal["create", "patch", "edit", "delete", "write_file", "remove_file"],
    name: str,
    content: str | None = None,
    category: str | None = None,
    old_string: str | None = None,
    new_string: str | None = None,
    file_path: str | None = None,
    file_content: str | None = None,
) -> dict[str, Any]:
    """Create or improve a skill: a reusable procedure saved as SKILL.md (YAML frontmatter with name and a one-line description, then Markdown sections When to Use, Procedure, Pitfalls, Verification). Save one after a many-step task or a fix found after errors; patch one that proved wrong (patch over edit).

    Args:
        name: the skill's name, a lowercase slug such as deploy-staging.
        content: the whole SKILL.md (create; edit replaces it).
        category: category folder for create, e.g. devops.
        old_string: exact text to replace (patch); must occur once.
        new_string: the replacement text (patch).
        file_path: a file under references/, templates/, scripts/ or assets/ (write_file, remove_file, patch).
        file_content: the file's content for write_file.
    """
    if not can_write(ctx.scope):
        raise ToolError(
            "skills belong to the owner of this Hermes; this conversation can read them but "
            "not change them"
        )
    library = _library(ctx)
    if action in ("create", "patch", "edit", "write_file"):
        prepare(ctx.settings)  # the safety scan's meaning stage, once per process
    try:
        return _apply(
            library,
            _recording(ctx, action, name, old_string),
            action,
            name,
            content,
            category,
            old_string,
            new_string,
            file_path,
            file_content,
        )
    except manage.SkillWriteError as exc:
        raise ToolError(str(exc)) from None


def _need(value: str | None, what: str, action: str) -> str:
    if value is None:
        raise manage.SkillWriteError(f"{action} needs `{what}`")
    return value


def _recording(ctx: ToolContext, action: str, name: str, old_string: str | None) -> dict[str, Any]:
    """How `manage` records this call's SKILL.md change: the owner's history, and who."""
    history = history_for(ctx.store, ctx.scope, ctx.settings.memory.history_retention)
    what = f"{action} {name}" + (f": {old_string[:200]!r}" if old_string else "")
    why = f"{ctx.reason.strip()} — {what}" if ctx.reason and ctx.reason.strip() else what
    return {"history": history, "actor": tool_actor(ctx.platform, ctx.session_id, ctx.turn, why)}


def _apply(
    library: SkillLibrary,
    rec: dict[str, Any],
    action: str,
    name: str,
    content: str | None,
    category: str | None,
    old_string: str | None,
    new_string: str | None,
    file_path: str | None,
    file_content: str | None,
) -> dict[str, Any]:
    if action == "create":
        skill = manage.create(library, name, _need(content, "content", action), category, **rec)
        return {
            "success": True,
            "message": f"Skill {skill.name!r} created.",
            "path": str(skill.path),
        }
    if action == "edit":
        skill = manage.edit(library, name, _need(content, "content", action), **rec)
        return {"success": True, "message": f"Skill {skill.name!r} replaced."}
    if action == "patch":
        where = manage.patch(
            library,
            name,
            _need(old_string, "old_string", action),
            _need(new_string, "new_string", action),
            file_path,
            **rec,
        )
        return {"success": True, "message": f"Skill {name!r} patched ({where})."}
    if action == "delete":
        manage.delete(library, name, **rec)
        return {"success": True, "message": f"Skill {name!r} deleted."}
    if action == "write_file":
        where = manage.write_file(
            library,
            name,
            _need(file_path, "file_path", action),
            _need(file_content, "file_content", action),
        )
        return {"success": True, "message": f"Wrote {where} in skill {name!r}."}
    where = manage.remove_file(library, name, _need(file_path, "file_path", action))
    return {"success": True, "message": f"Removed {where} from skill {name!r}."}
