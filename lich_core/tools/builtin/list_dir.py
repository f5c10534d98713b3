"""list_dir: a directory's entries (optionally a few levels deep), dirs first, with file sizes."""

from __future__ import annotations

import os
from collections import deque
from dataclasses import dataclass
from typing import Any

from lich_core.errors import ToolError
from lich_core.tools.guard import (
    SKIP_DIRS,
    capture_errors,
    optional_int_arg,
    optional_string_arg,
    relative_to_root,
    resolve_file_for,
)
from lich_core.tools.sizes import human_size
from lich_core.tools.types import FunctionTool, ToolContext
from lich_core.vocabulary import ToolResult
from lich_core.workspace import WorkspaceListing

MAX_LIST_ENTRIES = 500
MAX_DEPTH = 4
# Past this many entries we stop counting what the cap omitted (depth <= 4 keeps it small anyway).
MAX_COUNTED_ENTRIES = 100_000


@dataclass(frozen=True)
class _Entry:
    rel: str  # relative to the listed directory, "/"-separated
    abs_path: str
    kind: str  # "dir", "file", "link", "unsaved", "other"
    size: int = 0
    link_target: str = ""


def _scan(dir_path: str, rel_prefix: str) -> list[_Entry]:
    """One directory's entries; unreadable directories read as empty."""
    entries: list[_Entry] = []
    try:
        with os.scandir(dir_path) as it:
            for item in it:
                rel = rel_prefix + item.name
                try:
                    if item.is_symlink():
                        entries.append(_Entry(rel, item.path, "link", 0, _link_target(item.path)))
                    elif item.is_dir(follow_symlinks=False):
                        if item.name not in SKIP_DIRS:
                            entries.append(_Entry(rel, item.path, "dir"))
                    elif item.is_file(follow_symlinks=False):
                        size = item.stat(follow_symlinks=False).st_size
                        entries.append(_Entry(rel, item.path, "file", size))
                    else:
                        entries.append(_Entry(rel, item.path, "other"))
                except OSError:
                    continue  # vanished mid-scan
    except (FileNotFoundError, NotADirectoryError, PermissionError):
        pass
    return entries


def _link_target(path: str) -> str:
    try:
        return os.readlink(path)
    except OSError:
        return "?"


def _new_children(ctx: ToolContext, root: str) -> dict[str, dict[str, bool]]:
    """What the workspace's new files (unsaved, not on disk) add under `root`, per folder."""
    return WorkspaceListing(ctx.workspace, root).new_children()


def _children(
    dir_path: str, rel_prefix: str, new_children: dict[str, dict[str, bool]]
) -> list[_Entry]:
    """Entries of one directory (disk plus unsaved buffers), dirs first, each group by name."""
    entries = _scan(dir_path, rel_prefix)
    extra = new_children.get(rel_prefix)
    if extra:
        present = {entry.rel[len(rel_prefix) :] for entry in entries}
        for name, is_dir in extra.items():
            if name in present or (is_dir and name in SKIP_DIRS):
                continue
            if not os.path.lexists(os.path.join(dir_path, name)):
                entries.append(
                    _Entry(
                        rel_prefix + name,
                        os.path.join(dir_path, name),
                        "dir" if is_dir else "unsaved",
                    )
                )
    entries.sort(key=lambda entry: (entry.kind != "dir", entry.rel))
    return entries


def _render(entry: _Entry) -> str:
    if entry.kind == "dir":
        return entry.rel + "/"
    if entry.kind == "file":
        return f"{entry.rel}  ({human_size(entry.size)})"
    if entry.kind == "link":
        return f"{entry.rel} -> {entry.link_target}  (symlink)"
    if entry.kind == "unsaved":
        return f"{entry.rel}  (unsaved)"
    return f"{entry.rel}  (special file)"


def list_entries(ctx: ToolContext, root: str, depth: int) -> tuple[list[str], int, bool]:
    """(rendered lines, omitted count, count exact?).

    The cap fills breadth-first (lich's seed walks a worklist level by level): every top-level
    entry is kept before anything deeper, so a cut drops the deepest entries, never the ones the
    model asked about first. The kept entries are then shown as a tree (pre-order), each
    directory's children right under it; a kept entry's parent is always kept, since it came
    earlier in the walk.
    """
    new_children = _new_children(ctx, root)
    kept_children: dict[str, list[_Entry]] = {}  # parent rel prefix -> kept children, in order
    kept = 0
    omitted = 0
    visited = 0
    queue: deque[tuple[_Entry, str, int]] = deque(
        (e, "", 1) for e in _children(root, "", new_children)
    )
    exact = True
    while queue:
        entry, parent, level = queue.popleft()
        visited += 1
        if visited > MAX_COUNTED_ENTRIES:
            omitted += 1 + len(queue)
            exact = False
            break
        if kept < MAX_LIST_ENTRIES:
            kept_children.setdefault(parent, []).append(entry)
            kept += 1
        else:
            omitted += 1
        if entry.kind == "dir" and level < depth:
            prefix = entry.rel + "/"
            queue.extend(
                (child, prefix, level + 1)
                for child in _children(entry.abs_path, prefix, new_children)
            )
    lines: list[str] = []
    # Pre-order over what was kept; pushed reversed so they pop in display order.
    stack = list(reversed(kept_children.get("", [])))
    while stack:
        entry = stack.pop()
        lines.append(_render(entry))
        if entry.kind == "dir":
            stack.extend(reversed(kept_children.get(entry.rel + "/", [])))
    return lines, omitted, exact


@capture_errors
async def list_dir(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    target = optional_string_arg(args, "path", ".") or "."
    depth = optional_int_arg(args, "depth", 1, low=1, high=MAX_DEPTH) or 1
    path = resolve_file_for(ctx, target, write=False)
    rel = relative_to_root(ctx.work_dir, path)
    if not os.path.isdir(path):
        if os.path.lexists(path):
            raise ToolError(f"not_a_directory: {rel}")
        if not _new_children(ctx, str(path)):
            raise ToolError(f"not_found: {rel}")
    lines, omitted, exact = list_entries(ctx, str(path), depth)
    header = f"{rel}/ (depth {depth})" if rel != "." else f"./ (depth {depth})"
    body = list(lines) or ["(empty directory)"]  # a copy: details count entries, not the note
    if omitted:
        more = f"{omitted}" if exact else f"at least {omitted}"
        body.append(
            f"... {more} more entries omitted (cap {MAX_LIST_ENTRIES}); list a subdirectory or lower depth"
        )
    return ToolResult(
        ok=True,
        output="\n".join([header, *body]),
        details={"path": rel, "entries": len(lines), "omitted": omitted},
    )


TOOL = FunctionTool(
    name="list_dir",
    description=("Directory entries (directories end in /, files with sizes), at most 500."),
    parameters={
        "type": "object",
        "properties": {
            "path": {
                "type": "string",
            },
            "depth": {"type": "integer", "minimum": 1, "maximum": MAX_DEPTH, "default": 1},
        },
        "additionalProperties": False,
    },
    run=list_dir,
    capability="file/read",
)
