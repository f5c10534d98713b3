"""python_eval: evaluate Python in the run's live interpreter (kli's eval, for Python).

The interpreter is a child process per agent run (lich_core/tools/python_image.py), never this
process; it is the user's Python, or the repository's .venv/bin/python once the workspace is
trusted (`describe_eval` says which, for the approval question). Processes the code starts,
`setsid -f` daemons included, are killed with the interpreter when the run's image stops: state (variables, imports) is kept from one call to the next in the same run. Statements
run one by one; the value of a last expression statement comes back as a bounded repr; printed
output (stdout and stderr, fd-level included) is capped at 1 MiB at the stream. The budget is the
call's `timeout` (seconds, default 30, max 300), enforced here: at the deadline or on cancellation
the code gets a KeyboardInterrupt, and an interpreter that does not come back is killed and
replaced by a fresh one.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from lich_core.errors import ToolError
from lich_core.tools.arguments import alias_property, pick_alias, reject_unknown_arguments
from lich_core.tools.guard import capture_errors, require_string_arg, truncation_marker
from lich_core.tools.processes import tool_process_env
from lich_core.tools.python_image import (
    IDLE_TIMEOUT_S,
    MAX_OUTPUT_CHARS,
    REGISTRY,
    RESTARTED_NOTE,
    EvalOutcome,
    ImageError,
    PythonImage,
    interpreter_for,
    repository_python,
    workspace_trusted,
)
from lich_core.tools.types import FunctionTool, ToolContext
from lich_core.vocabulary import ToolResult

DEFAULT_TIMEOUT_S = 30
MAX_TIMEOUT_S = 300
# The executor's deadline sits above the longest budget plus the interrupt grace and a restart.
TOOL_TIMEOUT_MS = (MAX_TIMEOUT_S + 30) * 1000
RESULT_SLACK_CHARS = 6_000

DESCRIPTION = (
    "Run Python in a persistent interpreter: output and the last expression's "
    f"value. timeout in seconds (default {DEFAULT_TIMEOUT_S})."
)

CODE_SCHEMA = {"type": "string"}
CODE_NAMES = "code (lich) and form (kli) both name the source to evaluate"

# No `required`: the source comes as `code` or as kli's `form`, and _source says which is missing.
PARAMETERS = {
    "type": "object",
    "properties": {
        "code": CODE_SCHEMA,
        "form": alias_property(CODE_SCHEMA, harness="kli", of="code", description=""),
        "timeout": {"type": "integer"},
    },
    "additionalProperties": False,
}


def describe_eval(settings: Mapping[str, Any], root: Path) -> str:
    """One line for the approval question: the interpreter the code runs in, and whether it is
    the repository's."""
    python = interpreter_for(root, trusted=workspace_trusted(settings))
    rel = os.path.relpath(python, root)
    if not (rel == ".." or rel.startswith(".." + os.sep) or os.path.isabs(rel)):
        return f"runs the code in {rel} from this repository, in the workspace"
    venv = repository_python(root)
    why = ""
    if venv is not None:
        why = (
            f" (not this repository's {os.path.relpath(venv, root)}: the workspace is not trusted)"
        )
    return f"runs the code in your Python {python}{why}, in the workspace"


def _timeout_arg(args: dict[str, Any]) -> float:
    value = args.get("timeout")
    if value is None or value == "":
        return float(DEFAULT_TIMEOUT_S)
    try:
        seconds = float(value)
    except (TypeError, ValueError) as err:
        raise ToolError(f"bad_arg: timeout must be a number of seconds, got {value!r}") from err
    if isinstance(value, bool) or seconds != seconds or seconds <= 0:
        raise ToolError(f"bad_arg: timeout must be a positive number of seconds, got {value!r}")
    return min(seconds, float(MAX_TIMEOUT_S))


def _seconds(value: float) -> str:
    return str(int(value)) if value == int(value) else f"{value:g}"


def _text(outcome: EvalOutcome, *, with_value: bool) -> str:
    parts: list[str] = []
    if outcome.notes:
        parts.append("\n".join(f"[note: {note}]" for note in outcome.notes))
    if outcome.output:
        parts.append(
            outcome.output.rstrip("\n") if with_value or outcome.traceback else outcome.output
        )
    if outcome.dropped:
        parts.append(truncation_marker(outcome.dropped))
    if with_value and outcome.value is not None:
        parts.append(outcome.value)
    if outcome.traceback:
        parts.append(outcome.traceback.rstrip("\n"))
    return "\n".join(part for part in parts if part)


@capture_errors
async def _python_eval(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    reject_unknown_arguments(PARAMETERS, args)
    code = require_string_arg(args, pick_alias(args, "code", "form", why=CODE_NAMES) or "code")
    timeout_s = _timeout_arg(args)
    # The run's ReadState names the run (see python_image's docstring); a bare context (no read
    # state, which ToolContext never leaves unset) would get an image of its own.
    key: object = ctx.read_state if ctx.read_state is not None else ctx
    python = interpreter_for(ctx.work_dir, trusted=ctx.settings.workspace_trusted)
    image = REGISTRY.get(key, python, ctx.work_dir, tool_process_env(ctx))
    cancelled = asyncio.Event()
    remove = ctx.cancel.on_cancel(cancelled.set)
    try:
        outcome = await image.evaluate(code, timeout_s, cancelled)
    except ImageError as err:
        return ToolResult(ok=False, error=f"eval_unavailable: {err}")
    finally:
        # On asyncio cancellation (the executor's cancel) evaluate has interrupted or killed the
        # child before re-raising; a killed one is restarted at the next call.
        remove()
    _schedule_idle_sweep()
    return await _result(outcome, image, timeout_s, cancelled.is_set() or ctx.cancel.cancelled)


async def _result(
    outcome: EvalOutcome, image: PythonImage, timeout_s: float, was_cancelled: bool
) -> ToolResult:
    details: dict[str, Any] = {"pid": image.pid, "python": image.python}
    if outcome.dropped:
        details["dropped_chars"] = outcome.dropped
    if outcome.interrupted:
        if was_cancelled:
            error = "cancelled"
        else:
            error = (
                f"timeout: python_eval exceeded {_seconds(timeout_s)} s; "
                "the interpreter's state may be partially modified"
            )
        if outcome.interrupted == "killed":
            error += f"; the interpreter did not stop after the interrupt and was killed: {RESTARTED_NOTE}"
            if not was_cancelled:
                try:
                    await image.start()
                except ImageError as err:
                    error += f" (starting a new one failed: {err})"
        return ToolResult(
            ok=False, output=_text(outcome, with_value=False), error=error, details=details
        )
    if outcome.died:
        return ToolResult(
            ok=False,
            output=_text(outcome, with_value=False),
            error=f"interpreter_exited: {outcome.error}",
            details=details,
        )
    if not outcome.ok:
        return ToolResult(
            ok=False,
            output=_text(outcome, with_value=False),
            error=f"eval_error: {outcome.error}",
            details=details,
        )
    return ToolResult(ok=True, output=_text(outcome, with_value=True), details=details)


def _schedule_idle_sweep() -> None:
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return
    handle = loop.call_later(IDLE_TIMEOUT_S + 1, REGISTRY.stop_idle)
    # Not keeping the process alive for the sweep: a closing loop drops the handle.
    del handle


TOOL = FunctionTool(
    name="python_eval",
    description=DESCRIPTION,
    parameters=PARAMETERS,
    run=_python_eval,
    capability="image/eval",
    timeout_ms=TOOL_TIMEOUT_MS,
    max_output_chars=MAX_OUTPUT_CHARS + RESULT_SLACK_CHARS,
)
