"""ToolExecutor overhead per call: a trivial tool through `executor.execute` against awaiting the
same tool's `execute()` directly (the reference), both in one running event loop.

The executor's work per call is the registry lookup, capability gate, the tool's cancel token
and context, the tool as its own task (started eagerly on Python 3.12+, scheduled before) raced
against its deadline, and output clamping; the tool itself does nothing. No user waits on these
microseconds (every turn waits on a model): information lines, under a ceiling (#34).
"""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path
from typing import Any

from bench.run import Figure
from lich_core.tools.capabilities import CapabilityGate
from lich_core.tools.executor import ToolExecutor
from lich_core.tools.registry import ToolRegistry
from lich_core.tools.types import FunctionTool, ToolContext, ToolResult

FULL_CALLS = 20_000
QUICK_CALLS = 2_000
FULL_REPEAT = 5
QUICK_REPEAT = 3
CEILING_US = 20.0


async def _noop(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    return ToolResult(ok=True, output="ok")


NOOP_TOOL = FunctionTool(
    name="noop",
    description="Does nothing.",
    parameters={"type": "object", "properties": {}},
    run=_noop,
    capability="file/read",
)


async def _best_per_call_us(call: Any, calls: int, repeat: int) -> float:
    """Best (least disturbed) mean µs per call over `repeat` batches of `calls` sequential awaits."""
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(calls):
            await call()
        best = min(best, (time.perf_counter() - start) / calls)
    return best * 1e6


async def _measure(calls: int, repeat: int) -> tuple[float, float, float]:
    registry = ToolRegistry()
    registry.register(NOOP_TOOL)
    executor = ToolExecutor(registry, gate=CapabilityGate(["file/read"]), work_dir=Path.cwd())
    ctx = executor.default_context()
    args: dict[str, Any] = {}
    check = await executor.execute("noop", args, ctx)
    if not check.ok:
        raise RuntimeError(f"noop failed through the executor: {check.error}")

    direct_us = await _best_per_call_us(lambda: NOOP_TOOL.execute(args, ctx), calls, repeat)
    shared_ctx_us = await _best_per_call_us(
        lambda: executor.execute("noop", args, ctx), calls, repeat
    )
    default_ctx_us = await _best_per_call_us(lambda: executor.execute("noop", args), calls, repeat)
    return direct_us, shared_ctx_us, default_ctx_us


def run(quick: bool) -> list[Figure]:
    calls = QUICK_CALLS if quick else FULL_CALLS
    repeat = QUICK_REPEAT if quick else FULL_REPEAT
    direct_us, shared_ctx_us, default_ctx_us = asyncio.run(_measure(calls, repeat))
    start = (
        "eager task" if sys.version_info >= (3, 12) else "plain task, no eager start before 3.12"
    )
    note = f"best of {repeat} x {calls} calls; {start}"
    return [
        Figure(
            "executor.execute(noop), caller's ctx",
            shared_ctx_us,
            "us",
            reference_name="tool.execute() direct",
            reference_value=direct_us,
            ceiling=CEILING_US,
            note=f"{note}; overhead {shared_ctx_us - direct_us:.1f} us",
        ),
        Figure(
            "executor.execute(noop), default ctx per call",
            default_ctx_us,
            "us",
            reference_name="tool.execute() direct",
            reference_value=direct_us,
            ceiling=CEILING_US,
            note=f"{note}; overhead {default_ctx_us - direct_us:.1f} us",
        ),
    ]


if __name__ == "__main__":
    from bench.run import format_figure

    for figure in run("--quick" in sys.argv[1:]):
        print(format_figure(figure))
