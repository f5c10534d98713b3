"""disk_usage: size of each entry directly under a directory, largest first, with a TOTAL row.

Directories are measured with one `du -sb` each (10 s limit per entry, so one huge or slow tree
cannot stall the call); plain files and symlinks are measured with lstat, which is what `du -sb`
reports for them anyway and saves a process per file. Sizes are apparent sizes in bytes, as on
disk: unsaved editor buffers are not included.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lich_core.errors import ToolError, ToolTimeoutError
from lich_core.tools.guard import (
    capture_errors,
    optional_int_arg,
    optional_string_arg,
    relative_to_root,
    resolve_safe_path,
    with_timeout,
)
from lich_core.tools.processes import kill_process_group, tool_process_env
from lich_core.tools.sizes import human_size
from lich_core.tools.types import FunctionTool, ToolContext
from lich_core.vocabulary import ToolResult

DU_TIMEOUT_MS = 10_000
DEFAULT_MAX_ENTRIES = 50
MAX_ENTRIES = 1_000
# du processes at once: the machine is shared, and du is I/O bound anyway.
MAX_PARALLEL_DU = 4


@dataclass
class Row:
    name: str
    size_bytes: int | None  # None when it could not be measured
    problem: str = ""


async def du_bytes(du: str, path: Path, env: dict[str, str]) -> tuple[int | None, str]:
    """(apparent size in bytes, problem) of `path` from `du -sb`."""
    proc = await asyncio.create_subprocess_exec(
        du,
        "-sb",
        "--",
        str(path),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        start_new_session=True,
    )
    try:
        stdout, stderr = await with_timeout(
            lambda _token: proc.communicate(), DU_TIMEOUT_MS, f"du {path.name}"
        )
    except ToolTimeoutError:
        return None, f"du timed out after {DU_TIMEOUT_MS / 1000:g} s"
    finally:
        # Runs on timeout and on cancellation alike; harmless after a normal exit.
        if proc.returncode is None:
            kill_process_group(proc.pid)
            await proc.wait()
    first = stdout.decode("utf-8", "replace").split(maxsplit=1)
    # du still prints a total when part of the tree was unreadable (exit 1): keep it, note it.
    size = int(first[0]) if first and first[0].isdigit() else None
    problem = (
        ""
        if proc.returncode == 0
        else (stderr.decode("utf-8", "replace").strip().splitlines() or ["du failed"])[0]
    )
    return size, problem


async def measure(
    entries: list[os.DirEntry[str]], du: str, env: dict[str, str], ctx: ToolContext
) -> list[Row]:
    """Measure every entry; stop early (killing running du processes) when ctx.cancel fires."""
    limiter = asyncio.Semaphore(MAX_PARALLEL_DU)

    async def one(entry: os.DirEntry[str]) -> Row:
        try:
            is_dir = entry.is_dir(follow_symlinks=False)
            if not is_dir:
                return Row(entry.name, entry.stat(follow_symlinks=False).st_size)
        except OSError as err:
            return Row(entry.name, None, err.strerror or str(err))
        async with limiter:
            size, problem = await du_bytes(du, Path(entry.path), env)
        return Row(entry.name + "/", size, problem)

    work: asyncio.Future[list[Row]] = asyncio.ensure_future(
        asyncio.gather(*(one(entry) for entry in entries))
    )
    cancel_wait: asyncio.Future[Any] = asyncio.ensure_future(ctx.cancel.wait())
    try:
        await asyncio.wait([work, cancel_wait], return_when=asyncio.FIRST_COMPLETED)
    finally:
        cancel_wait.cancel()
        if not work.done():
            work.cancel()  # each du_bytes kills its process on the way out
            await asyncio.gather(work, return_exceptions=True)
    return list(work.result()) if not work.cancelled() else []


def _render(label: str, rows: list[Row], max_entries: int) -> str:
    measured = sorted(
        (row for row in rows if row.size_bytes is not None),
        key=lambda row: (-(row.size_bytes or 0), row.name),
    )
    unmeasured = [row for row in rows if row.size_bytes is None]
    total = sum(row.size_bytes or 0 for row in measured)
    shown = measured[:max_entries]
    lines = [f"disk usage of {label} ({len(rows)} entries, largest first)"]
    for row in shown:
        note = f"  ({row.problem})" if row.problem else ""
        lines.append(
            f"{human_size(row.size_bytes or 0):>10}  {row.size_bytes:>14}  {row.name}{note}"
        )
    hidden = measured[max_entries:]
    if hidden:
        hidden_bytes = sum(row.size_bytes or 0 for row in hidden)
        lines.append(
            f"[{len(hidden)} smaller entries not shown, {hidden_bytes} bytes; raise max_entries]"
        )
    for row in unmeasured:
        lines.append(f"{'?':>10}  {'?':>14}  {row.name}  ({row.problem})")
    suffix = f"  ({len(unmeasured)} entries not measured)" if unmeasured else ""
    lines.append(f"{human_size(total):>10}  {total:>14}  TOTAL{suffix}")
    return "\n".join(lines)


@capture_errors
async def run_disk_usage(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    target = optional_string_arg(args, "path", ".")
    assert target is not None
    max_entries = optional_int_arg(
        args, "max_entries", DEFAULT_MAX_ENTRIES, low=1, high=MAX_ENTRIES
    )
    assert max_entries is not None
    path = resolve_safe_path(ctx.work_dir, target)
    env = tool_process_env(ctx)
    du = shutil.which("du", path=env.get("PATH"))
    if du is None:
        raise ToolError("du_unavailable: the `du` program was not found on PATH")
    if not path.exists() and not path.is_symlink():
        raise ToolError(f"not_found: {target}")
    label = relative_to_root(ctx.work_dir, path)
    if not path.is_dir() or path.is_symlink():
        size, problem = (path.lstat().st_size, "")
        rows = [Row(path.name, size, problem)]
    else:
        with os.scandir(path) as listing:
            entries = list(listing)
        rows = await measure(entries, du, env, ctx)
    if ctx.cancel.cancelled:
        return ToolResult(ok=False, error="cancelled")
    total = sum(row.size_bytes or 0 for row in rows)
    return ToolResult(
        ok=True,
        output=_render(label, rows, max_entries),
        details={"total_bytes": total, "entries": {row.name: row.size_bytes for row in rows}},
    )


TOOL = FunctionTool(
    name="disk_usage",
    description=("Bytes per entry directly under path, largest first, with a TOTAL."),
    parameters={
        "type": "object",
        "properties": {
            "path": {
                "type": "string",
            },
            "max_entries": {
                "type": "integer",
                "minimum": 1,
                "maximum": MAX_ENTRIES,
            },
        },
        "additionalProperties": False,
    },
    run=run_disk_usage,
    capability="file/read",
)
