"""How a turn looks in the terminal: the answer streams in as Markdown, each tool call gets one
compact line (name, key argument, elapsed, ✓/✗), context work gets a one-line notice.

Two modes. Rich (a TTY): Markdown re-rendered as text arrives, lines that scrolled out of a
small live window printed for good (a long answer never has to fit the screen). Plain
(`--plain`, pipes): the text exactly as the model sent it, and plain tool lines.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from rich.console import Console, Group
from rich.live import Live
from rich.markdown import Markdown
from rich.markup import escape
from rich.segment import Segment
from rich.spinner import Spinner
from rich.text import Text

from hermes.agent.turn import TurnObserver

LIVE_LINES = 8
"""Rendered lines kept redrawable at the bottom; Markdown above them is final."""
RENDER_EVERY_S = 0.05
KEY_ARGUMENT = {
    "terminal": "command",
    "read_file": "path",
    "write_file": "path",
    "patch": "path",
    "search_files": "pattern",
    "web_search": "query",
    "web_extract": "urls",
    "session_search": "query",
    "delegate_task": "goal",
    "skill_view": "name",
    "skill_manage": "name",
    "send_message": "target",
    "process": "action",
    "cronjob": "action",
}
ARG_CHARS = 60


def key_argument(name: str, arguments: str) -> str:
    """The one argument that says what a call does (`ls -la` for terminal), on one short line."""
    try:
        args = json.loads(arguments or "{}")
    except json.JSONDecodeError:
        return ""
    if not isinstance(args, dict):
        return ""
    if name == "memory":
        value: object = " ".join(str(args.get(k, "")) for k in ("action", "target")).strip()
    elif KEY_ARGUMENT.get(name) in args:
        value = args[KEY_ARGUMENT[name]]
    else:
        value = next((v for v in args.values() if isinstance(v, str) and v), "")
    if isinstance(value, list):
        value = ", ".join(str(v) for v in value)
    text = " ".join(str(value).split())
    return text if len(text) <= ARG_CHARS else text[: ARG_CHARS - 1] + "…"


@dataclass
class _ToolRun:
    name: str
    argument: str = ""
    started: float = field(default_factory=time.monotonic)
    ok: bool | None = None
    ended: float | None = None

    def elapsed(self) -> float:
        return (self.ended or time.monotonic()) - self.started

    def line(self, rich: bool) -> Text:
        mark = "·" if self.ok is None else "✓" if self.ok else "✗"
        style = "dim" if self.ok is None else "green" if self.ok else "red"
        text = Text()
        text.append(f"{mark} ", style=style if rich else "")
        text.append(self.name, style="bold" if rich else "")
        if self.argument:
            text.append(f"  {self.argument}", style="cyan" if rich else "")
        text.append(f"  {self.elapsed():.1f}s", style="dim" if rich else "")
        return text


def settled_prefix(text: str) -> int:
    """Where the finished blocks of a growing Markdown text end: just after its last blank
    line outside a code fence (0 if none). Blocks before it will not change any more."""
    cut, pos, fenced = 0, 0, False
    for line in text.splitlines(keepends=True):
        pos += len(line)
        stripped = line.strip()
        if stripped.startswith(("```", "~~~")):
            fenced = not fenced
        elif not stripped and not fenced and line.endswith("\n") and pos > len(line):
            cut = pos
    return cut


class MarkdownStream:
    """Markdown that grows. Finished blocks (up to the last blank line outside a code fence)
    are rendered once and printed; only the block being written is redrawn, so a long answer
    costs no more per redraw than a short one."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self.text = ""
        """The unfinished tail: what the live window redraws."""
        self.printed = 0
        """Lines of the tail's rendering already printed (scrolled above the live window)."""
        self.live: Live | None = None
        self.last_render = 0.0

    def feed(self, delta: str) -> None:
        self.text += delta
        cut = settled_prefix(self.text)
        if cut:
            self._commit(cut)
        if time.monotonic() - self.last_render >= RENDER_EVERY_S:
            self._render(final=False)

    def close(self) -> None:
        """Print everything that is left and leave the live window."""
        if self.text.strip():
            self._render(final=True)
        if self.live is not None:
            self.live.stop()
            self.live = None
        self.text, self.printed = "", 0

    def _commit(self, cut: int) -> None:
        head, self.text = self.text[:cut], self.text[cut:]
        lines = self._lines(head)
        fresh = lines[self.printed :]
        self.printed = 0
        if self.live is not None:
            self.live.update(Text(""), refresh=True)
        self.console.print(_as_text([*fresh, []]), soft_wrap=True)

    def _lines(self, text: str) -> list[list[Segment]]:
        options = self.console.options.update(width=max(20, self.console.width - 1))
        lines = self.console.render_lines(Markdown(text, code_theme="monokai"), options, pad=False)
        lines = _squeeze_blank(lines)
        while lines and _blank(lines[0]):
            lines.pop(0)
        while lines and _blank(lines[-1]):
            lines.pop()
        return lines

    def _render(self, *, final: bool) -> None:
        self.last_render = time.monotonic()
        lines = self._lines(self.text)
        settled = len(lines) if final else max(self.printed, len(lines) - LIVE_LINES)
        if self.live is None and not final:
            self.live = Live(console=self.console, auto_refresh=False, transient=True)
            self.live.start()
        fresh = lines[self.printed : settled]
        self.printed = max(self.printed, settled)
        if self.live is not None:
            self.live.update(_as_text(lines[settled:]) if not final else Text(""), refresh=True)
            if final:
                self.live.stop()
                self.live = None
        if fresh:
            self.console.print(_as_text(fresh), soft_wrap=True)


def _blank(line: list[Segment]) -> bool:
    return not "".join(seg.text for seg in line).strip()


def _squeeze_blank(lines: list[list[Segment]]) -> list[list[Segment]]:
    """One blank line between blocks, not two (code blocks and tables pad themselves)."""
    kept: list[list[Segment]] = []
    previous_blank = False
    for line in lines:
        blank = _blank(line)
        if not (blank and previous_blank):
            kept.append(line)
        previous_blank = blank
    return kept


def _as_text(lines: list[list[Segment]]) -> Text:
    text = Text()
    for i, line in enumerate(lines):
        if i:
            text.append("\n")
        for seg in line:
            if not seg.control:
                text.append(seg.text, style=seg.style)
    return text


class TurnView(TurnObserver):
    """The terminal's observer of one turn. `finish` or `interrupted` ends it."""

    def __init__(self, console: Console, *, rich: bool) -> None:
        self.console = console
        self.rich = rich
        self.streamed = ""
        self._stream = MarkdownStream(console) if rich else None
        self._tools: dict[str, _ToolRun] = {}
        self._args: dict[str, str] = {}
        self._tool_live: Live | None = None
        self._midline = False

    # -- TurnObserver -----------------------------------------------------------------------

    def on_delta(self, text: str) -> None:
        self._stop_tool_live()
        self.streamed += text
        if self._stream is not None:
            self._stream.feed(text)
        else:
            self.console.file.write(text)
            self.console.file.flush()
            self._midline = not text.endswith("\n")

    def on_tool_arguments(self, call_id: str, name: str, arguments: str) -> None:
        self._args[call_id] = key_argument(name, arguments)

    def on_tool_start(self, call_id: str, name: str) -> None:
        self._end_text()
        self._tools[call_id] = _ToolRun(name, self._args.pop(call_id, ""))
        if self.rich:
            if self._tool_live is None:
                self._tool_live = Live(
                    self._running(), console=self.console, refresh_per_second=8, transient=True
                )
                self._tool_live.start()
            else:
                self._tool_live.update(self._running())

    def on_tool_end(self, call_id: str, name: str, ok: bool) -> None:
        run = self._tools.pop(call_id, None) or _ToolRun(name)
        run.ok, run.ended = ok, time.monotonic()
        self.console.print(run.line(self.rich), soft_wrap=True, highlight=False)
        if self._tool_live is not None:
            if self._tools:
                self._tool_live.update(self._running())
            else:
                self._stop_tool_live()

    def on_notice(self, kind: str, text: str) -> None:
        self.notice(text)

    # -- the REPL's side ----------------------------------------------------------------------

    def notice(self, text: str) -> None:
        self._end_text()
        if self.rich:
            self.console.print(f"[dim]⟳ {escape(text)}[/dim]", soft_wrap=True)
        else:
            self.console.print(f"-- {text}", markup=False, highlight=False, soft_wrap=True)

    @contextmanager
    def paused(self) -> Iterator[None]:
        """Hide the live lines while something else owns the terminal (an approval question)."""
        live = self._tool_live
        if live is not None:
            live.stop()
        try:
            yield
        finally:
            if live is not None and self._tool_live is live and self._tools:
                live.start()

    def finish(self, content: str) -> None:
        """The turn ended: settle the stream, or show the answer if nothing streamed."""
        self._stop_tool_live()
        if not self.streamed and content:
            self.on_delta(content)
        self._end_text()

    def interrupted(self) -> None:
        self._stop_tool_live()
        for run in self._tools.values():
            run.ok, run.ended = False, time.monotonic()
            self.console.print(run.line(self.rich), soft_wrap=True, highlight=False)
        self._tools.clear()
        self._end_text()
        what = "the partial answer is kept" if self.streamed else "nothing was said yet"
        self.notice(f"interrupted: {what} (Ctrl-C again to exit)")

    # -- internals ------------------------------------------------------------------------

    def _running(self) -> Group:
        return Group(
            *(Spinner("dots", run.line(True), style="cyan") for run in self._tools.values())
        )

    def _stop_tool_live(self) -> None:
        if self._tool_live is not None:
            self._tool_live.stop()
            self._tool_live = None

    def _end_text(self) -> None:
        if self._stream is not None:
            self._stream.close()
        elif self._midline:
            self.console.file.write("\n")
            self.console.file.flush()
            self._midline = False
