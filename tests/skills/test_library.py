"""The library on disk: parsing, malformed files reported by file and line, starters."""

from __future__ import annotations

from pathlib import Path

import pytest

from hermes.config.settings import load_settings
from hermes.skills.library import SkillFormatError, SkillLibrary, parse_skill
from hermes.skills.starters import MANIFEST, install_starters
from hermes.skills.store import library_for
from tests.skills.conftest import write_skill


def test_frontmatter_fields_and_category(home: Path) -> None:
    write_skill(
        home,
        "deploy",
        "Ship the app",
        category="devops",
        extra="version: 2\nplatforms: [cli, linux]\nrequires_tools: [terminal]\n",
    )
    skill = SkillLibrary(home / "skills").find("devops/deploy")
    assert skill is not None
    assert (skill.name, skill.category, skill.version) == ("deploy", "devops", "2")
    assert skill.platforms == ("cli", "linux") and skill.requires_tools == ("terminal",)
    assert skill.available_on("telegram", ("terminal",))  # linux matches the OS here
    assert not skill.available_on("cli", ("memory",))  # a required tool is missing


@pytest.mark.parametrize(
    ("text", "line", "words"),
    [
        ("# no frontmatter\n", 1, "starts with"),
        ("---\nname: x\n", 1, "never closed"),
        ("---\nname: ok\ndescription: [unclosed\n---\n", 3, "not valid YAML"),
        ("---\ndescription: d\n---\nbody", 1, "`name` is required"),
        ("---\nname: Bad Name\ndescription: d\n---\n", 2, "lowercase"),
        ("---\nname: ok\n---\n", 1, "`description` is required"),
        ("---\nname: ok\ndescription: d\nplatforms: 3\n---\n", 4, "platforms"),
    ],
)
def test_malformed_frontmatter_names_file_and_line(text: str, line: int, words: str) -> None:
    with pytest.raises(SkillFormatError) as err:
        parse_skill(text, Path("/x/SKILL.md"))
    assert err.value.line == line and words in err.value.message
    assert str(err.value).startswith(f"/x/SKILL.md:{line}:")


def test_a_broken_skill_is_skipped_and_reported(home: Path) -> None:
    write_skill(home, "good")
    bad = home / "skills" / "bad" / "SKILL.md"
    bad.parent.mkdir(parents=True)
    bad.write_text("---\nname: bad\ndescription: [oops\n---\n")
    scan = SkillLibrary(home / "skills").scan()
    assert [s.name for s in scan.skills] == ["good"]
    assert len(scan.problems) == 1 and f"{bad}:3:" in str(scan.problems[0])


def test_starters_are_copied_once_and_never_overwrite(home: Path) -> None:
    root = home / "skills"
    copied = install_starters(root)
    assert "software/debug-systematically" in copied and (root / MANIFEST).is_file()
    edited = root / "software" / "debug-systematically" / "SKILL.md"
    edited.write_text(edited.read_text() + "\nMy own step.\n")
    removed = root / "writing" / "summarize-document"
    for p in sorted(removed.rglob("*"), reverse=True):
        p.unlink()
    removed.rmdir()
    assert install_starters(root) == []
    assert "My own step." in edited.read_text()
    assert not removed.exists()  # a deleted starter stays deleted


def test_starters_follow_the_setting(home: Path) -> None:
    (home).mkdir(parents=True, exist_ok=True)
    (home / "config.yaml").write_text("skills:\n  starters: false\n")
    assert library_for(load_settings()).skills() == []
