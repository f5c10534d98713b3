"""What the file tools share about a file's text (read_file, grep_files, apply_patch).

A file's text comes through the workspace, whose unsaved buffers (open in the editor) may differ
from disk; past MAX_FILE_BYTES a file is neither read nor searched.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from lich_core.errors import ToolError
from lich_core.workspace import FileChange, Workspace

if TYPE_CHECKING:
    from lich_core.tools.types import ToolContext

MAX_FILE_BYTES = 2 * 1024 * 1024


async def write_changes(
    ctx: ToolContext, changes: Sequence[FileChange], workspace: Workspace | None = None
) -> None:
    """Apply `changes` through the workspace (the context's, unless one is given) and note them
    in the run's WriteLedger; its listener hears of them first, so a write that fails half-way
    is still known."""
    target = workspace if workspace is not None else ctx.workspace
    assert target is not None
    paths = [Path(change.path) for change in changes]
    # A file the run already wrote (and so noted) is not noted again: the note is a read and a
    # write of the trust store, and a task edits the same files many times.
    unnoted = [path for path in paths if path not in ctx.written.paths]
    if ctx.written.before_write is not None and unnoted:
        try:
            ctx.written.before_write(unnoted)
        except OSError as err:  # fail closed: a write that cannot be recorded does not happen
            raise ToolError(
                f"write_not_recorded: {err}; a task without process/exec records what it writes before "
                "writing it, so nothing was written"
            ) from None
    await target.apply(changes, ctx.edit_label)
    ctx.written.paths.update(paths)
