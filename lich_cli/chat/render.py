"""What `lich chat` shows of a turn: the answer, one line per tool call, diffs, questions.

TurnView turns the agent's events (lich_core.agent.events) into calls a face implements: text,
tool lines, diffs, notes. TerminalView renders them with rich (markdown with highlighted code and
tables, a block at a time as each is complete; the block still arriving is shown in the status
line); PlainView writes plain text for the scripted mode. Each tool call is numbered: `/show N`
prints its arguments, result and diff. The call's kind, target and title are the core's
(lich_core.agent.targets), as every face shows them.
"""

from __future__ import annotations

import difflib
import json
import os
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, TextIO

from lich_core.agent.events import (
    AgentEvent,
    ApprovalAsked,
    FinalAnswer,
    LlmRetry,
    LlmStart,
    PluginWarning,
    RunEnd,
    RunError,
    TextDelta,
    ToolCallEnd,
    ToolCallStart,
)
from lich_core.workspace import FileChange

DIFF_CONTEXT_LINES = 3
FENCES = ("```", "~~~")


@dataclass
class ToolRecord:
    number: int
    call_id: str
    name: str
    title: str
    arguments: dict[str, Any]
    started: float
    ok: bool | None = None  # None: running
    error: str | None = None
    summary: str = ""
    duration_ms: float = 0.0
    diffs: list[str] = field(default_factory=list)

    def line(self) -> str:
        """`[N] title · ok · 12 ms`: the tool, its target, the outcome and the time."""
        outcome = "running" if self.ok is None else "ok" if self.ok else "failed"
        took = f" · {self.duration_ms:.0f} ms" if self.ok is not None else ""
        error = f": {_one_line(self.error or '', 100)}" if self.ok is False else ""
        return f"[{self.number}] {self.title} · {outcome}{took}{error}"


def unified_diff(change: FileChange, root: Any) -> str:
    """The change as a unified diff, paths relative to the workspace root."""
    try:
        rel = change.path.relative_to(root).as_posix()
    except ValueError:
        rel = str(change.path)
    before = (change.base_text or "").splitlines(keepends=True)
    after = (change.new_text or "").splitlines(keepends=True) if change.kind == "write" else []
    lines = difflib.unified_diff(
        before,
        after,
        "/dev/null" if change.base_text is None else f"a/{rel}",
        "/dev/null" if change.kind == "delete" else f"b/{rel}",
        n=DIFF_CONTEXT_LINES,
    )
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines)


class BlockSplitter:
    """Cuts streamed markdown into complete blocks: a paragraph, list or table ends at a blank
    line, a fenced code block at its closing fence; the rest waits for more text."""

    def __init__(self) -> None:
        self.pending = ""

    def feed(self, text: str) -> list[str]:
        self.pending += text
        blocks = []
        while (cut := self._cut()) is not None:
            block, self.pending = self.pending[:cut], self.pending[cut:]
            if block.strip():
                blocks.append(block)
        return blocks

    def rest(self) -> str:
        rest, self.pending = self.pending, ""
        return rest

    def _cut(self) -> int | None:
        fence = ""
        start = 0
        text = self.pending
        while (end := text.find("\n", start)) >= 0:
            end += 1
            stripped = text[start:end].strip()
            if fence:
                if stripped.startswith(fence) and stripped.strip(fence[0]) == "":
                    return end
            elif stripped.startswith(FENCES):
                if text[:start].strip():
                    return start  # the text before the fence is a block of its own
                fence = stripped[:3]
            elif not stripped and text[:start].strip():
                return end
            start = end
        return None


class TurnView:
    """The events of the turns, in calls a face implements (the `_show_*` methods)."""

    def __init__(self, root: Any) -> None:
        self.root = root
        self.calls: list[ToolRecord] = []
        self._by_id: dict[str, ToolRecord] = {}
        self._current: ToolRecord | None = None
        self.waiting_since: float | None = None  # a model call sent, no token yet
        self.streamed = False
        self.turn_started = 0.0

    # --- events ---

    def begin_turn(self) -> None:
        self.turn_started = time.monotonic()
        self.waiting_since = self.turn_started
        self.streamed = False

    def on_event(self, event: AgentEvent) -> None:
        data = event.data
        if isinstance(data, LlmStart):
            self.waiting_since = time.monotonic()
            self.streamed = False
        elif isinstance(data, TextDelta):
            self.waiting_since = None
            self.streamed = True
            self._show_text(data.text)
        elif isinstance(data, FinalAnswer):
            self.waiting_since = None
            if not self.streamed and data.text:
                self._show_text(data.text)  # a provider that does not stream
            self._end_text()
        elif isinstance(data, ToolCallStart):
            self.waiting_since = None
            self._end_text()
            record = ToolRecord(
                len(self.calls) + 1,
                data.call_id,
                data.name,
                data.title or data.name,
                dict(data.arguments),
                time.monotonic(),
            )
            self.calls.append(record)
            self._by_id[data.call_id] = record
            self._current = record
        elif isinstance(data, ToolCallEnd):
            ended = self._by_id.get(data.call_id)
            if ended is not None:
                ended.ok, ended.error = data.ok, data.error
                ended.summary, ended.duration_ms = data.summary, data.duration_ms
                self._current = None
                self._show_tool(ended)
        elif isinstance(data, ApprovalAsked):
            self._end_text()
        elif isinstance(data, LlmRetry):
            if data.discarded_chars:
                self._restart_text()
            if data.action == "retry":
                what = f"retrying in {data.delay_s:.1f} s (attempt {data.attempt + 1} of {data.max_attempts})"
            else:
                what = f"trying {data.next_provider}"
            self._show_note(f"{data.provider} failed ({data.kind}): {what}")
        elif isinstance(data, RunError):
            self._end_text()
            self._show_error(f"lich: error: {data.message}")
        elif isinstance(data, PluginWarning):
            self._show_note(f"plugin warning: {data.message}")
        elif isinstance(data, RunEnd):
            self.waiting_since = None
            self._end_text()
            self._show_end(data)

    def on_changes(self, changes: Sequence[FileChange]) -> None:
        """A change set the turn wrote to the disk: its diff, kept on the tool call that made it."""
        for change in changes:
            diff = unified_diff(change, self.root)
            if not diff:
                continue
            if self._current is not None:
                self._current.diffs.append(diff)
            self._show_diff(diff)

    # --- the Output of lich_cli.chat.commands ---

    def show_call(self, number: int) -> None:
        if not 1 <= number <= len(self.calls):
            self.error(
                f"no_such_call: {number} (the calls of this chat are 1 to {len(self.calls)})"
            )
            return
        record = self.calls[number - 1]
        self.info(record.line())
        self._show_json(json.dumps(record.arguments, indent=2, ensure_ascii=False))
        if record.ok is False:
            self.error(record.error or "failed")
        if record.summary:
            self.info(record.summary)
        for diff in record.diffs:
            self._show_diff(diff)

    def info(self, text: str) -> None:
        raise NotImplementedError

    def error(self, text: str) -> None:
        raise NotImplementedError

    # --- what a face draws ---

    def _show_text(self, text: str) -> None: ...
    def _end_text(self) -> None: ...
    def _restart_text(self) -> None: ...
    def _show_tool(self, record: ToolRecord) -> None: ...
    def _show_diff(self, diff: str) -> None: ...
    def _show_json(self, text: str) -> None: ...
    def _show_note(self, text: str) -> None: ...
    def _show_error(self, text: str) -> None: ...
    def _show_end(self, data: RunEnd) -> None: ...


class PlainView(TurnView):
    """Plain text: the answer as it streams, a line per tool call, diffs; errors on `err`."""

    def __init__(self, root: Any, out: TextIO, err: TextIO = sys.stderr) -> None:
        super().__init__(root)
        self.out = out
        self.err = err
        self._needs_newline = False

    def _write(self, text: str) -> None:
        self.out.write(text)
        self.out.flush()

    def _show_text(self, text: str) -> None:
        self._write(text)
        self._needs_newline = not text.endswith("\n")

    def _end_text(self) -> None:
        if self._needs_newline:
            self._write("\n")
            self._needs_newline = False

    def _restart_text(self) -> None:
        self._end_text()
        self._write("(the answer restarts)\n")

    def _show_tool(self, record: ToolRecord) -> None:
        self._write(f"  {record.line()}\n")

    def _show_diff(self, diff: str) -> None:
        self._end_text()
        self._write(diff)

    def _show_json(self, text: str) -> None:
        self._write(text + "\n")

    def _show_note(self, text: str) -> None:
        self._end_text()
        self._write(f"lich: {text}\n")

    def _show_error(self, text: str) -> None:
        self._end_text()
        self.err.write(text + "\n")
        self.err.flush()

    def _show_end(self, data: RunEnd) -> None:
        if data.stopped_reason != "final":
            self._write(f"lich: turn {data.stopped_reason}\n")

    def info(self, text: str) -> None:
        self._end_text()
        self._write(text + "\n")

    def error(self, text: str) -> None:
        self._show_error(text)


class TerminalView(TurnView):
    """rich on the terminal (through prompt_toolkit's patched stdout: above the prompt)."""

    def __init__(self, root: Any) -> None:
        super().__init__(root)
        from rich.console import Console

        # The stream is looked up at each print: prompt_toolkit's proxy while the prompt runs.
        # The width is the terminal's at each print: an exported COLUMNS (which rich would
        # prefer) is stale after the first resize.
        environ = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
        self.console = Console(
            force_terminal=True, highlight=False, soft_wrap=False, _environ=environ
        )
        self.blocks = BlockSplitter()

    def pending_text(self) -> str:
        return self.blocks.pending

    def _print_markdown(self, block: str) -> None:
        from rich.markdown import Markdown

        self.console.print(Markdown(block, code_theme="monokai"))

    def _show_text(self, text: str) -> None:
        for block in self.blocks.feed(text):
            self._print_markdown(block)

    def _end_text(self) -> None:
        rest = self.blocks.rest()
        if rest.strip():
            self._print_markdown(rest)

    def _restart_text(self) -> None:
        self.blocks.rest()
        self.console.print("[dim](the answer restarts below)[/dim]")

    def _show_tool(self, record: ToolRecord) -> None:
        style = "green" if record.ok else "red"
        mark = "✓" if record.ok else "✗"
        self.console.print(f"[{style}]{mark}[/{style}] {_escape(record.line())}")

    def _show_diff(self, diff: str) -> None:
        from rich.syntax import Syntax

        self.console.print(Syntax(diff.rstrip("\n"), "diff", theme="ansi_dark", word_wrap=True))

    def _show_json(self, text: str) -> None:
        from rich.syntax import Syntax

        self.console.print(Syntax(text, "json", theme="ansi_dark", word_wrap=True))

    def _show_note(self, text: str) -> None:
        self.console.print(f"[dim]lich: {_escape(text)}[/dim]")

    def _show_error(self, text: str) -> None:
        self.console.print(f"[red]{_escape(text)}[/red]")

    def _show_end(self, data: RunEnd) -> None:
        took = time.monotonic() - self.turn_started
        usage = data.usage
        reason = "" if data.stopped_reason == "final" else f"{data.stopped_reason} · "
        self.console.print(
            f"[dim]— {reason}{data.turns_used} model call(s) · {took:.1f} s · tokens in "
            f"{usage.input_tokens}, out {usage.output_tokens}[/dim]"
        )

    def show_question(self, question: str, answers: str) -> None:
        self.console.print(f"[bold yellow]?[/bold yellow] {_escape(question)}")
        self.console.print(f"  {_escape(answers)}")

    def info(self, text: str) -> None:
        self.console.print(_escape(text))

    def error(self, text: str) -> None:
        self._show_error(text)


def _escape(text: str) -> str:
    from rich.markup import escape

    return escape(text)


def _one_line(text: str, limit: int) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"
