"""ToolExecutor's per-call fast paths behave as the general code does (#18).

The executor reads a tool's declared capability, timeout and output cap at every call, clones
the caller's context per call and skips output shaping for a short success; the tool's task
(eager where asyncio can start one so) handles every outcome of its first step as a scheduled task would (done callbacks, a
task that cancels itself, odd yields). Each test here fails if one of those shortcuts drops a
case the general path handles.
"""

from __future__ import annotations

import asyncio
import contextvars
import dataclasses
import sys
from collections.abc import Generator
from pathlib import Path
from typing import Any

import pytest

from lich_core.tools.capabilities import CapabilityGate
from lich_core.tools.executor import ToolExecutor
from lich_core.tools.registry import ToolRegistry
from lich_core.tools.types import CancelToken, FunctionTool, ToolContext, ToolResult

WAIT_S = 10  # generous upper bound for anything that should happen "soon"

LABEL: contextvars.ContextVar[str] = contextvars.ContextVar("LABEL", default="caller")


def make_tool(name: str, run: Any, **kwargs: Any) -> FunctionTool:
    return FunctionTool(
        name=name,
        description=name,
        parameters={"type": "object", "properties": {}},
        run=run,
        **kwargs,
    )


def executor_with(*tools: FunctionTool, **kwargs: Any) -> ToolExecutor:
    return ToolExecutor(ToolRegistry(tools), **kwargs)


@pytest.fixture
def ctx(tmp_path: Path) -> ToolContext:
    return ToolContext(work_dir=tmp_path)


# --- the context clone ---


class LabelledContext(ToolContext):
    """A ToolContext subclass, as an embedder might pass one."""


def test_with_cancel_clones_every_field_but_the_token(tmp_path: Path) -> None:
    original = LabelledContext(work_dir=tmp_path, env={"A": "1"}, edit_label="lich: task")
    token = CancelToken()
    clone = original.with_cancel(token)
    assert type(clone) is LabelledContext
    assert clone.cancel is token and original.cancel is not token
    for field in dataclasses.fields(ToolContext):
        if field.name != "cancel":
            assert getattr(clone, field.name) is getattr(original, field.name), field.name
    # Its own fields: setting one on the clone leaves the original alone, and the other way round.
    clone.edit_label = "changed"
    original.terminal_timeout_ms = 5
    assert original.edit_label == "lich: task" and clone.terminal_timeout_ms != 5


# --- what the executor reads at each call ---


async def test_a_tools_declarations_are_read_at_each_call(ctx: ToolContext) -> None:
    release = asyncio.Event()

    async def run(args: dict[str, Any], call_ctx: ToolContext) -> ToolResult:
        if args.get("wait"):
            await release.wait()
        return ToolResult(ok=True, output="y" * 30)

    tool = make_tool("changing", run, capability="file/read")
    executor = executor_with(tool, gate=CapabilityGate(["file/read"]))
    assert (await executor.execute("changing", {}, ctx)).output == "y" * 30

    tool.max_output_chars = 10
    clamped = await executor.execute("changing", {}, ctx)
    assert clamped.output == "y" * 10 + "\n[... truncated, 20 chars omitted ...]"

    tool.timeout_ms = 20
    timed_out = await executor.execute("changing", {"wait": True}, ctx)
    assert timed_out.error == "timeout: changing exceeded 20ms"

    tool.capability = "file/write"
    assert (await executor.execute("changing", {}, ctx)).error == "capability_denied: file/write"


async def test_output_at_the_cap_is_kept_and_one_more_char_is_clamped(ctx: ToolContext) -> None:
    async def sized(args: dict[str, Any], call_ctx: ToolContext) -> ToolResult:
        return ToolResult(ok=True, output="x" * args["n"])

    executor = executor_with(make_tool("sized", sized, max_output_chars=100))
    assert (await executor.execute("sized", {"n": 100}, ctx)).output == "x" * 100
    over = await executor.execute("sized", {"n": 101}, ctx)
    assert over.output == "x" * 100 + "\n[... truncated, 1 chars omitted ...]"


@dataclasses.dataclass
class TimedResult(ToolResult):
    """A ToolResult subclass (a plugin's own result type)."""

    elapsed_ms: int = 0


async def test_a_tool_result_subclass_is_shaped_as_a_tool_result(ctx: ToolContext) -> None:
    async def long_output(args: dict[str, Any], call_ctx: ToolContext) -> ToolResult:
        return TimedResult(ok=True, output="z" * 30, elapsed_ms=3)

    async def dies_after_cancel(args: dict[str, Any], call_ctx: ToolContext) -> ToolResult:
        call_ctx.cancel.cancel()
        return TimedResult(ok=False, error="exit 137")

    executor = executor_with(
        make_tool("long", long_output, max_output_chars=10), make_tool("dies", dies_after_cancel)
    )
    result = await executor.execute("long", {}, ctx)
    assert isinstance(result, TimedResult) and result.elapsed_ms == 3
    assert result.output == "z" * 10 + "\n[... truncated, 20 chars omitted ...]"
    assert (await executor.execute("dies", {}, ctx)).error == "cancelled"


async def test_a_tool_that_raises_after_its_token_is_cancelled_reports_cancelled(
    ctx: ToolContext,
) -> None:
    async def raises(args: dict[str, Any], call_ctx: ToolContext) -> ToolResult:
        call_ctx.cancel.cancel()
        raise RuntimeError("pipe closed")

    async def plain_error(args: dict[str, Any], call_ctx: ToolContext) -> ToolResult:
        raise RuntimeError("pipe closed")

    executor = executor_with(make_tool("raises", raises), make_tool("plain", plain_error))
    assert (await executor.execute("raises", {}, ctx)).error == "cancelled"
    assert (await executor.execute("plain", {}, ctx)).error == "RuntimeError: pipe closed"
    assert not ctx.cancel.cancelled


# --- the tool's task: every outcome of its first step ---


async def test_a_done_callback_added_in_the_first_step_runs(ctx: ToolContext) -> None:
    seen: asyncio.Future[str] = asyncio.get_running_loop().create_future()

    async def watched(args: dict[str, Any], call_ctx: ToolContext) -> ToolResult:
        task = asyncio.current_task()
        assert task is not None
        task.add_done_callback(lambda done: seen.set_result(done.result().output))
        return ToolResult(ok=True, output="watched")

    assert (await executor_with(make_tool("watched", watched)).execute("watched", {}, ctx)).ok
    assert await asyncio.wait_for(seen, WAIT_S) == "watched"


async def test_a_tool_that_cancels_its_own_task_then_returns_is_cancelled(ctx: ToolContext) -> None:
    async def quits(args: dict[str, Any], call_ctx: ToolContext) -> ToolResult:
        task = asyncio.current_task()
        assert task is not None
        task.cancel()  # no wait follows: the task is cancelled as its coroutine ends
        return ToolResult(ok=True, output="never seen")

    result = await executor_with(make_tool("quits", quits)).execute("quits", {}, ctx)
    assert result == ToolResult(ok=False, output="", error="cancelled")
    caller = asyncio.current_task()
    assert caller is not None and not caller.cancelled() and not ctx.cancel.cancelled


@pytest.mark.skipif(sys.version_info < (3, 11), reason="Task.cancelling is 3.11+")
async def test_a_tool_that_cancels_its_own_task_then_waits_is_cancelled(ctx: ToolContext) -> None:
    async def quits_waiting(args: dict[str, Any], call_ctx: ToolContext) -> ToolResult:
        task = asyncio.current_task()
        assert task is not None
        task.cancel()  # the wait that follows is cancelled at once
        await asyncio.Event().wait()
        return ToolResult(ok=True, output="never seen")

    result = await executor_with(make_tool("quits", quits_waiting)).execute("quits", {}, ctx)
    assert result.error == "cancelled"
    caller = asyncio.current_task()
    assert caller is not None and caller.cancelling() == 0  # type: ignore[attr-defined,unused-ignore]


class _Yield:
    """An awaitable that yields `value` to the task, as no asyncio awaitable does."""

    def __init__(self, value: object) -> None:
        self.value = value

    def __await__(self) -> Generator[object, None, None]:
        yield self.value


async def test_a_bare_yield_in_the_first_step_resumes_on_the_next_turn(ctx: ToolContext) -> None:
    async def relinquishes(args: dict[str, Any], call_ctx: ToolContext) -> ToolResult:
        await _Yield(None)
        return ToolResult(ok=True, output="resumed")

    result = await executor_with(make_tool("yields", relinquishes)).execute("yields", {}, ctx)
    assert result.output == "resumed"


async def test_a_bad_yield_in_the_first_step_is_the_tools_error(ctx: ToolContext) -> None:
    async def bad(args: dict[str, Any], call_ctx: ToolContext) -> ToolResult:
        await _Yield(42)
        return ToolResult(ok=True, output="not reached")

    result = await executor_with(make_tool("bad", bad)).execute("bad", {}, ctx)
    assert result.error == "RuntimeError: Task got bad yield: 42"


async def test_a_future_of_another_loop_is_the_tools_error(ctx: ToolContext) -> None:
    other = asyncio.new_event_loop()
    try:
        foreign = other.create_future()

        async def awaits_foreign(args: dict[str, Any], call_ctx: ToolContext) -> ToolResult:
            await foreign
            return ToolResult(ok=True, output="not reached")

        result = await executor_with(make_tool("foreign", awaits_foreign)).execute(
            "foreign", {}, ctx
        )
    finally:
        other.close()
    assert result.error is not None and result.error.startswith("RuntimeError: Task ")
    assert result.error.endswith("attached to a different loop")


async def test_a_tools_context_variables_stay_its_own(ctx: ToolContext) -> None:
    LABEL.set("caller")
    seen: list[str] = []

    async def quick(args: dict[str, Any], call_ctx: ToolContext) -> ToolResult:
        seen.append(LABEL.get())
        LABEL.set("quick")
        return ToolResult(ok=True)

    async def waits(args: dict[str, Any], call_ctx: ToolContext) -> ToolResult:
        LABEL.set("waits")
        await asyncio.sleep(0)
        seen.append(LABEL.get())
        return ToolResult(ok=True)

    executor = executor_with(make_tool("quick", quick), make_tool("waits", waits))
    assert (await executor.execute("quick", {}, ctx)).ok and (
        await executor.execute("waits", {}, ctx)
    ).ok
    assert seen == ["caller", "waits"] and LABEL.get() == "caller"


async def test_a_tool_that_waits_is_listed_among_the_running_tasks(ctx: ToolContext) -> None:
    tasks: list[asyncio.Task[Any] | None] = []
    waiting = asyncio.Event()
    release = asyncio.Event()

    async def waits(args: dict[str, Any], call_ctx: ToolContext) -> ToolResult:
        tasks.append(asyncio.current_task())
        waiting.set()
        await release.wait()
        return ToolResult(ok=True)

    call = asyncio.ensure_future(executor_with(make_tool("waits", waits)).execute("waits", {}, ctx))
    await asyncio.wait_for(waiting.wait(), WAIT_S)
    assert tasks[0] is not None and tasks[0] in asyncio.all_tasks()
    release.set()
    assert (await asyncio.wait_for(call, WAIT_S)).ok
    assert tasks[0].done()
