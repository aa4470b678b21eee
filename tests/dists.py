"""Installing a plugin the way pip would leave it: a module and a `*.dist-info` with a
`hermes.plugins` entry point, in a folder put on sys.path (importlib.metadata finds it)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest


def install_plugin(
    site: Path,
    monkeypatch: pytest.MonkeyPatch,
    *,
    entry: str,
    module: str,
    source: str,
    dist: str,
    version: str = "0.1",
) -> None:
    """`dist` `version` providing the entry point `entry = module` (its code: `source`)."""
    site.mkdir(exist_ok=True)
    (site / f"{module}.py").write_text(source)
    info = site / f"{dist.replace('-', '_')}-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n")
    (info / "entry_points.txt").write_text(f"[hermes.plugins]\n{entry} = {module}\n")
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.delitem(sys.modules, module, raising=False)
