"""The skills part: the index prompt block, the three skill tools, the after-turn skill review
and `hermes skills …`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from hermes.plugins import Registry

if TYPE_CHECKING:
    from hermes.runtime import Runtime


def _cli() -> Any:
    from hermes.skills.cli import app

    return app


async def _health(runtime: Runtime) -> dict[str, Any]:
    import asyncio

    from hermes.skills.store import library_for

    if not runtime.settings.skills.enabled:
        return {"status": "off"}
    scan = await asyncio.to_thread(lambda: library_for(runtime.settings).scan())
    report: dict[str, Any] = {"status": "ok", "skills": len(scan.skills)}
    if scan.problems:
        report["unreadable"] = len(scan.problems)
    return report


def register(hermes: Registry) -> None:
    from hermes.skills.index import skills_block
    from hermes.skills.invoke import SkillInvocations
    from hermes.skills.review import SkillsProvider
    from hermes.skills.store import SkillSharing
    from hermes.skills.tools import skill_manage, skill_view, skills_list

    def on(settings: Any) -> bool:
        return bool(settings.skills.enabled)

    for t in (skills_list, skill_view, skill_manage):
        hermes.tool(t, group="skills", enabled=on)
    hermes.prompt_block(skills_block)
    hermes.memory_provider(SkillsProvider)
    hermes.component(lambda runtime: SkillInvocations(runtime.settings))
    hermes.component(SkillSharing)
    hermes.command("skills", _cli)
    hermes.health("skills", _health)
