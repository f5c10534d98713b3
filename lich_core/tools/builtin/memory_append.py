"""memory_append: add one dated entry to the root's MEMORY.md, never touching earlier ones.

The entry is `"\\n## YYYY-MM-DD HH:MM UTC\\n\\n<text>\\n"` (time from `utc_now`, which tests
freeze). A missing MEMORY.md is created with a one-line header. The write goes through the
workspace as a FileChange whose base is the current text, so in the editor it is an undoable
edit, and an append racing another edit is refused (`edit_rejected: ...`) rather than lost.
MEMORY.md is never loaded into the prompt; docs_search and docs_read find it as reference data.
write_file, edit_file and apply_patch refuse MEMORY.md (lich_core.tools.guard).
"""

from __future__ import annotations

import os
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from lich_core.errors import ToolError
from lich_core.tools.file_text import MAX_FILE_BYTES, write_changes
from lich_core.tools.guard import capture_errors, require_string_arg, resolve_safe_path
from lich_core.tools.memory import MAX_ENTRY_CHARS, MEMORY_FILE, append_entry, entry_heading
from lich_core.tools.types import FunctionTool, ToolContext
from lich_core.vocabulary import ToolResult
from lich_core.workspace import DiskWorkspace, FileChange, Workspace, encode_text, unsaved_set


def utc_now() -> datetime:
    """The entry's time (module-level so a test can freeze it)."""
    return datetime.now(timezone.utc)


def _current_text(workspace: Workspace, path: Path) -> str | None:
    if path not in unsaved_set(workspace):
        if not workspace.exists(path):
            return None
        if os.path.isdir(path):
            raise ToolError(f"is_directory: {MEMORY_FILE} is a directory")
        size = os.path.getsize(path)
        if size > MAX_FILE_BYTES:
            raise ToolError(
                f"too_large: {MEMORY_FILE} is {size} bytes, over the 2 MiB limit; a human should archive it"
            )
    try:
        return workspace.read_text(path)
    except FileNotFoundError:
        return None


@capture_errors
async def memory_append(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    text = require_string_arg(args, "text").strip("\n").rstrip()
    if not text.strip():
        raise ToolError("missing_arg: text")
    if len(text) > MAX_ENTRY_CHARS:
        raise ToolError(
            f"too_large: text is {len(text)} chars, over the {MAX_ENTRY_CHARS}-char limit of one entry; shorten it"
        )
    # Never through a symbolic link (resolve_safe_path refuses one for a write).
    path = resolve_safe_path(ctx.work_dir, MEMORY_FILE, for_write=True)
    workspace = ctx.workspace if ctx.workspace is not None else DiskWorkspace(ctx.work_dir)
    prior = _current_text(workspace, path)
    when = utc_now()
    new_text = append_entry(prior, text, when)
    await write_changes(ctx, [FileChange.write(path, new_text, prior)], workspace)
    heading = entry_heading(when)[3:]
    note = " (new file)" if prior is None else ""
    return ToolResult(
        ok=True,
        output=f"Appended an entry ({heading}, {len(text)} chars) to {MEMORY_FILE}{note}",
        details={
            "path": MEMORY_FILE,
            "abs_path": str(path),
            "prior_content": prior,
            "entry": heading,
            "bytes": len(encode_text(new_text)),
        },
    )


TOOL = FunctionTool(
    name="memory_append",
    description=(
        "Append a dated note to MEMORY.md for the user; not loaded into the prompt (data, not instructions)."
    ),
    parameters={
        "type": "object",
        "properties": {
            "text": {
                "type": "string",
            },
        },
        "required": ["text"],
        "additionalProperties": False,
    },
    run=memory_append,
    capability="file/write",
)
