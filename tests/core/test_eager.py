"""start_eagerly: a task whose first step has run, behaving as a task from its first line."""

from __future__ import annotations

import asyncio
import contextvars
import sys

import pytest

from lich_core.tools.eager import start_eagerly

WAIT_S = 10  # generous upper bound for anything that should happen "soon"

LABEL: contextvars.ContextVar[str] = contextvars.ContextVar("LABEL", default="caller")


async def test_work_that_never_waits_is_done_when_it_returns() -> None:
    steps: list[str] = []

    async def quick() -> int:
        steps.append("ran")
        return 7

    task = start_eagerly(quick())
    assert steps == ["ran"]  # ran before start_eagerly returned, no turn of the loop
    assert task.done() and task.result() == 7


async def test_work_that_waits_finishes_as_a_task() -> None:
    release = asyncio.Event()

    async def waits() -> str:
        await release.wait()
        return "done"

    task = start_eagerly(waits())
    assert not task.done()
    assert task in asyncio.all_tasks()
    release.set()
    assert await asyncio.wait_for(task, WAIT_S) == "done"


async def test_the_work_is_its_own_current_task_from_its_first_line() -> None:
    caller = asyncio.current_task()
    seen: list[asyncio.Task[object] | None] = []
    release = asyncio.Event()

    async def work() -> None:
        seen.append(asyncio.current_task())
        await release.wait()
        seen.append(asyncio.current_task())

    task = start_eagerly(work())
    assert asyncio.current_task() is caller  # the caller is current again
    release.set()
    await asyncio.wait_for(task, WAIT_S)
    assert seen[0] is task and seen[1] is task and task is not caller


async def test_eager_work_does_not_see_or_leak_into_the_callers_context() -> None:
    LABEL.set("caller")
    release = asyncio.Event()
    seen: list[str] = []

    async def work() -> None:
        seen.append(LABEL.get())
        LABEL.set("work")
        await release.wait()
        seen.append(LABEL.get())  # its own value survives its first wait

    task = start_eagerly(work())
    assert LABEL.get() == "caller"
    release.set()
    await asyncio.wait_for(task, WAIT_S)
    assert seen == ["caller", "work"] and LABEL.get() == "caller"


@pytest.mark.skipif(sys.version_info < (3, 11), reason="asyncio.timeout is 3.11+")
async def test_a_timeout_entered_before_the_first_wait_cancels_the_work_not_the_caller() -> None:
    """The reason the work must be a real task from its first line: asyncio.timeout (like an
    anyio cancel scope) binds to the current task on entry."""

    async def work() -> str:
        try:
            async with asyncio.timeout(0.01):  # type: ignore[attr-defined,unused-ignore]
                await asyncio.Event().wait()
        except TimeoutError:
            return "timed out"
        return "not reached"

    task = start_eagerly(work())
    assert await asyncio.wait_for(task, WAIT_S) == "timed out"
    current = asyncio.current_task()
    assert current is not None and current.cancelling() == 0  # type: ignore[attr-defined,unused-ignore]


async def test_an_error_in_the_first_step_is_the_tasks_error() -> None:
    async def fails() -> None:
        raise ValueError("bad")

    task = start_eagerly(fails())
    assert task.done()
    with pytest.raises(ValueError, match="bad"):
        task.result()


async def test_work_that_cancels_itself_in_the_first_step_is_a_cancelled_task() -> None:
    async def gives_up() -> None:
        raise asyncio.CancelledError()

    task = start_eagerly(gives_up())
    assert task.done() and task.cancelled()
    current = asyncio.current_task()
    assert current is not None and not current.cancelled()


async def test_cancelling_the_task_after_its_first_step_reaches_the_work() -> None:
    started = asyncio.Event()
    cleaned = asyncio.Event()

    async def waits() -> None:
        started.set()
        try:
            await asyncio.Event().wait()
        finally:
            cleaned.set()

    task = start_eagerly(waits())
    assert started.is_set()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(task, WAIT_S)
    assert cleaned.is_set()


async def test_a_future_is_wrapped_without_an_eager_step() -> None:
    future: asyncio.Future[int] = asyncio.get_running_loop().create_future()
    task = start_eagerly(future)
    future.set_result(5)
    assert await asyncio.wait_for(task, WAIT_S) == 5


async def test_started_from_a_callback_outside_any_task() -> None:
    loop = asyncio.get_running_loop()
    started: asyncio.Future[asyncio.Future[str]] = loop.create_future()
    caller_seen: list[object] = []

    async def work() -> str:
        return "from a callback"

    def callback() -> None:
        caller_seen.append(asyncio.current_task())
        started.set_result(start_eagerly(work()))
        caller_seen.append(asyncio.current_task())

    loop.call_soon(callback)
    task = await asyncio.wait_for(started, WAIT_S)
    assert task.done() and task.result() == "from a callback"
    assert caller_seen == [None, None]
