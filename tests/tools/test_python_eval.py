"""python_eval: a live child interpreter per run, bounded output and values, deadlines, cancellation."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

import pytest

from lich_core.tools.builtin.python_eval import TOOL, TOOL_TIMEOUT_MS
from lich_core.tools.executor import ToolExecutor
from lich_core.tools.python_image import MAX_OUTPUT_CHARS, REGISTRY, RESTARTED_NOTE, interpreter_for
from lich_core.tools.registry import ToolRegistry
from lich_core.tools.types import ToolContext
from lich_core.vocabulary import CancelToken
from tests.support.processes import pid_alive
from tests.support.provider_helpers import wait_until

# Failure detection only: every wait below is on an event or a result.
BOUND_S = 30.0


def make_ctx(work_dir: Path) -> ToolContext:
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(work_dir)}
    return ToolContext(work_dir=work_dir, env=env)


@pytest.fixture
def ctx(tmp_path: Path):
    context = make_ctx(tmp_path)
    yield context
    REGISTRY.stop_all()


async def run(ctx: ToolContext, code: str, **args):
    return await asyncio.wait_for(TOOL.execute({"code": code, **args}, ctx), BOUND_S + 300)


def image_pid(ctx: ToolContext) -> int | None:
    (image,) = [image for image in REGISTRY.images() if image.root == ctx.work_dir]
    return image.pid


def test_declares_capability_and_a_deadline_above_the_budget() -> None:
    assert TOOL.capability == "image/eval"
    assert TOOL.timeout_ms is not None and TOOL.timeout_ms > 300_000 + 10_000
    assert TOOL_TIMEOUT_MS == TOOL.timeout_ms


async def test_state_persists_and_the_last_expression_is_shown(ctx: ToolContext) -> None:
    first = await run(ctx, "import math\nx = 41\nx + 1")
    assert first.ok and first.output == "42"
    second = await run(ctx, "def double(v):\n    return 2 * v\ndouble(x) + math.floor(0.5)")
    assert second.ok and second.output == "82"
    pid = image_pid(ctx)
    assert pid != os.getpid() and pid_alive(pid)
    assert (await run(ctx, "None")).output == ""
    assert (await run(ctx, "'a' * 3")).output == "'aaa'"
    assert (await run(ctx, "_")).output == "'aaa'"  # the REPL's last value


async def test_each_run_has_its_own_image(tmp_path: Path) -> None:
    one, two = make_ctx(tmp_path), make_ctx(tmp_path)
    try:
        assert (await run(one, "v = 1")).ok
        other = await run(two, "v")
        assert not other.ok and other.error.startswith("eval_error: NameError")
        # A clone per call (the executor's) shares the run's image.
        assert (await run(one.with_cancel(CancelToken()), "v")).output == "1"
    finally:
        REGISTRY.stop_all()


async def test_image_stops_when_the_run_is_gone(tmp_path: Path) -> None:
    context = make_ctx(tmp_path)
    assert (await run(context, "1")).ok
    (image,) = [i for i in REGISTRY.images() if i.root == tmp_path]
    pid = image.pid
    assert pid is not None and pid_alive(pid)
    del context  # its ReadState goes with it; the finalizer stops the image
    import gc

    gc.collect()
    assert image.pid is None and not pid_alive(pid)


async def test_stdout_and_stderr_are_captured_in_order(ctx: ToolContext) -> None:
    result = await run(
        ctx,
        "import sys, os\nprint('out')\nprint('err', file=sys.stderr)\nos.system('echo from-fd')\n7",
    )
    assert result.ok
    assert result.output == "out\nerr\nfrom-fd\n0" or result.output.startswith("out\nerr\n")
    assert "from-fd" in result.output


async def test_a_print_flood_is_capped_at_the_stream(ctx: ToolContext) -> None:
    started = time.monotonic()
    result = await run(ctx, "for _ in range(100):\n    print('x' * 1_000_000)\n'done'")
    assert result.ok, result.error
    assert time.monotonic() - started < BOUND_S
    # The first 1 MiB of the stream: a whole line (with its newline) and the start of the next.
    assert result.output.count("x") == MAX_OUTPUT_CHARS - 1
    assert "chars omitted" in result.output and result.output.endswith("'done'")
    assert result.details["dropped_chars"] == 100 * 1_000_001 - MAX_OUTPUT_CHARS
    # The image still answers, with a fresh cap.
    assert (await run(ctx, "print('small')")).output == "small"


async def test_an_infinite_loop_is_interrupted_and_state_kept(ctx: ToolContext) -> None:
    started = time.monotonic()
    result = await run(ctx, "kept = 'yes'\nprint('before')\nwhile True: pass", timeout=1)
    assert time.monotonic() - started < BOUND_S
    assert not result.ok
    assert (
        result.error
        == "timeout: python_eval exceeded 1 s; the interpreter's state may be partially modified"
    )
    assert "before" in result.output and "KeyboardInterrupt" in result.output
    assert (await run(ctx, "kept")).output == "'yes'"


async def test_a_c_level_hang_is_killed_and_the_image_restarted(ctx: ToolContext) -> None:
    assert (await run(ctx, "lost = 1")).ok
    old_pid = image_pid(ctx)
    code = "import signal, time\nsignal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGINT])\ntime.sleep(120)"
    result = await run(ctx, code, timeout=1)
    assert not result.ok and result.error.startswith("timeout: python_eval exceeded 1 s")
    assert RESTARTED_NOTE in result.error
    assert old_pid is not None and not pid_alive(old_pid)
    after = await run(ctx, "lost")
    assert not after.ok and "NameError" in after.error
    assert image_pid(ctx) != old_pid


async def test_a_dead_child_is_restarted_with_a_note(ctx: ToolContext) -> None:
    died = await run(ctx, "import os\nos._exit(3)")
    assert (
        not died.ok and died.error.startswith("interpreter_exited:") and "exit code 3" in died.error
    )
    again = await run(ctx, "1 + 1")
    assert again.ok and RESTARTED_NOTE in again.output and again.output.endswith("2")


async def test_a_recursion_bomb_is_an_error_and_the_image_lives(ctx: ToolContext) -> None:
    result = await run(ctx, "def f(n):\n    return f(n + 1)\nf(0)")
    assert not result.ok and result.error.startswith("eval_error: RecursionError")
    assert len(result.output) < 5_000 and "python_image_child" not in result.output
    deep = await run(ctx, "d = []\nfor _ in range(100_000):\n    d = [d]\nd")
    assert deep.ok and len(deep.output) < 5_000
    assert (await run(ctx, "f")).output.startswith("<function f")


async def test_huge_and_circular_values_print_bounded(ctx: ToolContext) -> None:
    big = await run(ctx, "list(range(10**6))")
    assert (
        big.ok
        and big.output.startswith("[0, 1, 2")
        and big.output.endswith("...]")
        and len(big.output) < 1_000
    )
    loop = await run(ctx, "a = [1]\na.append(a)\na")
    assert loop.ok and loop.output == "[1, [...]]"
    wide = await run(ctx, "w = [0] * 100\nfor _ in range(20):\n    w = [w] * 100\nw")
    assert wide.ok and len(wide.output) <= 20_100
    text = await run(ctx, "'y' * 10**6")
    assert text.ok and len(text.output) < 200
    broken = await run(
        ctx, "class B:\n    def __repr__(self):\n        raise ValueError('no')\nB()"
    )
    assert broken.ok and "B" in broken.output


async def test_errors_are_reported_with_a_short_traceback(ctx: ToolContext) -> None:
    syntax = await run(ctx, "x = (1,\n")
    assert not syntax.ok and syntax.error.startswith("eval_error: SyntaxError")
    failed = await run(ctx, "y = 5\nprint('partial')\n1 / 0\ny = 6")
    assert not failed.ok and failed.error == "eval_error: ZeroDivisionError: division by zero"
    assert failed.output.startswith("partial\nTraceback") and "1 / 0" in failed.output
    assert (await run(ctx, "y")).output == "5"  # statements before the error ran, after it not
    exited = await run(ctx, "raise SystemExit(2)")
    assert not exited.ok and exited.error == "eval_error: SystemExit: 2"
    assert (await run(ctx, "y")).output == "5"


async def test_bad_arguments(ctx: ToolContext) -> None:
    assert (await TOOL.execute({}, ctx)).error == "missing_arg: code"
    assert (await TOOL.execute({"code": "1", "timeout": "soon"}, ctx)).error.startswith(
        "bad_arg: timeout"
    )
    assert (await TOOL.execute({"code": "1", "timeout": 0}, ctx)).error.startswith(
        "bad_arg: timeout"
    )


def test_the_workspace_venv_python_is_used_only_when_trusted(tmp_path: Path) -> None:
    import sys

    assert interpreter_for(tmp_path, trusted=True) == sys.executable
    venv_python = tmp_path / ".venv" / "bin" / "python"
    venv_python.parent.mkdir(parents=True)
    venv_python.symlink_to(sys.executable)
    assert interpreter_for(tmp_path, trusted=True) == str(venv_python)
    assert interpreter_for(tmp_path, trusted=False) == sys.executable


async def test_cancellation_through_the_executor_is_prompt(ctx: ToolContext) -> None:
    registry = ToolRegistry()
    registry.register(TOOL)
    executor = ToolExecutor(registry, work_dir=ctx.work_dir, env=ctx.env)
    assert (await executor.execute("python_eval", {"code": "kept = 3"}, ctx)).ok
    started_file = ctx.work_dir / "started"
    cancel = CancelToken()
    call_ctx = ctx.with_cancel(cancel)
    code = f"open({str(started_file)!r}, 'w').close()\nwhile True: pass"
    call = asyncio.ensure_future(executor.execute("python_eval", {"code": code}, call_ctx))
    # The child's own signal that the loop is running.
    await wait_until(lambda: started_file.exists() or call.done(), BOUND_S)
    assert not call.done()
    cancelled_at = time.monotonic()
    cancel.cancel()
    result = await asyncio.wait_for(call, BOUND_S)
    assert time.monotonic() - cancelled_at < 1.0
    assert not result.ok and result.error == "cancelled"
    assert (await executor.execute("python_eval", {"code": "kept"}, ctx)).output == "3"


async def test_task_cancellation_interrupts_the_child(ctx: ToolContext) -> None:
    started_file = ctx.work_dir / "started"
    code = f"n = 0\nopen({str(started_file)!r}, 'w').close()\nwhile True: n += 1"
    call = asyncio.ensure_future(TOOL.execute({"code": code}, ctx))
    # The child's own signal that the loop is running.
    await wait_until(lambda: started_file.exists() or call.done(), BOUND_S)
    assert not call.done()
    cancelled_at = time.monotonic()
    call.cancel()
    with pytest.raises(asyncio.CancelledError):
        await call
    assert time.monotonic() - cancelled_at < 1.0
    counted = await run(ctx, "n > 0")
    assert counted.output == "True"  # interrupted, not killed: the image kept its state
