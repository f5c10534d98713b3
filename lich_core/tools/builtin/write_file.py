"""write_file: replace a file's whole text (or create it) through the Workspace."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from lich_core.errors import ToolError
from lich_core.tools.file_text import write_changes
from lich_core.tools.guard import (
    capture_errors,
    relative_to_root,
    require_raw_string_arg,
    require_string_arg,
    resolve_file_for,
)
from lich_core.tools.types import FunctionTool, ToolContext
from lich_core.vocabulary import ToolResult
from lich_core.workspace import FileChange, Workspace


def current_text_or_none(workspace: Workspace, path: Path) -> str | None:
    """The file's current text as the workspace sees it (an open buffer wins), None if absent."""
    if not workspace.exists(path):
        return None
    try:
        return workspace.read_text(path)
    except FileNotFoundError:
        return None


@capture_errors
async def write_file(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    target = require_string_arg(args, "path")
    content = require_raw_string_arg(args, "content")
    path = resolve_file_for(ctx, target, write=True)
    rel = relative_to_root(ctx.work_dir, path)
    if os.path.isdir(path):
        raise ToolError(f"is_directory: {rel} is a directory; give a file path")
    assert ctx.workspace is not None
    prior = current_text_or_none(ctx.workspace, path)
    # A new file is one replacement of the whole text; an overwrite replaces only changed lines.
    change = FileChange.write(path, content, prior)
    # EditRejected is a ToolError whose text already reads "edit_rejected: ...".
    await write_changes(ctx, [change])
    note = "" if prior is not None else " (new file)"
    return ToolResult(
        ok=True,
        output=f"Wrote {len(content)} chars to {rel}{note}",
        details={"path": rel, "abs_path": str(path), "prior_content": prior},
    )


TOOL = FunctionTool(
    name="write_file",
    description=(
        "Write a whole file (parent directories created). For small edits prefer apply_patch."
    ),
    parameters={
        "type": "object",
        "properties": {
            "path": {
                "type": "string",
            },
            "content": {
                "type": "string",
            },
        },
        "required": ["path", "content"],
        "additionalProperties": False,
    },
    run=write_file,
    capability="file/write",
)
