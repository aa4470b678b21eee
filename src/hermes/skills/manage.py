"""Writing skills: create, patch, edit, delete and supporting files, for the agent
(`skill_manage`) and for people (`hermes skills install|remove`).

Every write is scanned like a memory note (a skill is re-read into future prompts, so a
poisoned one would steer every later session), checked to still parse, written atomically,
and serialised across processes by a lock file in the skills directory. With a shared store every
write is then published to it for the other replicas (`skills.shared`). Each change to a
SKILL.md is recorded as a version (`hermes memory log --target skill:NAME`) when the caller
passes the owner's `History` and says who it is.
"""

from __future__ import annotations

import contextlib
import shutil
from collections.abc import Iterator
from pathlib import Path

from hermes.errors import HermesError
from hermes.fileio import atomic_write, file_lock
from hermes.memory.history import SKILL_PREFIX, UNKNOWN, Actor, History
from hermes.memory.scan import describe, scan_text
from hermes.skills.library import (
    CATEGORY_PATTERN,
    NAME_PATTERN,
    SKILL_FILE,
    SUPPORT_DIRS,
    Skill,
    SkillFormatError,
    SkillLibrary,
    confined,
    parse_skill,
)

MAX_FILE_CHARS = 100_000


class SkillWriteError(HermesError, ValueError):
    """A write was refused; the message says why and what to do instead."""


@contextlib.contextmanager
def locked(root: Path) -> Iterator[None]:
    """One writer at a time over the whole library, also across threads and processes."""
    with file_lock(root / ".lock"):
        yield


def check_safe(text: str, what: str) -> None:
    threats = scan_text(text)
    if threats:
        raise SkillWriteError(f"{what} was refused by the safety scan: {describe(threats)}")


def check_skill_text(text: str, path: Path, name: str | None = None) -> Skill:
    """Parse and scan a whole SKILL.md before it is written."""
    try:
        skill = parse_skill(text, path)
    except SkillFormatError as exc:
        raise SkillWriteError(f"SKILL.md line {exc.line}: {exc.message}") from None
    if name is not None and skill.name != name:
        raise SkillWriteError(
            f"the frontmatter says name: {skill.name!r} but the skill is {name!r}; make them match"
        )
    check_safe(text, f"SKILL.md of {skill.name!r}")
    return skill


def _check_name(name: str) -> str:
    name = name.strip()
    if not NAME_PATTERN.match(name):
        raise SkillWriteError(
            f"{name!r} is not a skill name: use 1-64 lowercase letters, digits, '.', '_' or '-'"
        )
    return name


def _existing(library: SkillLibrary, name: str) -> Skill:
    skill = library.find(name)
    if skill is None:
        problem = library.problem_for(name)
        if problem is not None:
            raise SkillWriteError(f"the skill {name!r} is unreadable: {problem}")
        raise SkillWriteError(f"there is no skill named {name!r}; skills_list shows them")
    return skill


def _record(history: History | None, name: str, before: str, after: str, actor: Actor) -> None:
    if history is not None:
        history.record(SKILL_PREFIX + name, before, after, actor)


def _text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError):
        return ""


def create(
    library: SkillLibrary,
    name: str,
    content: str,
    category: str | None = None,
    *,
    history: History | None = None,
    actor: Actor = UNKNOWN,
) -> Skill:
    name = _check_name(name)
    if category is not None and not CATEGORY_PATTERN.match(category):
        raise SkillWriteError(f"{category!r} is not a category name (lowercase slug)")
    directory = library.directory_for(name, category)
    skill = check_skill_text(content, directory / SKILL_FILE, name)
    with locked(library.root):
        if library.find(name) is not None or directory.exists():
            raise SkillWriteError(
                f"a skill named {name!r} already exists; patch or edit it instead"
            )
        atomic_write(directory / SKILL_FILE, content)
        library.changed(directory)
        _record(history, skill.name, "", content, actor)
    return skill


def edit(
    library: SkillLibrary,
    name: str,
    content: str,
    *,
    history: History | None = None,
    actor: Actor = UNKNOWN,
) -> Skill:
    with locked(library.root):
        current = _existing(library, name)
        skill = check_skill_text(content, current.path, current.name)
        before = _text(current.path)
        atomic_write(current.path, content)
        library.changed(current.directory)
        _record(history, current.name, before, content, actor)
    return skill


def patch(
    library: SkillLibrary,
    name: str,
    old_string: str,
    new_string: str,
    file_path: str | None = None,
    *,
    history: History | None = None,
    actor: Actor = UNKNOWN,
) -> str:
    """Replace the one occurrence of `old_string` in SKILL.md (or a supporting file)."""
    if not old_string:
        raise SkillWriteError("old_string is empty; quote the exact text to replace")
    with locked(library.root):
        current = _existing(library, name)
        target = current.path if file_path is None else _support_path(current, file_path)
        try:
            text = target.read_text(encoding="utf-8-sig")
        except FileNotFoundError:
            raise SkillWriteError(f"{file_path} does not exist in skill {name!r}") from None
        count = text.count(old_string)
        if count != 1:
            where = "SKILL.md" if file_path is None else file_path
            raise SkillWriteError(
                f"old_string occurs {count} times in {where} of {name!r}; it must match exactly "
                "once (quote more surrounding text, or view the skill first)"
            )
        updated = text.replace(old_string, new_string, 1)
        if file_path is None:
            check_skill_text(updated, target, current.name)
        else:
            check_safe(updated, f"{file_path} of {name!r}")
        atomic_write(target, updated)
        library.changed(current.directory)
        if file_path is None:
            _record(history, current.name, text, updated, actor)
    return str(target.relative_to(current.directory))


def delete(
    library: SkillLibrary, name: str, *, history: History | None = None, actor: Actor = UNKNOWN
) -> Skill:
    with locked(library.root):
        current = _existing(library, name)
        before = _text(current.path)
        shutil.rmtree(current.directory)
        library.changed(current.directory)
        _record(history, current.name, before, "", actor)
        category_dir = current.directory.parent
        if category_dir != library.root and not any(category_dir.iterdir()):
            category_dir.rmdir()
    return current


def _support_path(skill: Skill, file_path: str) -> Path:
    parts = Path(file_path).parts
    if not parts or parts[0] not in SUPPORT_DIRS:
        raise SkillWriteError(
            f"{file_path!r} must be inside one of {', '.join(SUPPORT_DIRS)} (e.g. references/api.md)"
        )
    try:
        return confined(skill.directory, file_path)
    except ValueError as exc:
        raise SkillWriteError(str(exc)) from None


def write_file(library: SkillLibrary, name: str, file_path: str, content: str) -> str:
    if len(content) > MAX_FILE_CHARS:
        raise SkillWriteError(
            f"{file_path} is {len(content):,} characters; the limit is {MAX_FILE_CHARS:,}"
        )
    with locked(library.root):
        current = _existing(library, name)
        target = _support_path(current, file_path)
        check_safe(content, f"{file_path} of {name!r}")
        atomic_write(
            target, content, mode=0o700 if Path(file_path).parts[0] == "scripts" else 0o600
        )
        library.changed(current.directory)
    return str(target.relative_to(current.directory))


def remove_file(library: SkillLibrary, name: str, file_path: str) -> str:
    with locked(library.root):
        current = _existing(library, name)
        target = _support_path(current, file_path)
        if not target.is_file():
            raise SkillWriteError(f"{file_path} does not exist in skill {name!r}")
        target.unlink()
        library.changed(current.directory)
    return file_path


def install(
    library: SkillLibrary,
    source: Path,
    category: str | None = None,
    *,
    replace: bool = False,
    history: History | None = None,
    actor: Actor = UNKNOWN,
) -> Skill:
    """Copy a skill directory (or a lone SKILL.md) into the library after checking every file."""
    skill_file = source / SKILL_FILE if source.is_dir() else source
    if not skill_file.is_file():
        raise SkillWriteError(f"{source} has no {SKILL_FILE}")
    try:
        text = skill_file.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise SkillWriteError(f"{skill_file} cannot be read: {exc}") from None
    try:
        parsed = parse_skill(text, skill_file)
    except SkillFormatError as exc:
        raise SkillWriteError(str(exc)) from None
    check_safe(text, str(skill_file))
    extra: list[Path] = []
    if source.is_dir():
        for sub in SUPPORT_DIRS:
            for p in sorted((source / sub).rglob("*")) if (source / sub).is_dir() else []:
                if p.is_symlink():
                    raise SkillWriteError(f"{p} is a symlink; skills are installed as plain files")
                if p.is_file():
                    try:
                        check_safe(p.read_text(encoding="utf-8"), str(p))
                    except UnicodeDecodeError:
                        pass  # binary assets are not read into prompts
                    extra.append(p)
    with locked(library.root):
        existing = library.find(parsed.name)
        before = _text(existing.path) if existing is not None else ""
        if existing is not None:
            if not replace:
                raise SkillWriteError(
                    f"a skill named {parsed.name!r} is already installed at {existing.directory}; "
                    "remove it first or pass --replace"
                )
            shutil.rmtree(existing.directory)
        target = library.directory_for(parsed.name, category)
        atomic_write(target / SKILL_FILE, text)
        for p in extra:
            rel = p.relative_to(source)
            (target / rel).parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            shutil.copyfile(p, target / rel)
        if existing is not None and existing.directory != target:
            library.changed(existing.directory)
        library.changed(target)
        _record(history, parsed.name, before, text, actor)
    found = library.find(parsed.name)
    if found is None:
        raise SkillWriteError(f"{parsed.name!r} was copied to {target} but cannot be read back")
    return found
