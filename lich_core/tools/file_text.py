"""What the file tools share about a file's text (read_file, grep_files, apply_patch).

A file's text comes through the workspace, whose overlay (open editor buffers) may differ from
disk; past MAX_FILE_BYTES a file is neither read nor searched.
"""

from __future__ import annotations

import os
from pathlib import Path

from lich_core.workspace import Workspace

MAX_FILE_BYTES = 2 * 1024 * 1024


def overlay_set(workspace: Workspace) -> set[Path]:
    """The files whose workspace text may differ from disk, as normalised absolute paths."""
    return {Path(os.path.normpath(os.path.abspath(path))) for path in workspace.overlay_paths()}
