"""What a completion is given and what is kept of its answer: pure functions over strings.

- `cursor_windows`: the text before and after the cursor, bounded, cut at line boundaries;
- `rank_snippets` (over `document_windows`): the pieces of other open documents most like the cursor's surroundings
  (Copilot's "neighbouring tabs"), by the overlap of their identifier sets;
- `cut_to_block`: the multi-line policy, keeping the answer inside the block the cursor is in;
- `trim_suffix_overlap`: dropping what the answer repeats of the text after the cursor;
- `typed_through`: what is left of an earlier suggestion once the user typed its first
  characters (answered without asking the model again).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from lich_core.completion.model import Snippet

SNIPPET_LINES = 20
SNIPPETS_MAX = 3
SNIPPET_MAX_CHARS = 1_500
# Below this share of shared identifiers a snippet is noise, not context.
SNIPPET_MIN_SIMILARITY = 0.1
# Documents looked at for snippets, and characters read of each (a huge buffer is cut).
NEIGHBOURS_MAX = 20
NEIGHBOUR_MAX_CHARS = 100_000
COMPLETION_MAX_LINES = 30
CLOSING_BRACKETS = ")]}"
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]+")


def cursor_windows(text: str, offset: int, prefix_chars: int, suffix_chars: int) -> tuple[str, str]:
    """(prefix, suffix) around code point `offset`: at most `prefix_chars` before it, starting at
    a line start when the window cuts into the text, and at most `suffix_chars` after it, ending
    at a line end when it cuts."""
    offset = max(0, min(offset, len(text)))
    start = max(0, offset - prefix_chars)
    if start > 0:
        newline = text.find("\n", start, offset)
        start = newline + 1 if newline >= 0 else start
    end = min(len(text), offset + suffix_chars)
    if end < len(text):
        newline = text.rfind("\n", offset, end)
        end = newline + 1 if newline >= 0 else end
    return text[start:offset], text[offset:end]


def identifiers(text: str) -> set[str]:
    return set(_IDENTIFIER.findall(text))


Window = tuple[str, frozenset[str]]  # a snippet candidate and its identifiers


def document_windows(text: str) -> list[Window]:
    """A document's candidate snippets: windows of SNIPPET_LINES lines, half overlapping, each
    with its identifiers (a caller keeps them per document version: they are the costly part)."""
    lines = text[:NEIGHBOUR_MAX_CHARS].splitlines(keepends=True)
    step = SNIPPET_LINES // 2
    windows: list[Window] = []
    for first in range(0, max(len(lines) - step, 1), step):
        window = "".join(lines[first : first + SNIPPET_LINES])
        found = identifiers(window)
        if found:
            windows.append((window[:SNIPPET_MAX_CHARS], frozenset(found)))
    return windows


def rank_snippets(
    around_cursor: str,
    windows_by_path: Iterable[tuple[str, list[Window]]],
    *,
    limit: int = SNIPPETS_MAX,
) -> tuple[Snippet, ...]:
    """The `limit` windows sharing the most identifiers with `around_cursor` (Jaccard
    similarity), at most one per document, best first; none below SNIPPET_MIN_SIMILARITY."""
    wanted = identifiers(around_cursor)
    if not wanted:
        return ()
    scored: list[tuple[float, str, str]] = []
    for count, (path, windows) in enumerate(windows_by_path):
        if count >= NEIGHBOURS_MAX:
            break
        best: tuple[float, str] | None = None
        size = len(wanted)
        for window, found in windows:
            shared = len(wanted & found)
            # Jaccard similarity without building the union set (one per window).
            score = shared / (size + len(found) - shared)
            if best is None or score > best[0]:
                best = (score, window)
        if best is not None and best[0] >= SNIPPET_MIN_SIMILARITY:
            scored.append((best[0], path, best[1]))
    scored.sort(key=lambda item: -item[0])
    return tuple(Snippet(path, text) for _, path, text in scored[:limit])


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" \t"))


def cut_to_block(completion: str, prefix: str) -> tuple[str, bool]:
    """(what is kept of `completion` under the multi-line policy, whether it was cut).

    The rest of the cursor's line is always kept. Further lines are kept while they stay in the
    block the cursor is in: after code on the cursor's line, the lines indented deeper than it
    (the body it opens) and one closing bracket line at its indentation; on a line blank up to
    the cursor, the lines indented at least as deep. Trailing blank lines go, and at most
    COMPLETION_MAX_LINES lines are kept."""
    cursor_line = prefix[prefix.rfind("\n") + 1 :]
    base = _indent(cursor_line)
    opens_body = bool(cursor_line.strip())
    lines = completion.split("\n")
    kept = [lines[0]]
    cut = False
    for line in lines[1:]:
        if len(kept) >= COMPLETION_MAX_LINES:
            cut = True
            break
        if not line.strip():
            kept.append(line)
            continue
        depth = _indent(line)
        if depth > base or (not opens_body and depth == base):
            kept.append(line)
            continue
        if opens_body and depth == base and line.strip()[0] in CLOSING_BRACKETS:
            kept.append(line)
        cut = True
        break
    while len(kept) > 1 and not kept[-1].strip():
        kept.pop()
    return "\n".join(kept), cut


def trim_suffix_overlap(completion: str, suffix: str) -> str:
    """`completion` without the end it shares with the start of the cursor's line after it
    (the model re-typed the `)` already there); empty when the suggestion only repeats it."""
    rest_of_line = suffix.split("\n", 1)[0]
    if not rest_of_line.strip():
        return completion
    if rest_of_line.startswith(completion):
        return ""
    for size in range(min(len(rest_of_line), len(completion)), 0, -1):
        if completion.endswith(rest_of_line[:size]):
            return completion[:-size]
    return completion


def typed_through(earlier_prefix: str, suggestion: str, prefix: str) -> str | None:
    """What is left of `suggestion` (made for `earlier_prefix`) now that the text before the
    cursor is `prefix`: the user typed its first characters. None when the user typed something
    else, went back, or typed all of it."""
    if len(prefix) <= len(earlier_prefix) or not prefix.startswith(earlier_prefix):
        return None
    typed = prefix[len(earlier_prefix) :]
    if not suggestion.startswith(typed) or len(typed) >= len(suggestion):
        return None
    return suggestion[len(typed) :]
