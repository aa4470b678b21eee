"""read_file / write_file / patch / search_files: success paths, refusals and escapes."""

from __future__ import annotations

from pathlib import Path

from hermes.config.settings import Settings
from tests.tools.conftest import Tools


async def test_write_then_read_with_line_numbers_and_paging(tools: Tools, workdir: Path) -> None:
    body = "".join(f"line {n}\n" for n in range(1, 11))
    out = await tools("write_file", path="notes/a.txt", content=body)
    assert out.ok and "Created notes/a.txt" in out.text
    assert (workdir / "notes" / "a.txt").read_text() == body
    assert not [p for p in (workdir / "notes").iterdir() if p.name.startswith(".")]

    page = await tools.text("read_file", path="notes/a.txt", offset=3, limit=2)
    assert page.splitlines()[:2] == ["     3|line 3", "     4|line 4"]
    assert "offset=5" in page

    again = await tools("write_file", path="notes/a.txt", content="new\n")
    assert again.ok and "Overwrote" in again.text


async def test_patch_needs_a_unique_exact_match(tools: Tools, workdir: Path) -> None:
    target = workdir / "m.py"
    target.write_text("x = 1\ny = 1\nz = 2\n")
    target.chmod(0o751)

    many = await tools("patch", path="m.py", old_string="= 1", new_string="= 3")
    assert not many.ok and "matches 2 places" in many.text and "lines 1, 2" in many.text
    missing = await tools("patch", path="m.py", old_string="w = 9", new_string="w = 1")
    assert not missing.ok and "not found" in missing.text

    one = await tools("patch", path="m.py", old_string="z = 2", new_string="z = 20")
    assert one.ok and "-z = 2" in one.text and "+z = 20" in one.text
    every = await tools("patch", path="m.py", old_string="= 1", new_string="= 5", replace_all=True)
    assert every.ok and "2 replacements" in every.text
    assert target.read_text() == "x = 5\ny = 5\nz = 20\n"
    assert target.stat().st_mode & 0o777 == 0o751


async def test_paths_outside_the_workdir_are_refused(
    tools: Tools, workdir: Path, tmp_path: Path, settings: Settings
) -> None:
    secret = tmp_path / "outside.txt"
    secret.write_text("private")
    (workdir / "link").symlink_to(secret)
    (workdir / "linkdir").symlink_to(tmp_path)
    for path in ("../outside.txt", str(secret), "link", "linkdir/outside.txt"):
        out = await tools("read_file", path=path)
        assert not out.ok and "outside the working directory" in out.text, path
    wrote = await tools("write_file", path="linkdir/new.txt", content="x")
    assert not wrote.ok and not (tmp_path / "new.txt").exists()
    patched = await tools("patch", path="link", old_string="private", new_string="public")
    assert not patched.ok and secret.read_text() == "private"

    settings.tools.files.allow_outside_workdir = True
    assert (await tools.text("read_file", path=str(secret))) == "     1|private"
    # Hermes' own settings stay unwritable even then
    own = await tools("write_file", path=str(settings.home / "config.yaml"), content="x: 1")
    assert not own.ok and "never written" in own.text


async def test_binary_missing_and_oversized_files_get_clear_answers(
    tools: Tools, workdir: Path, settings: Settings
) -> None:
    (workdir / "img.bin").write_bytes(b"\x89PNG\x00\x00data")
    assert "binary file" in await tools.text("read_file", path="img.bin")
    assert "there is no file" in await tools.text("read_file", path="nope.txt")
    assert "is a directory" in await tools.text("read_file", path=".")
    settings.tools.files.max_read_bytes = 100
    (workdir / "big.txt").write_text("a" * 500)
    assert "over the 100-byte limit" in await tools.text("read_file", path="big.txt")


async def test_search_files_by_content_and_by_name(tools: Tools, workdir: Path) -> None:
    (workdir / "src").mkdir()
    (workdir / "src" / "app.py").write_text("def main():\n    return helper()\n")
    (workdir / "src" / "util.py").write_text("def helper():\n    return 1\n")
    (workdir / "README.md").write_text("helper docs\n")
    (workdir / ".git").mkdir()
    (workdir / ".git" / "config").write_text("helper in git\n")

    found = await tools.text("search_files", pattern=r"def \w+\(", file_glob="*.py")
    assert found.splitlines() == ["src/app.py:1: def main():", "src/util.py:1: def helper():"]
    everywhere = await tools.text("search_files", pattern="helper")
    assert "README.md:1" in everywhere and ".git" not in everywhere
    names = await tools.text("search_files", pattern="*.py", target="files")
    assert names.splitlines() == ["src/app.py", "src/util.py"]
    assert "No matches" in await tools.text("search_files", pattern="absent")
    bad = await tools("search_files", pattern="(unclosed")
    assert not bad.ok and "not a valid regular expression" in bad.text
    escape = await tools("search_files", pattern="x", path="..")
    assert not escape.ok and "outside the working directory" in escape.text


async def test_workdir_defaults_to_the_home_workspace(settings: Settings, runtime: object) -> None:
    from hermes.tools.workdir import workdir

    assert settings.tools.workdir is None
    assert workdir(settings) == (settings.home / "workspace").resolve()
    assert (settings.home / "workspace").is_dir()
