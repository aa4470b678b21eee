"""hermes.entry_points: one read of the installed entry point files serves pydantic's plugin
look-up and the registry's first one; later look-ups read afresh; a group no file names is
answered without parsing any."""

from __future__ import annotations

import subprocess
import sys
from importlib.metadata import entry_points
from pathlib import Path

import pytest

from tests.dists import install_plugin

SCRIPT = """
from importlib.metadata import entry_points
from pydantic.plugin import _loader
from hermes import entry_points as installed

assert _loader._plugins is None
installed.prime()
# no distribution offers a pydantic plugin here: pydantic is told so instead of scanning
assert (_loader._plugins == {}) == (not entry_points(group="pydantic")), _loader._plugins
first = installed.select("console_scripts")
assert installed._texts is None  # taken once
assert list(first) == list(installed.select("console_scripts"))
print("ok")
"""


def test_one_read_serves_pydantic_and_the_first_look_up() -> None:
    run = subprocess.run(
        [sys.executable, "-c", SCRIPT],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "ok"


def test_select_reads_afresh_without_a_prime() -> None:
    from hermes import entry_points as installed

    assert list(installed.select("console_scripts")) == list(entry_points(group="console_scripts"))


def test_a_group_no_file_names_is_not_parsed(monkeypatch: pytest.MonkeyPatch) -> None:
    from hermes import entry_points as installed

    def parse(**_: object) -> None:
        raise AssertionError("no distribution names the group: nothing to parse")

    monkeypatch.setattr(installed, "entry_points", parse)
    assert list(installed.select("hermes.no-such-group")) == []


def test_an_installed_plugin_is_found_after_a_prime(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from hermes import entry_points as installed

    install_plugin(
        tmp_path / "site",
        monkeypatch,
        entry="hello",
        module="hermes_hello_plugin",
        source="def register(registry):\n    pass\n",
        dist="hermes-hello",
    )
    monkeypatch.setattr(installed, "_texts", installed._read())  # what `prime` keeps
    found = installed.select("hermes.plugins")
    assert [(ep.name, ep.value) for ep in found if ep.name == "hello"] == [
        ("hello", "hermes_hello_plugin")
    ]
    assert installed._texts is None
