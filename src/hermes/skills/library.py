"""The skill library on disk: `skills/[<category>/]<name>/SKILL.md`, YAML frontmatter + Markdown.

Files are plain text the user may edit by hand, so reading never trusts them: a malformed
SKILL.md is reported with its file and line and skipped, never raised into a turn.
"""

from __future__ import annotations

import os
import platform as _platform
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hermes.errors import HermesError

SKILL_FILE = "SKILL.md"
NAME_PATTERN = re.compile(r"^[a-z0-9][a-z0-9._-]{0,63}$")
CATEGORY_PATTERN = NAME_PATTERN
MAX_DESCRIPTION_CHARS = 1024
SUPPORT_DIRS = ("references", "templates", "scripts", "assets", "examples")
_OS_NAMES = {"Linux": "linux", "Darwin": "macos", "Windows": "windows"}


class SkillFormatError(HermesError, ValueError):
    """A SKILL.md cannot be used; `str()` names the file and the line."""

    def __init__(self, path: Path | str, line: int, message: str) -> None:
        self.path = str(path)
        self.line = line
        self.message = message
        super().__init__(f"{path}:{line}: {message}")


@dataclass(frozen=True)
class Skill:
    name: str
    description: str
    path: Path
    category: str | None = None
    version: str | None = None
    platforms: tuple[str, ...] = ()
    requires_tools: tuple[str, ...] = ()
    body: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def directory(self) -> Path:
        return self.path.parent

    @property
    def qualified_name(self) -> str:
        return f"{self.category}/{self.name}" if self.category else self.name

    def files(self) -> list[str]:
        """Supporting files (references/, templates/, …) relative to the skill directory."""
        found: list[str] = []
        for sub in SUPPORT_DIRS:
            base = self.directory / sub
            if base.is_dir():
                found.extend(
                    str(p.relative_to(self.directory))
                    for p in sorted(base.rglob("*"))
                    if p.is_file() and not p.name.startswith(".")
                )
        return found

    def available_on(self, platform: str, tool_names: tuple[str, ...] | None) -> bool:
        """Shown on this surface/OS and with these tools? `platforms` may name operating
        systems (linux, macos, windows) or surfaces (cli, api, telegram, cron, …)."""
        if self.platforms:
            here = {platform, current_os()}
            if not here & set(self.platforms):
                return False
        if tool_names is not None and self.requires_tools:
            return set(self.requires_tools) <= set(tool_names)
        return True


def current_os() -> str:
    return _OS_NAMES.get(_platform.system(), _platform.system().lower())


def _str_list(value: Any, key: str, path: Path, line: int) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise SkillFormatError(path, line, f"`{key}` must be a list of names")
    return tuple(v.strip().lower() if key == "platforms" else v.strip() for v in value)


def split_frontmatter(text: str, path: Path | str) -> tuple[dict[str, Any], str, int]:
    """(frontmatter mapping, body, line where the body starts); errors name file and line."""
    lines = text.splitlines(keepends=True)
    if not lines or lines[0].strip() != "---":
        raise SkillFormatError(
            path, 1, "a SKILL.md starts with a `---` line opening its frontmatter"
        )
    for end in range(1, len(lines)):
        if lines[end].strip() == "---":
            break
    else:
        raise SkillFormatError(path, 1, "the frontmatter opened on line 1 is never closed by `---`")
    import yaml  # at the first skill read, not on `hermes serve`'s path to /health

    try:
        data = yaml.safe_load("".join(lines[1:end]))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "context_mark", None) or getattr(exc, "problem_mark", None)
        line = min(mark.line + 2, end) if mark is not None else 2
        problem = getattr(exc, "problem", None) or str(exc)
        raise SkillFormatError(
            path, line, f"the frontmatter is not valid YAML: {problem}"
        ) from None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise SkillFormatError(path, 2, "the frontmatter must be a mapping of keys (name: …)")
    return data, "".join(lines[end + 1 :]), end + 2


def _key_line(text: str, key: str) -> int:
    for number, line in enumerate(text.splitlines(), start=1):
        if line.startswith(f"{key}:"):
            return number
    return 1


def parse_skill(text: str, path: Path, category: str | None = None) -> Skill:
    """A Skill from SKILL.md text; raises SkillFormatError naming the line that is wrong."""
    data, body, _ = split_frontmatter(text, path)
    name = data.get("name")
    if not isinstance(name, str) or not name.strip():
        raise SkillFormatError(path, _key_line(text, "name"), "`name` is required (a short slug)")
    name = name.strip()
    if not NAME_PATTERN.match(name):
        raise SkillFormatError(
            path,
            _key_line(text, "name"),
            f"`name` {name!r} must be 1-64 lowercase letters, digits, '.', '_' or '-'",
        )
    description = data.get("description")
    if not isinstance(description, str) or not description.strip():
        raise SkillFormatError(
            path, _key_line(text, "description"), "`description` is required (one line)"
        )
    description = " ".join(description.split())
    if len(description) > MAX_DESCRIPTION_CHARS:
        raise SkillFormatError(
            path,
            _key_line(text, "description"),
            f"`description` is {len(description)} characters; keep it under {MAX_DESCRIPTION_CHARS}",
        )
    version = data.get("version")
    return Skill(
        name=name,
        description=description,
        path=path,
        category=category,
        version=str(version) if version is not None else None,
        platforms=_str_list(data.get("platforms"), "platforms", path, _key_line(text, "platforms")),
        requires_tools=_str_list(
            data.get("requires_tools"), "requires_tools", path, _key_line(text, "requires_tools")
        ),
        body=body.strip(),
        extra={
            k: v
            for k, v in data.items()
            if k not in ("name", "description", "version", "platforms", "requires_tools")
        },
    )


def read_skill(path: Path, root: Path) -> Skill:
    try:
        text = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError:
        raise SkillFormatError(path, 1, "not UTF-8 text") from None
    except OSError as exc:
        raise SkillFormatError(path, 1, f"cannot be read: {exc.strerror}") from None
    relative = path.parent.relative_to(root).parts
    category = relative[0] if len(relative) == 2 else None
    return parse_skill(text, path, category)


@dataclass
class Scan:
    skills: list[Skill]
    problems: list[SkillFormatError]


class SkillLibrary:
    """The skills of one install (the owner's). Every read looks at the disk again: files are
    small and hand edits must show up in the next session without a restart."""

    def __init__(self, root: Path, on_change: Callable[[Path], None] | None = None) -> None:
        self.root = root
        self.on_change = on_change

    def changed(self, directory: Path) -> None:
        """A write to the skill in `directory` is done (`manage` calls it under the lock):
        with a shared store, it is published for the other replicas (`skills.shared`)."""
        if self.on_change is not None:
            self.on_change(directory)

    def _skill_files(self) -> list[Path]:
        if not self.root.is_dir():
            return []
        found: list[Path] = []
        for pattern in (f"*/{SKILL_FILE}", f"*/*/{SKILL_FILE}"):
            found.extend(
                p
                for p in self.root.glob(pattern)
                if not any(part.startswith(".") for part in p.relative_to(self.root).parts)
            )
        return sorted(found)

    def scan(self) -> Scan:
        skills: dict[str, Skill] = {}
        problems: list[SkillFormatError] = []
        for path in self._skill_files():
            try:
                skill = read_skill(path, self.root)
            except SkillFormatError as exc:
                problems.append(exc)
                continue
            if skill.name in skills:
                problems.append(
                    SkillFormatError(
                        path,
                        1,
                        f"a second skill named {skill.name!r} (first: {skills[skill.name].path}); ignored",
                    )
                )
                continue
            skills[skill.name] = skill
        return Scan(sorted(skills.values(), key=lambda s: (s.category or "", s.name)), problems)

    def skills(self) -> list[Skill]:
        return self.scan().skills

    def find(self, name: str) -> Skill | None:
        """By name, or by `category/name`."""
        wanted = name.strip().strip("/")
        for skill in self.skills():
            if wanted in (skill.name, skill.qualified_name):
                return skill
        return None

    def problem_for(self, name: str) -> SkillFormatError | None:
        """The parse error of a skill directory named `name`, to explain why it is missing."""
        for problem in self.scan().problems:
            if Path(problem.path).parent.name == name:
                return problem
        return None

    def directory_for(self, name: str, category: str | None) -> Path:
        return self.root / category / name if category else self.root / name


def confined(base: Path, relative: str) -> Path:
    """`base/relative` if it stays inside `base` (no absolute paths, `..` or symlink escapes)."""
    if not relative or os.path.isabs(relative) or "\x00" in relative:
        raise ValueError(f"{relative!r} is not a relative path inside the skill")
    target = (base / relative).resolve()
    if not target.is_relative_to(base.resolve()):
        raise ValueError(f"{relative!r} points outside the skill directory")
    return target
