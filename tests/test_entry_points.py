"""hermes.entry_points: one read of the installed entry points serves pydantic's plugin look-up
and the registry's first one; later look-ups read afresh."""

from __future__ import annotations

import subprocess
import sys
from importlib.metadata import entry_points

SCRIPT = """
from importlib.metadata import entry_points
from pydantic.plugin import _loader
from hermes import entry_points as installed

assert _loader._plugins is None
installed.prime()
# no distribution offers a pydantic plugin here: pydantic is told so instead of scanning
assert (_loader._plugins == {}) == (not entry_points(group="pydantic")), _loader._plugins
first = installed.select("console_scripts")
assert installed._scan is None  # taken once
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
