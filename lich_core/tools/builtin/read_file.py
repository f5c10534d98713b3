"""read_file: a file's lines as hashline rows (`LINE:HH|content`), the anchors apply_patch needs.

Reads go through the Workspace, so an open editor buffer's unsaved text is what the model sees.
Reading records the shown rows in the session's read state (read-before-edit).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from lich_core.errors import ToolError
from lich_core.hashline.anchors import line_hash_values, render_rows, split_lines
from lich_core.tools.arguments import alias_property, pick_alias, reject_unknown_arguments
from lich_core.tools.file_text import MAX_FILE_BYTES
from lich_core.tools.guard import (
    capture_errors,
    optional_bool_arg,
    optional_int_arg,
    relative_to_root,
    require_string_arg,
    resolve_file_for,
)
from lich_core.tools.types import FunctionTool, ToolContext
from lich_core.vocabulary import ToolResult
from lich_core.workspace import encode_text, unsaved_set

MAX_LINES_PER_READ = 1_000
RANGE_NAMES = (
    "start/end (kli) is an inclusive line range, offset/limit (lich) a first line and a line count"
)
MAX_BYTES_PER_READ = 256 * 1024
BINARY_SNIFF_BYTES = 8 * 1024
# The executor's generic output clamp must not cut a read short of its own limits.
MAX_OUTPUT_CHARS = MAX_BYTES_PER_READ + 4 * 1024


def read_workspace_text(
    ctx: ToolContext, path: Path, rel: str, *, max_bytes: int = MAX_FILE_BYTES
) -> str:
    """The file's current text through the workspace, refusing missing, huge and binary files."""
    workspace = ctx.workspace
    assert workspace is not None
    is_unsaved = path in unsaved_set(workspace)
    if not is_unsaved:
        if os.path.isdir(path):
            raise ToolError(
                f"is_directory: {rel} is a directory; list it with list_dir or find_files"
            )
        if not workspace.exists(path):
            raise ToolError(f"not_found: {rel}")
        size = os.path.getsize(path)
        if size > max_bytes:
            raise ToolError(_too_large(rel, size))
    try:
        text = workspace.read_text(path)
    except FileNotFoundError:
        raise ToolError(f"not_found: {rel}") from None
    if is_unsaved:
        size = (
            len(text) if text.isascii() else len(encode_text(text))
        )  # no 2 MiB copy to count ASCII
        if size > max_bytes:
            raise ToolError(_too_large(rel, size))
    if "\0" in text[:BINARY_SNIFF_BYTES]:
        raise ToolError(
            f"binary_file: {rel} looks binary (a NUL byte in its first 8 KB); read_file shows text files only"
        )
    return text


def _too_large(rel: str, size: int) -> str:
    return (
        f"file_too_large: {rel} is {size} bytes, over the 2 MiB read limit; "
        f"search it with grep_files (pattern, path={rel!r}) to see the lines you need"
    )


@capture_errors
async def read_file(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    reject_unknown_arguments(TOOL.parameters, args)
    names = _range_names(args)  # before any reading: a conflict is an error even for an empty file
    target = require_string_arg(args, "path")
    raw = optional_bool_arg(args, "raw", False)
    path = resolve_file_for(ctx, target, write=False)
    rel = relative_to_root(ctx.work_dir, path)
    text = read_workspace_text(ctx, path, rel)
    lines = split_lines(text)
    count = len(lines)
    assert ctx.read_state is not None
    if count == 0:
        ctx.read_state.record(path)
        return ToolResult(ok=True, output="(empty file)", details={"path": rel, "lines": 0})

    start, end, start_name = _line_range(args, names, count)
    if start > count:
        raise ToolError(
            f"out_of_range: {start_name}={start} is past the end of {rel}, which has {count} lines"
        )
    end = min(end, count)
    if end < start:
        raise ToolError(
            f"out_of_range: end={end} is before {start_name}={start}; {rel} has {count} lines"
        )

    last = min(end, start + MAX_LINES_PER_READ - 1)
    shown = lines[start - 1 : last]
    kept, omitted = _fit_bytes(shown, start, raw)
    last = start + kept - 1
    if raw:
        body = "\n".join(shown[:kept])
    else:
        values = line_hash_values(shown, text=text if len(shown) == count else None)
        body = render_rows(shown[:kept], start, values[:kept])
    if omitted:
        # The row's anchor stays valid: it hashes the whole line, only the display is cut.
        body = (
            body[: len(body) - omitted] + f"\n(line {start} is cut here: {omitted} more characters)"
        )
    ctx.read_state.record(path)
    if last < end:
        body += f"\n(lines {start}-{last} of {count} shown; read on with {start_name}={last + 1})"
    return ToolResult(
        ok=True,
        output=body,
        details={"path": rel, "lines": count, "start": start, "end": last},
    )


def _range_names(args: dict[str, Any]) -> tuple[str, str | None]:
    """(name of the first-line argument, name of the last-line one or None) the call uses.

    kli: `start`/`end`, an inclusive 1-based range. lich: `offset` (1-based first line) and
    `limit` (how many lines). `start` with `offset`, or `end` with `limit`, is an error; the
    other mixes are well defined (`start` + `limit`: `limit` lines from `start`).
    """
    start_name = pick_alias(args, "start", "offset", why=RANGE_NAMES) or "start"
    return start_name, pick_alias(args, "end", "limit", why=RANGE_NAMES)


def _line_range(
    args: dict[str, Any], names: tuple[str, str | None], count: int
) -> tuple[int, int, str]:
    """(first line, last line, the name the call gave the first line by)."""
    start_name, end_name = names
    start = optional_int_arg(args, start_name, 1, low=1)
    assert start is not None
    if end_name == "limit":
        limit = optional_int_arg(args, "limit", None, low=1)
        end = count if limit is None else start + limit - 1
    else:
        value = optional_int_arg(args, "end", count) if end_name else count
        end = count if value is None else value
    return start, end, start_name


def _fit_bytes(lines: list[str], start: int, raw: bool) -> tuple[int, int]:
    """(rows that fit in MAX_BYTES_PER_READ, characters to cut from a lone overlong first row)."""
    budget = MAX_BYTES_PER_READ
    for index, line in enumerate(lines):
        prefix = 0 if raw else len(str(start + index)) + 4  # "N:HH|"
        cost = len(line.encode("utf-8", "surrogatepass")) + prefix + 1
        if cost > budget:
            if index == 0:
                return 1, max(0, len(line) - (budget - prefix - 1))
            return index, 0
        budget -= cost
    return len(lines), 0


TOOL = FunctionTool(
    name="read_file",
    description=("Read a text file as LINE:HH|content rows. At most 1000 lines or 256 KB a call."),
    parameters={
        "type": "object",
        "properties": {
            "path": {
                "type": "string",
            },
            "start": {
                "type": "integer",
            },
            "end": {
                "type": "integer",
            },
            "offset": alias_property(
                {"type": "integer", "minimum": 1},
                harness="lich",
                of="start",
                description="",
            ),
            "limit": alias_property(
                {"type": "integer", "minimum": 1},
                harness="lich",
                of="end",
                description="Line count.",
            ),
            "raw": {
                "type": "boolean",
                "description": "No anchors.",
            },
        },
        "required": ["path"],
        "additionalProperties": False,
    },
    run=read_file,
    capability="file/read",
    max_output_chars=MAX_OUTPUT_CHARS,
)
