"""edit_file: exact-match string replacement through the Workspace.

The model must quote the text it replaces exactly; an ambiguous quote is refused unless it asks
for every occurrence. Besides the new text, the change carries the minimal line-range
replacements (`line_replacements`, the one function every producer uses), so an editor shows
(and undoes) a one-line fix as a one-line edit.
"""

from __future__ import annotations

import os
from typing import Any

from lich_core.errors import ToolError
from lich_core.hashline.replacements import line_replacements, split_keep_newline
from lich_core.tools.file_text import write_changes
from lich_core.tools.guard import (
    capture_errors,
    optional_bool_arg,
    relative_to_root,
    require_raw_string_arg,
    require_string_arg,
    resolve_file_for,
)
from lich_core.tools.types import FunctionTool, ToolContext
from lich_core.vocabulary import ToolResult
from lich_core.workspace import FileChange

# Byte offsets [start, end) of one occurrence in the old text.
Span = tuple[int, int]


def find_spans(text: str, needle: str) -> list[Span]:
    """Non-overlapping occurrences, left to right (the same ones str.replace would replace)."""
    spans: list[Span] = []
    start = text.find(needle)
    while start != -1:
        spans.append((start, start + len(needle)))
        start = text.find(needle, start + len(needle))
    return spans


@capture_errors
async def edit_file(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    target = require_string_arg(args, "path")
    old = require_raw_string_arg(args, "old_string")
    new = require_raw_string_arg(args, "new_string")
    if old == "":
        raise ToolError(
            "missing_arg: old_string (it must quote the text to replace; use write_file to create a file)"
        )
    replace_all = optional_bool_arg(args, "replace_all", False)
    path = resolve_file_for(ctx, target, write=True)
    rel = relative_to_root(ctx.work_dir, path)
    if os.path.isdir(path):
        raise ToolError(f"is_directory: {rel} is a directory")
    assert ctx.workspace is not None
    if not ctx.workspace.exists(path):
        raise ToolError(f"not_found: {rel}")
    text = ctx.workspace.read_text(path)

    spans = find_spans(text, old)
    if not spans:
        raise ToolError(
            f"old_string_not_found: the text to replace does not occur in {rel}; read the file and quote it exactly"
        )
    if len(spans) > 1 and not replace_all:
        raise ToolError(
            f"old_string_not_unique ({len(spans)}): the text occurs {len(spans)} times in {rel}; "
            "quote more surrounding lines or pass replace_all"
        )
    if old == new:
        raise ToolError("no_change: old_string and new_string are identical")

    # Built from the spans found above (the occurrences the checks counted).
    pieces: list[str] = []
    cursor = 0
    for start, end in spans:
        pieces.append(text[cursor:start])
        pieces.append(new)
        cursor = end
    pieces.append(text[cursor:])
    new_text = "".join(pieces)
    replacements = line_replacements(text, new_text)
    change = FileChange(
        path=path,
        kind="write",
        new_text=new_text,
        base_text=text,
        replacements=replacements,
    )
    await write_changes(ctx, [change])

    removed = sum(r.end - r.start for r in replacements)
    added = sum(len(split_keep_newline(r.text)) for r in replacements)
    count = len(spans)
    noun = "occurrence" if count == 1 else "occurrences"
    return ToolResult(
        ok=True,
        output=f"Edited {rel}: replaced {count} {noun} (+{added} -{removed} lines)",
        details={
            "path": rel,
            "abs_path": str(path),
            "prior_content": text,
            "replacements": count,
        },
    )


TOOL = FunctionTool(
    name="edit_file",
    description=("Replace old_string (exact, unique unless replace_all) with new_string."),
    parameters={
        "type": "object",
        "properties": {
            "path": {
                "type": "string",
            },
            "old_string": {
                "type": "string",
            },
            "new_string": {
                "type": "string",
            },
            "replace_all": {
                "type": "boolean",
                "default": False,
            },
        },
        "required": ["path", "old_string", "new_string"],
        "additionalProperties": False,
    },
    run=edit_file,
    capability="file/edit",
)
