"""Prompt cost of skills: the system prompt with 0 and 50 installed skills, the index's size in
tokens (chars/4, the budget is 1,500), and the time to build it.

    .venv/bin/python bench/skills.py [--skills 50]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from hermes.agent.context import PromptContext
from hermes.agent.tokens import estimate_text_tokens
from hermes.config.settings import load_settings
from hermes.runtime import build_runtime
from hermes.skills.index import skills_block

CATEGORIES = ("devops", "writing", "research", "data", "home")


def install(home: Path, count: int) -> None:
    for i in range(count):
        category = CATEGORIES[i % len(CATEGORIES)]
        directory = home / "skills" / category / f"procedure-{i:02d}"
        directory.mkdir(parents=True, exist_ok=True)
        (directory / "SKILL.md").write_text(
            f"---\nname: procedure-{i:02d}\ndescription: How to carry out recurring task number "
            f"{i} end to end, with the checks that catch its usual mistakes\n---\n"
            + "## Procedure\n1. A step.\n"
            * 40
        )


def measure(count: int) -> tuple[int, int, float]:
    home = Path(tempfile.mkdtemp(prefix="hermes-bench-skills-"))
    (home / "config.yaml").write_text("skills:\n  starters: false\n")
    install(home, count)
    settings = load_settings(home, env={"OPENAI_BASE_URL": "http://127.0.0.1:9/v1"})
    runtime = build_runtime(settings)
    try:
        toolset = runtime.agent.toolset
        prompt = runtime.agent.system_prompt_for("default", toolset, "cli", "hello")
        block = skills_block(settings)
        ctx = PromptContext("default", "hello", "cli", tuple(toolset.names()))
        started = time.perf_counter()
        index = block(ctx) or ""
        elapsed = (time.perf_counter() - started) * 1000
    finally:
        runtime.store.close()
    return estimate_text_tokens(prompt), estimate_text_tokens(index), elapsed


def main(count: int) -> None:
    print(f"{'skills':>6} {'prompt tokens':>14} {'index tokens':>13} {'index build ms':>15}")
    for n in (0, count):
        prompt, index, ms = measure(n)
        print(f"{n:>6} {prompt:>14} {index:>13} {ms:>15.1f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--skills", type=int, default=50)
    main(parser.parse_args().skills)
