"""ToolExecutor: never throws; fast paths, capability gate, guards, deadlines, clamping, shaping."""

from __future__ import annotations

import asyncio
import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from lich_core.errors import ToolError
from lich_core.tools import executor as executor_module
from lich_core.tools.capabilities import CapabilityGate
from lich_core.tools.executor import (
    DEFAULT_TOOL_TIMEOUT_MS,
    TERMINAL_TOOL_TIMEOUT_MS,
    ToolExecutor,
)
from lich_core.tools.registry import ToolRegistry
from lich_core.tools.types import CancelToken, FunctionTool, ToolContext, ToolResult
from lich_core.vocabulary import format_tool_result

WAIT_S = 10  # generous upper bound for anything that should happen "soon"


def make_tool(name: str, run, **kwargs: Any) -> FunctionTool:
    return FunctionTool(
        name=name,
        description=name,
        parameters={"type": "object", "properties": {}},
        run=run,
        **kwargs,
    )


class Calls:
    """Records calls into a tool so a test can assert it ran (or did not)."""

    def __init__(self) -> None:
        self.args: list[dict[str, Any]] = []
        self.contexts: list[ToolContext] = []


def echo_tool(calls: Calls, name: str = "echo", **kwargs: Any) -> FunctionTool:
    async def run(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        calls.args.append(args)
        calls.contexts.append(ctx)
        return ToolResult(ok=True, output=str(args.get("text", "ok")))

    return make_tool(name, run, **kwargs)


def executor_with(*tools: FunctionTool, **kwargs: Any) -> ToolExecutor:
    return ToolExecutor(ToolRegistry(tools), **kwargs)


@pytest.fixture
def ctx(tmp_path: Path) -> ToolContext:
    return ToolContext(work_dir=tmp_path)


def test_timeout_constants_follow_the_seed() -> None:
    assert DEFAULT_TOOL_TIMEOUT_MS == 30_000
    assert TERMINAL_TOOL_TIMEOUT_MS == 300_000


async def test_unknown_tool_is_an_error_result(ctx: ToolContext) -> None:
    result = await executor_with().execute("nope", {}, ctx)
    assert result == ToolResult(ok=False, output="", error="unknown_tool: nope")


async def test_success_passes_args_and_context(ctx: ToolContext) -> None:
    calls = Calls()
    result = await executor_with(echo_tool(calls)).execute("echo", {"text": "hi"}, ctx)
    assert result.ok and result.output == "hi"
    assert calls.args == [{"text": "hi"}]
    assert calls.contexts[0].work_dir == ctx.work_dir
    # The tool gets its own cancellation token, not the caller's; everything else is shared.
    seen = calls.contexts[0]
    assert seen.cancel is not ctx.cancel
    assert (
        seen.workspace is ctx.workspace
        and seen.read_state is ctx.read_state
        and seen.env is ctx.env
    )


async def test_non_dict_args_become_empty(ctx: ToolContext) -> None:
    calls = Calls()
    result = await executor_with(echo_tool(calls)).execute("echo", None, ctx)  # type: ignore[arg-type]
    assert result.ok and calls.args == [{}]


async def test_default_context_uses_executor_settings(tmp_path: Path) -> None:
    calls = Calls()
    executor = executor_with(echo_tool(calls), work_dir=tmp_path, env={"A": "1"}, settings={"k": 2})
    assert (await executor.execute("echo", {})).ok
    seen = calls.contexts[0]
    assert seen.work_dir == tmp_path.resolve()
    assert seen.env == {"A": "1"}
    assert seen.settings.extra == {"k": 2} and seen.settings["k"] == 2


async def test_already_cancelled_runs_nothing(ctx: ToolContext) -> None:
    calls = Calls()
    ctx.cancel.cancel()
    result = await executor_with(echo_tool(calls)).execute("echo", {}, ctx)
    assert result == ToolResult(ok=False, output="", error="cancelled")
    assert calls.args == []


async def test_capability_denied_runs_nothing(ctx: ToolContext) -> None:
    calls = Calls()
    executor = executor_with(
        echo_tool(calls, capability="file/write"), gate=CapabilityGate(["file/read"])
    )
    result = await executor.execute("echo", {}, ctx)
    assert result.ok is False and result.error == "capability_denied: file/write"
    assert calls.args == []


async def test_empty_grant_denies_gated_but_not_ungated_tools(ctx: ToolContext) -> None:
    gated, free = Calls(), Calls()
    executor = executor_with(
        echo_tool(gated, "gated", capability="process/exec"),
        echo_tool(free, "free"),
        gate=CapabilityGate([]),
    )
    assert (await executor.execute("gated", {}, ctx)).error == "capability_denied: process/exec"
    assert (await executor.execute("free", {}, ctx)).ok
    assert gated.args == [] and len(free.args) == 1


async def test_capability_denied_builtin_writes_nothing(tmp_path: Path) -> None:
    from lich_core.tools.builtin.write_file import TOOL as WRITE_TOOL

    executor = executor_with(WRITE_TOOL, gate=CapabilityGate(["file/read"]), work_dir=tmp_path)
    result = await executor.execute("write_file", {"path": "x.txt", "content": "hi"})
    assert result.error == "capability_denied: file/write"
    assert not (tmp_path / "x.txt").exists()


async def test_guards_can_refuse_and_see_the_call(ctx: ToolContext) -> None:
    calls = Calls()
    seen: list[tuple[str, dict[str, Any]]] = []

    async def deny_secret(tool, args, call_ctx) -> str | None:
        seen.append((tool.name, args))
        return "blocked_by_plugin: no secrets" if args.get("text") == "secret" else None

    executor = executor_with(echo_tool(calls), call_checks=[deny_secret])
    refused = await executor.execute("echo", {"text": "secret"}, ctx)
    assert refused.ok is False and refused.error == "blocked_by_plugin: no secrets"
    assert calls.args == []
    allowed = await executor.execute("echo", {"text": "fine"}, ctx)
    assert allowed.ok and allowed.output == "fine"
    assert seen == [("echo", {"text": "secret"}), ("echo", {"text": "fine"})]


async def test_a_broken_guard_refuses_instead_of_crashing(ctx: ToolContext) -> None:
    calls = Calls()

    async def broken(tool, args, call_ctx) -> str | None:
        raise RuntimeError("guard blew up")

    result = await executor_with(echo_tool(calls), call_checks=[broken]).execute("echo", {}, ctx)
    assert result.ok is False and result.error == "guard_error: guard blew up"
    assert calls.args == []


async def test_cancel_during_guard_runs_nothing(ctx: ToolContext) -> None:
    calls = Calls()

    async def cancel_then_allow(tool, args, call_ctx) -> str | None:
        call_ctx.cancel.cancel()  # the user hit cancel while an approval prompt was open
        return None

    result = await executor_with(echo_tool(calls), call_checks=[cancel_then_allow]).execute(
        "echo", {}, ctx
    )
    assert result.error == "cancelled" and calls.args == []


async def test_declared_timeout_gives_timeout_error_and_cancels_tool_token(
    ctx: ToolContext,
) -> None:
    tokens: list[CancelToken] = []

    async def slow(args: dict[str, Any], call_ctx: ToolContext) -> ToolResult:
        tokens.append(call_ctx.cancel)
        await asyncio.sleep(WAIT_S)
        return ToolResult(ok=True, output="late")

    result = await executor_with(make_tool("slow", slow, timeout_ms=50)).execute("slow", {}, ctx)
    assert result.ok is False and result.error == "timeout: slow exceeded 50ms"
    assert tokens[0].cancelled
    # The caller's own token is left alone: a timeout is not a user cancel.
    assert not ctx.cancel.cancelled


async def test_default_timeout_applies_when_tool_declares_none(
    ctx: ToolContext, monkeypatch
) -> None:
    monkeypatch.setattr(executor_module, "DEFAULT_TOOL_TIMEOUT_MS", 40)

    async def slow(args: dict[str, Any], call_ctx: ToolContext) -> ToolResult:
        await asyncio.sleep(WAIT_S)
        return ToolResult(ok=True)

    result = await executor_with(make_tool("slow", slow)).execute("slow", {}, ctx)
    assert result.error == "timeout: slow exceeded 40ms"


async def test_cancellation_mid_run_reports_cancelled_and_lets_tool_clean_up(
    ctx: ToolContext,
) -> None:
    started = asyncio.Event()
    cleaned = asyncio.Event()

    async def waits(args: dict[str, Any], call_ctx: ToolContext) -> ToolResult:
        started.set()
        try:
            await asyncio.sleep(WAIT_S)
        finally:
            cleaned.set()
        return ToolResult(ok=True)

    task = asyncio.ensure_future(executor_with(make_tool("waits", waits)).execute("waits", {}, ctx))
    await asyncio.wait_for(started.wait(), WAIT_S)
    ctx.cancel.cancel()
    result = await asyncio.wait_for(task, WAIT_S)
    assert result == ToolResult(ok=False, output="", error="cancelled")
    assert cleaned.is_set()


async def test_finished_call_stops_listening_to_the_callers_token(ctx: ToolContext) -> None:
    calls = Calls()
    executor = executor_with(echo_tool(calls))
    for _ in range(3):
        assert (await executor.execute("echo", {}, ctx)).ok
    ctx.cancel.cancel()  # e.g. the session is cancelled later, long after these calls
    assert not any(call_ctx.cancel.cancelled for call_ctx in calls.contexts)


async def test_tool_that_cancels_itself_reports_cancelled(ctx: ToolContext) -> None:
    async def gives_up(args: dict[str, Any], call_ctx: ToolContext) -> ToolResult:
        raise asyncio.CancelledError()

    result = await executor_with(make_tool("gives_up", gives_up)).execute("gives_up", {}, ctx)
    assert result == ToolResult(ok=False, output="", error="cancelled")
    assert not ctx.cancel.cancelled


async def test_tool_that_returns_an_error_after_cancel_reports_cancelled(ctx: ToolContext) -> None:
    async def cooperative(args: dict[str, Any], call_ctx: ToolContext) -> ToolResult:
        call_ctx.cancel.cancel()  # e.g. its child process was killed by the cancel
        return ToolResult(ok=False, error="exit 137")

    result = await executor_with(make_tool("coop", cooperative)).execute("coop", {}, ctx)
    assert result.error == "cancelled"


async def test_success_output_is_clamped_at_20000_chars(ctx: ToolContext) -> None:
    async def flood(args: dict[str, Any], call_ctx: ToolContext) -> ToolResult:
        return ToolResult(ok=True, output="z" * 25_000)

    result = await executor_with(make_tool("flood", flood)).execute("flood", {}, ctx)
    assert result.ok
    assert result.output.startswith("z" * 20_000)
    assert result.output.endswith("[... truncated, 5000 chars omitted ...]")
    assert len(result.output) < 20_100


async def test_declared_max_output_chars_raises_the_clamp(ctx: ToolContext) -> None:
    async def flood(args: dict[str, Any], call_ctx: ToolContext) -> ToolResult:
        return ToolResult(ok=True, output="z" * 60_000)

    tool = make_tool("flood", flood)
    tool.max_output_chars = 50_000  # type: ignore[attr-defined]
    result = await executor_with(tool).execute("flood", {}, ctx)
    assert result.output.endswith("[... truncated, 10000 chars omitted ...]")
    assert result.output.startswith("z" * 50_000)


async def test_throwing_tool_becomes_error_result(ctx: ToolContext) -> None:
    async def boom(args: dict[str, Any], call_ctx: ToolContext) -> ToolResult:
        raise RuntimeError("kaput")

    async def prefixed(args: dict[str, Any], call_ctx: ToolContext) -> ToolResult:
        raise ToolError("not_found: gone.txt")

    executor = executor_with(make_tool("boom", boom), make_tool("prefixed", prefixed))
    assert await executor.execute("boom", {}, ctx) == ToolResult(
        ok=False, output="", error="RuntimeError: kaput"
    )
    assert (await executor.execute("prefixed", {}, ctx)).error == "not_found: gone.txt"


async def test_bad_return_type_is_an_error(ctx: ToolContext) -> None:
    async def wrong(args: dict[str, Any], call_ctx: ToolContext) -> Any:
        return "just a string"

    result = await executor_with(make_tool("wrong", wrong)).execute("wrong", {}, ctx)
    assert result.ok is False and result.error.startswith("bad_tool_result:")
    assert "str" in result.error


async def test_caller_task_cancellation_propagates_and_stops_the_tool(ctx: ToolContext) -> None:
    started = asyncio.Event()
    tool_tokens: list[CancelToken] = []

    async def waits(args: dict[str, Any], call_ctx: ToolContext) -> ToolResult:
        tool_tokens.append(call_ctx.cancel)
        started.set()
        await asyncio.sleep(WAIT_S)
        return ToolResult(ok=True)

    task = asyncio.ensure_future(executor_with(make_tool("waits", waits)).execute("waits", {}, ctx))
    await asyncio.wait_for(started.wait(), WAIT_S)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert tool_tokens[0].cancelled


def test_format_tool_result_raw_on_success_json_on_error() -> None:
    assert format_tool_result(ToolResult(ok=True, output="line 1\nline 2")) == "line 1\nline 2"
    rendered = format_tool_result(
        ToolResult(ok=False, output="partial", error="timeout: x exceeded 5ms")
    )
    assert json.loads(rendered) == {
        "ok": False,
        "output": "partial",
        "error": "timeout: x exceeded 5ms",
    }
    # Details never reach the model.
    with_details = ToolResult(ok=False, error="e", details={"prior_content": "secret"})
    assert "prior_content" not in format_tool_result(with_details)
    assert json.loads(format_tool_result(ToolResult(ok=False, error="é")))["error"] == "é"


async def test_each_default_context_is_fresh_and_reads_the_executor_at_the_call(
    tmp_path: Path,
) -> None:
    """default_context reuses what is per work dir (the resolved dir, its DiskWorkspace) and
    makes the rest per call, as ToolContext(...) would: a token, a read state, an env copy."""
    executor = executor_with(work_dir=tmp_path, env={"A": "1"}, settings={"k": 1})
    first, second = executor.default_context(), executor.default_context()
    for ctx in (first, second):
        assert ctx.work_dir == tmp_path.resolve() and ctx.workspace is not None
        assert ctx.workspace.root == tmp_path.resolve()
        assert ctx.env == {"A": "1"} and ctx.settings.extra == {"k": 1}
    assert first.cancel is not second.cancel and first.read_state is not second.read_state
    assert first.env is not second.env and first.env is not executor.env
    first.cancel.cancel()
    assert not second.cancel.cancelled
    assert first.read_state is not None and second.read_state is not None
    first.read_state.record(tmp_path / "seen.py")
    assert not second.read_state.has_read(tmp_path / "seen.py")
    # Every other field holds what a ToolContext built from the same values holds.
    built = ToolContext(work_dir=tmp_path, env={"A": "1"}, settings={"k": 1})
    for field in dataclasses.fields(ToolContext):
        if field.name not in ("cancel", "read_state", "workspace"):
            assert getattr(first, field.name) == getattr(built, field.name), field.name
    # The executor's attributes are read at each call, the work dir included.
    executor.env["B"] = "2"
    executor.terminal_timeout_ms = 1234
    other = tmp_path / "other"
    other.mkdir()
    executor.work_dir = other
    third = executor.default_context()
    assert third.env == {"A": "1", "B": "2"} and third.terminal_timeout_ms == 1234
    assert third.work_dir == other.resolve() and third.workspace is not None
    assert third.workspace.root == other.resolve()


async def test_a_tool_runs_as_its_own_task_whether_or_not_it_waits(ctx: ToolContext) -> None:
    caller = asyncio.current_task()
    seen: list[object] = []

    async def quick(args: dict[str, Any], call_ctx: ToolContext) -> ToolResult:
        seen.append(asyncio.current_task())
        return ToolResult(ok=True)

    async def waits(args: dict[str, Any], call_ctx: ToolContext) -> ToolResult:
        seen.append(asyncio.current_task())
        await asyncio.sleep(0)
        seen.append(asyncio.current_task())
        return ToolResult(ok=True)

    executor = executor_with(make_tool("quick", quick), make_tool("waits", waits))
    assert (await executor.execute("quick", {}, ctx)).ok
    assert (await executor.execute("waits", {}, ctx)).ok
    assert asyncio.current_task() is caller
    assert all(task is not None and task is not caller for task in seen)
    assert seen[1] is seen[2]  # the same task before and after its first wait


async def test_a_token_already_cancelled_when_the_work_starts_is_the_works_too() -> None:
    caller = CancelToken()
    caller.cancel("user")
    seen: list[tuple[bool, str]] = []

    async def work(token: CancelToken) -> str:
        seen.append((token.cancelled, token.reason))
        return "ran"

    from lich_core.tools.guard import with_timeout

    assert await with_timeout(work, 1000, "work", cancel=caller) == "ran"
    assert seen == [(True, "user")]


async def test_a_tool_that_waits_follows_a_cancel_that_comes_after_its_first_step(
    ctx: ToolContext,
) -> None:
    waiting = asyncio.Event()
    tokens: list[CancelToken] = []

    async def waits(args: dict[str, Any], call_ctx: ToolContext) -> ToolResult:
        tokens.append(call_ctx.cancel)
        waiting.set()
        await call_ctx.cancel.wait()
        return ToolResult(ok=False, error="exit 143")

    call = asyncio.ensure_future(executor_with(make_tool("waits", waits)).execute("waits", {}, ctx))
    await asyncio.wait_for(waiting.wait(), WAIT_S)
    ctx.cancel.cancel()
    result = await asyncio.wait_for(call, WAIT_S)
    assert result.error == "cancelled" and tokens[0].cancelled
