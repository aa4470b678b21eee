"""The embedding model's graphs made once per test run and put in each test's home.

Why: a home's first model load writes the graph from the bundled weights and quantises the
questions' graph (`hermes.memory.embedding_onnx`), about 2 s of CPU, where a home that has
them loads in a quarter of that. Every test has a new home, so each test that loads the model
(those marked `semantic`, each Mem0 worker) paid it again. The files are hard links to one
copy made under a lock by the first worker that needs them: Hermes replaces a damaged graph
by writing a new file, never in place, so a test cannot spoil another's."""

from __future__ import annotations

import fcntl
import os
import shutil
from pathlib import Path

import pytest


def made_once(root: Path) -> Path:
    """`root/embeddings`, holding the graphs (made here by the first process to ask)."""
    folder = root / "embeddings"
    root.mkdir(parents=True, exist_ok=True)
    with open(root / "embeddings.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (folder / "done").exists():
            from hermes.memory.embedding_onnx import OnnxMiniLM
            from hermes.memory.embeddings import MODEL_NAME

            OnnxMiniLM(MODEL_NAME, folder).encode_query("warm")
            (folder / "done").touch()
    return folder


def seed(home: Path, graphs: Path) -> None:
    """Put the made graphs where `home`'s model load looks for them."""
    target = home / "cache" / "embeddings"
    target.mkdir(parents=True, exist_ok=True)
    for made in graphs.glob("*.onnx"):
        if (target / made.name).exists():
            continue
        try:
            os.link(made, target / made.name)
        except OSError:  # another file system
            shutil.copyfile(made, target / made.name)


@pytest.fixture(scope="session")
def embedding_graphs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Shared by this run's pytest-xdist workers: their base folders have one parent."""
    base = tmp_path_factory.getbasetemp()
    run = base.parent if base.name.startswith("popen-gw") else base
    return made_once(run / "model-cache")
