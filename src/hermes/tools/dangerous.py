"""The documented list of terminal commands that need a person's approval, and the few that
never run at all.

A command is checked as written, after folding whitespace; `sh -c '…'` and `eval` payloads are
part of the text, so they are checked too. Each pattern has a stable key (what "approve for
this session" and "always approve" remember) and a reason shown to the approver and, when
nobody can approve, to the model.

Patterns are anchored to command position (start, or after `;`, `&`, `|`, `(`, `` ` ``, `$(`,
`sudo`, `xargs`, …) where that matters, so prose such as `echo "do not rm -rf"` does not trip
them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property

# start of a command: line start or after a separator, optionally behind sudo/env/xargs/…
_CMD = (
    r"(?:^|[;&|(`\n\"']|\$\()\s*"
    r"(?:(?:sudo|doas|env|nohup|time|xargs|exec|command)(?:\s+-\S+)*\s+)*"
)


@dataclass(frozen=True)
class Pattern:
    key: str
    source: str
    reason: str

    @cached_property
    def regex(self) -> re.Pattern[str]:
        """Compiled at the first check, not at import (tens of ms on every start)."""
        return re.compile(self.source, re.IGNORECASE | re.MULTILINE)


def _p(key: str, regex: str, reason: str) -> Pattern:
    return Pattern(key, regex, reason)


# Never run, even when approved or with `tools.terminal.approval: off`: they destroy the host.
HARDLINE: tuple[Pattern, ...] = (
    _p(
        "rm_root",
        _CMD + r"rm\s+(?:-\S*\s+)*-\S*[rR]\S*\s+(?:-\S+\s+)*(?:/+\.?\*?|~/?|\$HOME/?)(?:\s|$)",
        "recursively deletes the filesystem root or the home directory",
    ),
    _p("mkfs", _CMD + r"(?:mkfs(?:\.\w+)?|mke2fs|mkswap)\s+\S*/dev/", "formats a disk"),
    _p(
        "dd_disk", _CMD + r"dd\s+.*\bof=/dev/(?:sd|hd|nvme|vd|xvd|mmcblk|disk)", "overwrites a disk"
    ),
    _p(
        "redirect_disk",
        r">\s*/dev/(?:sd[a-z]|hd[a-z]|nvme\d|vd[a-z]|xvd[a-z]|mmcblk\d|disk\d)",
        "writes over a disk device",
    ),
    _p("fork_bomb", r":\s*\(\s*\)\s*\{\s*:\s*\|\s*:\s*&\s*\}\s*;\s*:", "is a fork bomb"),
)

# Run only when approved.
DANGEROUS: tuple[Pattern, ...] = (
    _p(
        "recursive_delete",
        _CMD + r"rm\s+(?:\S+\s+)*?(?:-\S*[rRf]\S*|--recursive|--force)\b",
        "deletes files recursively or without asking (rm -r / -f)",
    ),
    _p(
        "find_delete",
        _CMD + r"find\s+.*\s-(?:delete|exec\s+rm)\b",
        "deletes the files find matches",
    ),
    _p(
        "disk_write",
        _CMD + r"(?:dd\s+.*\bof=|shred\b|wipefs\b|fdisk\b|parted\b|sgdisk\b|blkdiscard\b|mkfs)",
        "writes to or repartitions a disk",
    ),
    _p(
        "chmod_open",
        _CMD + r"chmod\s+(?:-\S+\s+)*(?:-R\s+|--recursive\s+)?(?:0?777|a\+rwx|o\+w)\b",
        "makes files writable by everyone",
    ),
    _p(
        "chmod_chown_recursive",
        _CMD + r"(?:chmod|chown|chgrp)\s+(?:\S+\s+)*?(?:-\S*R\S*|--recursive)\s",
        "changes owners or permissions recursively",
    ),
    _p(
        "pipe_to_shell",
        r"\b(?:curl|wget|fetch)\b[^|;&]*\|\s*(?:sudo\s+)?(?:ba|z|da|k)?sh\b"
        r"|\b(?:curl|wget)\b[^|;&]*\|\s*(?:sudo\s+)?python\d?\b"
        r"|(?:ba|z)?sh\s+<\(\s*(?:curl|wget)\b",
        "runs a downloaded script without showing it",
    ),
    _p(
        "git_force",
        _CMD
        + r"git\s+(?:\S+\s+)*?(?:push\s+(?:\S+\s+)*?(?:--force\b|-f\b|--force-with-lease\b|\+\S)"
        r"|reset\s+--hard|clean\s+-\S*f|checkout\s+--\s+\.|branch\s+-D)",
        "discards git history or uncommitted work (force push, reset --hard, clean -f)",
    ),
    _p(
        "shutdown",
        _CMD + r"(?:shutdown|reboot|halt|poweroff|init\s+[06]|telinit\s+[06]"
        r"|systemctl\s+(?:poweroff|reboot|halt|kexec|suspend|hibernate))\b",
        "shuts down or restarts the machine",
    ),
    _p(
        "kill_all",
        _CMD + r"(?:kill\s+(?:-\S+\s+)*-1\b|killall\b|pkill\b)",
        "kills processes by name or every process of the user",
    ),
    _p(
        "sql_destroy",
        r"\b(?:DROP\s+(?:TABLE|DATABASE|SCHEMA|INDEX|VIEW|USER)|TRUNCATE\s+(?:TABLE\s+)?\w"
        r"|DELETE\s+FROM\s+\w+\s*(?:;|$|\"|'))",
        "destroys database data (DROP, TRUNCATE, DELETE without WHERE)",
    ),
    _p(
        "sensitive_write",
        r"(?:>>?|\btee\s+(?:-a\s+)?|\bsed\s+-i\S*\s+.*|\b(?:cp|mv|install)\s+.*)\s*"
        r"(?:/etc/|~/\.ssh/|\$HOME/\.ssh/|~/\.(?:bashrc|zshrc|profile|bash_profile|netrc|pgpass"
        r"|npmrc|pypirc)\b|\S*\.hermes/(?:\.env|config\.yaml))",
        "writes to system configuration, SSH keys, shell start-up files or Hermes' own settings",
    ),
    _p(
        "system_service",
        _CMD + r"(?:systemctl\s+(?:stop|disable|mask)|service\s+\S+\s+stop)\b",
        "stops or disables a system service",
    ),
    _p("crontab_remove", _CMD + r"crontab\s+-r\b", "removes every cron entry of the user"),
)


@dataclass(frozen=True)
class Finding:
    key: str
    reason: str
    hardline: bool


def _normalise(command: str) -> str:
    return re.sub(r"[ \t]+", " ", command.replace("\\\n", " "))


def check_command(command: str) -> Finding | None:
    """The first hardline pattern the command matches, else the first dangerous one, else None."""
    text = _normalise(command)
    for pattern in HARDLINE:
        if pattern.regex.search(text):
            return Finding(pattern.key, pattern.reason, True)
    for pattern in DANGEROUS:
        if pattern.regex.search(text):
            return Finding(pattern.key, pattern.reason, False)
    return None
