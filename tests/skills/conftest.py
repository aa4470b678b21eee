from __future__ import annotations

from pathlib import Path

SKILL = """---
name: {name}
description: {description}
{extra}---
# {name}

## Procedure
{body}
"""


def write_skill(
    home: Path,
    name: str,
    description: str = "Does a thing",
    *,
    category: str | None = None,
    extra: str = "",
    body: str = "1. Do the thing.",
) -> Path:
    directory = home / "skills" / category / name if category else home / "skills" / name
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "SKILL.md"
    path.write_text(SKILL.format(name=name, description=description, extra=extra, body=body))
    return path
