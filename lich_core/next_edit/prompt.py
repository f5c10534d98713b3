"""The prompts a next-edit model is asked, and reading its answer.

The excerpt is the document around the cursor with an editable region (a few lines above and
below the cursor, bounded in characters) between EDITABLE_START and EDITABLE_END, the cursor
as CURSOR, and START_OF_FILE when the excerpt starts at the file's first line: the markers
Zed's open Zeta model was trained on. The model answers the rewritten region between the same
two markers; whatever it says outside them is ignored.
"""

from __future__ import annotations

from dataclasses import dataclass

EDITABLE_START = "<|editable_region_start|>"
EDITABLE_END = "<|editable_region_end|>"
CURSOR = "<|user_cursor_is_here|>"
START_OF_FILE = "<|start_of_file|>"
MARKERS = (EDITABLE_START, EDITABLE_END, CURSOR, START_OF_FILE)

# The editable region: lines around the cursor's line, at most this many characters.
REGION_LINES_ABOVE = 10
REGION_LINES_BELOW = 20
REGION_MAX_CHARS = 6_000
# Read-only context lines around the region, at most this many characters each side.
CONTEXT_LINES = 20
CONTEXT_MAX_CHARS = 3_000
# The recent edits' part of a prompt, at most.
EDITS_MAX_CHARS = 6_000

# Zeta's instruction, as the model was trained on it (its model card documents the prompt).
ZETA_INSTRUCTION = (
    "You are a code completion assistant and your task is to analyze user edits and then "
    "rewrite an excerpt that the user provides, suggesting the appropriate edits within the "
    "excerpt, taking into account the cursor location."
)

CHAT_INSTRUCTION = f"""You predict the next edit a programmer will make.

You are shown the programmer's recent edits (unified diffs, oldest first) and an excerpt of the \
file they are in. Inside the excerpt, the lines between {EDITABLE_START} and {EDITABLE_END} are \
the editable region; {CURSOR} marks the cursor.

Rewrite the editable region with the edits the programmer is most likely to make next: finish \
what their recent edits started (a renamed name used elsewhere, a changed signature's callers, a \
pattern repeated on the next lines). Do not undo their recent edits. Keep everything else exactly \
as it is, indentation included. When no edit is likely, return the region unchanged.

Reply with the rewritten region only: {EDITABLE_START} on its own line, the region's lines, then \
{EDITABLE_END} on its own line. No explanation, no code fence, no {CURSOR} marker."""


@dataclass(frozen=True)
class Excerpt:
    """Offsets (code points) into `text`: the excerpt [start, end), the editable region
    [region_start, region_end) inside it (whole lines), and the cursor inside the region."""

    path: str
    text: str
    start: int
    end: int
    region_start: int
    region_end: int
    cursor: int

    @property
    def region(self) -> str:
        return self.text[self.region_start : self.region_end]


def _line_starts(text: str) -> list[int]:
    starts = [0]
    for line in text.splitlines(keepends=True):
        starts.append(starts[-1] + len(line))
    return starts  # the last entry is len(text)


def excerpt_around(
    path: str,
    text: str,
    cursor: int,
    *,
    lines_above: int = REGION_LINES_ABOVE,
    lines_below: int = REGION_LINES_BELOW,
    region_max_chars: int = REGION_MAX_CHARS,
) -> Excerpt:
    """The excerpt and editable region around `cursor` (a code point offset into `text`)."""
    cursor = max(0, min(cursor, len(text)))
    starts = _line_starts(text)
    lines = len(starts) - 1
    row = 0
    while row + 1 < lines and starts[row + 1] <= cursor:
        row += 1
    first, last = row, min(row + 1, lines)  # region lines [first, last)
    # Grow one line at a time, below first (what follows the cursor is what gets edited next),
    # while the region stays within its bound.
    while True:
        grew = False
        for below in (True, False):
            if below and last < lines and last - row < lines_below + 1:
                if starts[last + 1] - starts[first] <= region_max_chars:
                    last += 1
                    grew = True
            if not below and first > 0 and row - first < lines_above:
                if starts[last] - starts[first - 1] <= region_max_chars:
                    first -= 1
                    grew = True
        if not grew:
            break
    start_line = first
    while start_line > 0 and first - start_line < CONTEXT_LINES:
        if starts[first] - starts[start_line - 1] > CONTEXT_MAX_CHARS:
            break
        start_line -= 1
    end_line = last
    while end_line < lines and end_line - last < CONTEXT_LINES:
        if starts[end_line + 1] - starts[last] > CONTEXT_MAX_CHARS:
            break
        end_line += 1
    return Excerpt(
        path=path,
        text=text,
        start=starts[start_line],
        end=starts[end_line],
        region_start=starts[first],
        region_end=starts[last],
        cursor=cursor,
    )


def _close_line(text: str) -> str:
    return text if not text or text.endswith("\n") else text + "\n"


def excerpt_text(excerpt: Excerpt) -> str:
    """The excerpt with its markers, in a code fence named after the file."""
    text = excerpt.text
    head = START_OF_FILE + "\n" if excerpt.start == 0 else ""
    region = (
        text[excerpt.region_start : excerpt.cursor]
        + CURSOR
        + text[excerpt.cursor : excerpt.region_end]
    )
    return (
        f"```{excerpt.path}\n{head}{text[excerpt.start : excerpt.region_start]}"
        f"{EDITABLE_START}\n{_close_line(region)}{EDITABLE_END}\n"
        f"{_close_line(text[excerpt.region_end : excerpt.end])}```"
    )


def zeta_prompt(events: str, excerpt: Excerpt) -> str:
    """The prompt Zeta is asked with (a plain completion: the model goes on after it)."""
    return (
        f"### Instruction:\n{ZETA_INSTRUCTION}\n\n"
        f"### User Edits:\n\n{events}\n\n"
        f"### User Excerpt:\n\n{excerpt_text(excerpt)}\n\n"
        "### Response:\n\n"
    )


def chat_prompt(events: str, excerpt: Excerpt) -> str:
    """The one user message a chat model is asked with."""
    edits = events or "(none yet)"
    return (
        f"{CHAT_INSTRUCTION}\n\nRecent edits:\n\n{edits}\n\n"
        f"The file {excerpt.path}:\n\n{excerpt_text(excerpt)}\n"
    )


def region_closed(answer: str) -> bool:
    """Whether the answer so far holds a whole region (the rest need not be read)."""
    start = answer.find(EDITABLE_START)
    return start >= 0 and answer.find(EDITABLE_END, start + len(EDITABLE_START)) >= 0


def parse_answer(answer: str, excerpt: Excerpt) -> str | None:
    """The rewritten region from the model's answer: the text between the two markers, without
    a cursor marker, in the region's own line endings; None when the answer has no whole region."""
    start = answer.find(EDITABLE_START)
    if start < 0:
        return None
    start += len(EDITABLE_START)
    end = answer.find(EDITABLE_END, start)
    if end < 0:
        return None
    region = answer[start:end].replace(CURSOR, "")
    if region.startswith("\r\n"):
        region = region[2:]
    elif region.startswith("\n"):
        region = region[1:]
    original = excerpt.region
    if original.strip() and not region.strip():
        return None  # the whole region gone: a confused answer, not an edit to offer
    if original and not original.endswith("\n") and region.endswith("\n"):
        region = region[:-1]  # the prompt closed the file's last line for the marker
    elif original.endswith("\n") and region and not region.endswith("\n"):
        region += "\n"  # the marker right after the last line: it still ends the line
    if "\r\n" in original and "\r\n" not in region:
        region = region.replace("\n", "\r\n")
    if any(marker in region for marker in MARKERS):
        return None  # a confused answer: markers inside the region
    return region
