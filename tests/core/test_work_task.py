"""with_timeout's work runs as a task of its own: plain asyncio tasks, started eagerly where
asyncio can (3.12+: asyncio.eager_task_factory), scheduled otherwise (#34)."""

from __future__ import annotations

import asyncio
import sys

import pytest

from lich_core.errors import ToolTimeoutError
from lich_core.tools.guard import with_timeout
from lich_core.vocabulary import CancelToken

WAIT_S = 10  # generous upper bound for anything that should happen "soon"


@pytest.mark.skipif(sys.version_info < (3, 11), reason="asyncio.timeout is 3.11+")
async def test_a_timeout_entered_before_the_first_wait_cancels_the_work_not_the_caller() -> None:
    """The reason the work is a real task from its first line: asyncio.timeout (like an anyio
    cancel scope) binds to the current task on entry."""
    work_tasks: list[asyncio.Task[object] | None] = []

    async def work(token: CancelToken) -> str:
        work_tasks.append(asyncio.current_task())
        try:
            async with asyncio.timeout(0.01):  # type: ignore[attr-defined,unused-ignore]
                await asyncio.Event().wait()
        except TimeoutError:
            return "timed out"
        return "not reached"

    assert await with_timeout(work, WAIT_S * 1000, "work") == "timed out"
    caller = asyncio.current_task()
    assert caller is not None and work_tasks[0] is not caller
    assert caller.cancelling() == 0  # type: ignore[attr-defined,unused-ignore]


async def test_an_error_in_the_works_first_step_is_raised_to_the_caller() -> None:
    async def fails(token: CancelToken) -> None:
        raise ValueError("bad")

    with pytest.raises(ValueError, match="bad"):
        await with_timeout(fails, WAIT_S * 1000, "fails")


async def test_work_that_waits_past_the_deadline_times_out_and_is_stopped() -> None:
    stopped = asyncio.Event()

    async def waits(token: CancelToken) -> None:
        try:
            await asyncio.Event().wait()
        finally:
            stopped.set()

    with pytest.raises(ToolTimeoutError, match="timeout: waits exceeded 10ms"):
        await with_timeout(waits, 10, "waits")
    assert stopped.is_set()


async def test_work_that_never_waits_takes_a_turn_of_the_loop_only_where_asyncio_cannot_start_eagerly() -> (
    None
):
    turned: list[bool] = []
    asyncio.get_running_loop().call_soon(turned.append, True)

    async def quick(token: CancelToken) -> int:
        return 7

    assert await with_timeout(quick, WAIT_S * 1000, "quick") == 7
    # 3.12+: done in its eager first step, before any turn of the loop; 3.10 and 3.11: a plain
    # task, scheduled.
    assert turned == ([] if sys.version_info >= (3, 12) else [True])
