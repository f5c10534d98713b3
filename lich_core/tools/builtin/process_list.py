"""process_list: the running processes (pid and command line), read from /proc.

Gated by `process/exec`, the process surface: every tool declares one capability, and a setup
that denies processes (an untrusted workspace grants only `file/read`) should not see other
programs' command lines either, since they can carry credentials. Secret-looking arguments are
masked with the same rules as env_get (lich_core/tools/secrets.py): `--password X`, `TOKEN=x`,
`mysql -pX`, `sshpass -p X`, `curl -u user:X`, URL credentials, well-known token formats, and the
same inside a shell command string.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from lich_core.errors import ToolError
from lich_core.tools.guard import capture_errors, optional_int_arg, optional_string_arg
from lich_core.tools.secrets import mask_arguments, mask_url_credentials
from lich_core.tools.types import FunctionTool, ToolContext
from lich_core.vocabulary import ToolResult

PROC_ROOT = Path("/proc")
DEFAULT_MAX_PROCESSES = 200
MAX_PROCESSES = 2_000
# Keeps one runaway command line (a huge argv) from taking over the result.
MAX_CMDLINE_CHARS = 500

# mask_arguments and mask_url_credentials live in lich_core.tools.secrets; importable from here too.
__all__ = ["TOOL", "list_pids", "mask_arguments", "mask_url_credentials", "read_process"]


def _read_bytes(path: Path) -> bytes:
    # A process can exit between listing /proc and reading its files: that reads as empty.
    try:
        return path.read_bytes()
    except OSError:
        return b""


def read_process(pid: int) -> tuple[str, str]:
    """(command line, short name) of `pid`; both empty when the process is gone."""
    raw = _read_bytes(PROC_ROOT / str(pid) / "cmdline")
    argv = [part.decode("utf-8", "replace") for part in raw.split(b"\0") if part]
    name = _read_bytes(PROC_ROOT / str(pid) / "comm").decode("utf-8", "replace").strip()
    return " ".join(mask_arguments(argv)), name


def list_pids() -> list[int]:
    try:
        names = os.listdir(PROC_ROOT)
    except OSError:
        raise ToolError(
            "proc_unavailable: /proc is not readable (process_list needs Linux)"
        ) from None
    return sorted(int(name) for name in names if name.isdigit())


@capture_errors
async def run_process_list(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    needle = (optional_string_arg(args, "filter") or "").lower()
    max_results = optional_int_arg(
        args, "max_results", DEFAULT_MAX_PROCESSES, low=1, high=MAX_PROCESSES
    )
    assert max_results is not None
    rows: list[tuple[int, str]] = []
    matched = 0
    own_pid = os.getpid()
    for pid in list_pids():
        cmdline, name = read_process(pid)
        if not cmdline and not name:
            continue  # vanished mid-scan
        # Kernel threads have no command line; show their name the way ps does.
        shown = cmdline or f"[{name}]"
        if needle and needle not in shown.lower() and needle not in name.lower():
            continue
        matched += 1
        if len(rows) < max_results:
            if len(shown) > MAX_CMDLINE_CHARS:
                shown = shown[:MAX_CMDLINE_CHARS] + " ..."
            rows.append((pid, shown + ("  (lich)" if pid == own_pid else "")))
    if not rows:
        what = f" matching {needle!r}" if needle else ""
        return ToolResult(ok=True, output=f"no processes{what}", details={"matched": 0})
    width = max(len(str(pid)) for pid, _ in rows)
    lines = [f"{'PID'.rjust(width)}  COMMAND"] + [
        f"{str(pid).rjust(width)}  {shown}" for pid, shown in rows
    ]
    if matched > len(rows):
        lines.append(
            f"[{matched - len(rows)} more processes not shown; raise max_results or narrow filter]"
        )
    return ToolResult(
        ok=True,
        output="\n".join(lines),
        details={"matched": matched, "pids": [pid for pid, _ in rows]},
    )


TOOL = FunctionTool(
    name="process_list",
    description=("Running processes (pid, command line); filter: a case-insensitive substring."),
    parameters={
        "type": "object",
        "properties": {
            "filter": {
                "type": "string",
            },
            "max_results": {
                "type": "integer",
                "minimum": 1,
                "maximum": MAX_PROCESSES,
            },
        },
        "additionalProperties": False,
    },
    run=run_process_list,
    capability="process/exec",
)
