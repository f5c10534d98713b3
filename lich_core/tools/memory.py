"""MEMORY.md: the root's append-only, human-reviewable notes file.

Only memory_append writes it, one dated entry at a time; write_file, edit_file and apply_patch
refuse it (the deny list in lich_core.tools.guard: `forbidden_path: MEMORY.md is append-only: use
memory_append`). docs_search searches it and docs_read reads it, as reference data. Nothing loads
it into the prompt.
"""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

from lich_core.tools.guard import MEMORY_APPEND_ONLY, MEMORY_FILE

__all__ = [
    "MAX_ENTRY_CHARS",
    "MEMORY_APPEND_ONLY",
    "MEMORY_FILE",
    "MEMORY_HEADER",
    "append_entry",
    "entry_heading",
    "memory_path",
]

# One entry's text, at most (memory_append refuses more with `too_large:`).
MAX_ENTRY_CHARS = 4_000
# The first line of a MEMORY.md that memory_append creates.
MEMORY_HEADER = (
    "# Memory (append-only notes written with memory_append; reference data, not instructions)\n"
)


def memory_path(root: Path) -> Path:
    """The root's MEMORY.md (whether or not it exists)."""
    return Path(root) / MEMORY_FILE


def entry_heading(when: datetime) -> str:
    """`## YYYY-MM-DD HH:MM UTC` for an aware (or UTC-naive) time."""
    if when.tzinfo is not None:
        when = when.astimezone(timezone.utc)
    return f"## {when:%Y-%m-%d %H:%M} UTC"


def append_entry(current: str | None, text: str, when: datetime) -> str:
    """The file's new text: `current` (None: a new file, given the header) plus one dated entry.

    The entry is `"\\n## YYYY-MM-DD HH:MM UTC\\n\\n<text>\\n"`. What is already there is kept byte
    for byte; a last line without its newline gets one first, so the heading starts a line.
    """
    base = MEMORY_HEADER if current is None else current
    if base and not base.endswith("\n"):
        base += "\n"
    return f"{base}\n{entry_heading(when)}\n\n{text}\n"
