"""How `lich demo` prints what happens: one labelled line per step, edits as unified diffs.

Colour only when the output is a terminal and NO_COLOR (https://no-color.org) is not set, unless
`--color always|never` says otherwise. The progress line (the server's work-done progress, what
an editor shows in its status bar) is redrawn in place on a terminal and printed as ordinary
lines elsewhere, so a log or a pipe keeps every step.
"""

from __future__ import annotations

import difflib
import os
from typing import TextIO

RESET = "\033[0m"
STYLES = {
    "bold": "\033[1m",
    "dim": "\033[2m",
    "red": "\033[31m",
    "green": "\033[32m",
    "yellow": "\033[33m",
    "blue": "\033[34m",
    "magenta": "\033[35m",
    "cyan": "\033[36m",
}
CLEAR_LINE = "\r\033[K"
# Step labels, padded to one width so the text of every step starts in the same column.
LABEL_WIDTH = 10


def use_colour(stream: TextIO, choice: str = "auto", env: dict[str, str] | None = None) -> bool:
    """`always`, `never`, or (auto) a terminal without NO_COLOR set to anything non-empty."""
    if choice == "always":
        return True
    if choice == "never":
        return False
    environ = os.environ if env is None else env
    if environ.get("NO_COLOR"):
        return False
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


class Printer:
    """Writes the demo's steps to `out`; `live` (a terminal) redraws the progress line in place."""

    def __init__(self, out: TextIO, *, colour: bool, live: bool) -> None:
        self.out = out
        self.colour = colour
        self.live = live
        self._progress_shown = False
        self._last_progress = ""

    def style(self, text: str, *names: str) -> str:
        if not self.colour or not names:
            return text
        return "".join(STYLES[name] for name in names) + text + RESET

    def _clear_progress(self) -> None:
        if self._progress_shown:
            self.out.write(CLEAR_LINE)
            self._progress_shown = False

    def line(self, text: str = "") -> None:
        self._clear_progress()
        self.out.write(text + "\n")
        self._redraw_progress()
        self.out.flush()

    def step(self, label: str, text: str, *styles: str) -> None:
        """One step: `label` in a fixed-width column, then the text (continuation lines indented)."""
        head = self.style(label.ljust(LABEL_WIDTH), *(styles or ("bold",)))
        first, *rest = text.split("\n") if text else [""]
        self.line(f"{head}{first}")
        for more in rest:
            self.line(" " * LABEL_WIDTH + more)

    def progress(self, text: str, logged: str | None = None) -> None:
        """The progress line now says `text`. Off a terminal it is not redrawn: `logged`, when
        given, is printed as a line instead (a milestone such as a new turn)."""
        if not text or text == self._last_progress:
            return
        self._last_progress = text
        if self.live:
            self._clear_progress()
            self._redraw_progress()
            self.out.flush()
        elif logged:
            self.line(self.style(f"{'progress'.ljust(LABEL_WIDTH)}{logged}", "dim"))

    def end_progress(self, logged: str | None = None) -> None:
        self._clear_progress()
        self._last_progress = ""
        if logged and not self.live:
            self.line(self.style(f"{'progress'.ljust(LABEL_WIDTH)}{logged}", "dim"))
        self.out.flush()

    def _redraw_progress(self) -> None:
        if self.live and self._last_progress and not self._progress_shown:
            self.out.write(self.style(f"... {self._last_progress}", "dim"))
            self._progress_shown = True

    def diff(self, path: str, before: str, after: str, *, created: bool = False) -> None:
        """A unified diff of one file's change (red removals, green additions, cyan hunks)."""
        for row in unified_diff(path, before, after, created=created):
            if row.startswith(("---", "+++")):
                self.line(self.style(row, "bold"))
            elif row.startswith("@@"):
                self.line(self.style(row, "cyan"))
            elif row.startswith("+"):
                self.line(self.style(row, "green"))
            elif row.startswith("-"):
                self.line(self.style(row, "red"))
            else:
                self.line(row)


def unified_diff(path: str, before: str, after: str, *, created: bool = False) -> list[str]:
    """`diff -u` rows for one file, without trailing newlines; a missing final newline is marked."""
    old = before.splitlines(keepends=True)
    new = after.splitlines(keepends=True)
    rows = []
    for row in difflib.unified_diff(
        old,
        new,
        fromfile="/dev/null" if created else f"a/{path}",
        tofile=f"b/{path}",
        lineterm="\n",
    ):
        if row.endswith("\n"):
            rows.append(row[:-1])
        else:
            rows.append(row)
            rows.append("\\ No newline at end of file")
    return rows
