"""@-mentions in a prompt: `@path` attaches a file's anchored rows, `@path:12-40` a line range,
`@problems` the diagnostics the editor reported for the open files.

The rows are the ones read_file shows (`LINE:HH|text`), taken from the editor's buffer when the
file is open, and the file is recorded as read, so the model can patch it without reading it
first. A mention is read through the read guard for lich's own prompts
(lich_core.tools.prompt_files): inside the root (`..`, absolute paths elsewhere and links out
are refused), not on the read tools' deny list (`.lich/config.json`), not a secret file (`.env`)
nor version-control metadata (`.git/config`), by its name or where a link leads, and from the
disk a regular file only, opened without waiting (a FIFO never hangs the caller). A mention that
is refused or does not resolve stays in the prompt as text; the context tells the model to say
so, and the face names it to the user (`MentionContext.notes`, each `@text: prefix: why`). Huge
and binary files are refused, long ones truncated, each with a note.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from lich_core.errors import ToolError
from lich_core.hashline.anchors import render_rows, split_lines
from lich_core.hashline.read_state import ReadState
from lich_core.tools.file_text import MAX_FILE_BYTES
from lich_core.tools.guard import relative_to_root
from lich_core.tools.prompt_files import open_prompt_file, resolve_prompt_file
from lich_core.workspace import decode_text

MENTION_MAX_LINES = 400
MENTION_MAX_BYTES = 48 * 1024
MENTIONS_MAX = 10
BINARY_SNIFF_BYTES = 8 * 1024
PROBLEMS = "problems"
# A mention starts the prompt or follows whitespace or `(` (so a@b.c is an address, not a
# mention); the path is a run of non-space characters, an optional `:a` or `:a-b` range after it.
_MENTION = re.compile(r"(?<![^\s(])@([^\s@`'\"]+)")
_RANGE = re.compile(r":(\d+)(?:-(\d+))?$")
# Prose punctuation after a mention ("see @a.py, then") is not part of the path.
_TRAILING = ".,;:!?)]}>"
ROWS_NOTE = "rows are LINE:HASH|content; the hashes are valid anchors for apply_patch"
NO_EDITOR_PROBLEMS = "@problems: no diagnostics available outside the editor"


@dataclass(frozen=True)
class Mention:
    """One `@...` in a prompt: the text as written, the path, and the 1-based inclusive range."""

    text: str
    path: str
    start: int | None = None
    end: int | None = None

    @property
    def is_problems(self) -> bool:
        return self.path == PROBLEMS and self.start is None


def parse_mentions(prompt: str) -> list[Mention]:
    """The mentions in `prompt`, in order, each once."""
    found: dict[str, Mention] = {}
    for match in _MENTION.finditer(prompt):
        word = match.group(1).rstrip(_TRAILING)
        if not word:
            continue
        start = end = None
        ranged = _RANGE.search(word)
        if ranged:
            start = int(ranged.group(1))
            end = int(ranged.group(2)) if ranged.group(2) else start
            path = word[: ranged.start()]
        else:
            path = word
        if path and word not in found:
            found[word] = Mention("@" + word, path, start, end)
    return list(found.values())


class MentionSource(Protocol):
    """Where a mention's text comes from: the editor's buffers over the disk (DocumentStore)."""

    def has_buffer(self, path: Path) -> bool: ...

    def current_text(self, path: Path) -> str | None: ...


class DiskSource:
    """The disk alone (the CLI: no editor buffers). resolve_mentions reads a file without a
    buffer itself, through the read guard, so this source is never asked for text."""

    def has_buffer(self, path: Path) -> bool:
        return False

    def current_text(self, path: Path) -> str | None:
        return None


@dataclass
class MentionContext:
    """The attachments for the first message's context, the notes on mentions left as text, and
    the files attached (recorded as read)."""

    attachments: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    paths: list[Path] = field(default_factory=list)

    def text(self) -> str:
        parts = list(self.attachments)
        if self.notes:
            parts.append(
                "Mentions not attached (they stay text in the prompt; tell the user in your "
                "answer that these were not attached and why):\n"
                + "\n".join(f"- {note}" for note in self.notes)
            )
        return "\n\n".join(parts)


def resolve_mentions(
    prompt: str,
    root: Path,
    source: MentionSource,
    *,
    read_state: ReadState | None = None,
    problems: Callable[[], str] | None = None,
) -> MentionContext:
    """Attach what the prompt's mentions name; record the attached files in `read_state`.

    `problems` renders the diagnostics known for the open files for `@problems` (the language
    server's; without it, the context says none are available outside the editor)."""
    result = MentionContext()
    mentions = parse_mentions(prompt)
    for index, mention in enumerate(mentions):
        if index >= MENTIONS_MAX:
            result.notes.append(
                f"{mention.text}: invalid_arg: more than {MENTIONS_MAX} mentions in one prompt"
            )
            continue
        if mention.is_problems:
            # Not a file: the editor's diagnostics, which only the language server knows.
            result.attachments.append(problems() if problems is not None else NO_EDITOR_PROBLEMS)
            continue
        try:
            path, attachment = _attach(mention, root, source)
        except ToolError as err:
            result.notes.append(f"{mention.text}: {err}")
            continue
        result.attachments.append(attachment)
        result.paths.append(path)
        if read_state is not None:
            read_state.record(path)
    return result


def _attach(mention: Mention, root: Path, source: MentionSource) -> tuple[Path, str]:
    # The names first, for a buffer too: an open `.lich/config.json` is not sent either.
    path = resolve_prompt_file(root, mention.path)
    rel = relative_to_root(root, path)
    text = source.current_text(path) if source.has_buffer(path) else _disk_text(root, path, rel)
    if text is None:
        raise ToolError(f"not_found: {rel}")
    if "\0" in text[:BINARY_SNIFF_BYTES]:
        raise ToolError(f"binary_file: {rel} looks binary (a NUL byte in its first 8 KB)")
    lines = split_lines(text)
    total = len(lines)
    if total == 0:
        return path, f"Mentioned file {rel} (empty)."
    first = mention.start or 1
    last = min(mention.end or total, total)
    if first > total:
        raise ToolError(f"out_of_range: line {first} is past the end of {rel} ({total} lines)")
    if last < first:
        raise ToolError(f"out_of_range: {mention.text} ends before it starts")
    shown_last = min(last, first + MENTION_MAX_LINES - 1)
    budget = MENTION_MAX_BYTES
    kept = 0
    for line in lines[first - 1 : shown_last]:
        budget -= len(line.encode("utf-8", "surrogatepass")) + len(str(first + kept)) + 5
        if budget < 0 and kept:
            break
        kept += 1
    shown_last = first + kept - 1
    rows = render_rows(lines[first - 1 : shown_last], first)
    header = f"Mentioned file {rel}, lines {first}-{shown_last} of {total} ({ROWS_NOTE}):"
    body = f"{header}\n{rows}"
    if shown_last < last:
        body += (
            f"\n(truncated: the mention limit is {MENTION_MAX_LINES} lines or "
            f"{MENTION_MAX_BYTES // 1024} KB; read on with read_file start={shown_last + 1})"
        )
    return path, body


def _disk_text(root: Path, path: Path, rel: str) -> str:
    """The file's text from the disk, through the read guard (a regular file inside the root,
    opened without waiting), refusing one over the read limit before reading it."""
    try:
        fd = open_prompt_file(root, path)
    except ToolError as err:
        if str(err).startswith("is_directory:"):
            raise ToolError(f"is_directory: {rel} is a directory; mention a file") from None
        raise
    with os.fdopen(fd, "rb") as handle:
        size = os.fstat(handle.fileno()).st_size
        if size > MAX_FILE_BYTES:
            raise ToolError(f"file_too_large: {rel} is {size} bytes, over the 2 MiB read limit")
        data = handle.read(MAX_FILE_BYTES + 1)
    if len(data) > MAX_FILE_BYTES:  # it grew since the stat
        raise ToolError(f"file_too_large: {rel} is over the 2 MiB read limit")
    return decode_text(data)


def mention_candidates(root: Path, prefix: str, *, limit: int) -> list[str]:
    """Paths under `root` (relative, `/`-separated) whose path starts with `prefix` or whose file
    name contains it, for a UI's completion; the find_files walk, bounded in entries and time."""
    # Imported here: the builtin tools package is not on the language server's start-up path,
    # and only a completion request needs the walk (the layer test counts this import too).
    from lich_core.tools.builtin.find_files import GlobMatcher, walk

    needle = prefix.lstrip("@").lower()
    result = walk(str(root), "", GlobMatcher(["**", "*"]))
    starts: list[str] = []
    contains: list[str] = []
    for rel in result.paths:
        low = rel.lower()
        if low.startswith(needle):
            starts.append(rel)
        elif needle and needle in low.rsplit("/", 1)[-1]:
            contains.append(rel)
    starts.sort(key=lambda p: (p.count("/"), p))
    contains.sort(key=lambda p: (p.count("/"), p))
    return (starts + contains)[:limit]
