"""Start a task eagerly: its first step runs at once, in the caller's turn of the event loop.

Most tool calls never wait (read_file, apply_patch on disk, a plugin's pure function): started
as a plain task, such a call costs a task switch there and one back, several turns of the loop
and most of a tool call's time. Started eagerly, it is finished when `start_eagerly` returns,
and the deadline race (`guard.with_timeout`) is skipped.

The work still runs as a task of its own from its first line: `asyncio.current_task()` is that
task (an `asyncio.timeout`, an anyio cancel scope or a task-cancelling helper entered before the
first wait binds to it, as it would in a plain task), it runs in a copy of the caller's context
(contextvars it sets stay its own), and a cancellation reaches it like any task's.

Python 3.12+ has this built in (`asyncio.Task(eager_start=True)`). On 3.10 and 3.11 it is
built from asyncio's pure-Python Task, whose internals are frozen in those releases: the task
is set up without scheduling its first step, and that step is taken here, with the caller's
task stepped out of `current_task` meanwhile (the event loop does the same between steps).
"""

from __future__ import annotations

import asyncio
import contextvars
import sys
from collections.abc import Awaitable, Coroutine
from types import CoroutineType
from typing import Any, TypeVar

T = TypeVar("T")

__all__ = ["start_eagerly"]

if sys.version_info >= (3, 12):

    def _eager_task(loop: asyncio.AbstractEventLoop, coro: Coroutine[Any, Any, T]) -> asyncio.Future[T]:
        return asyncio.Task(coro, loop=loop, eager_start=True)  # type: ignore[call-arg,unused-ignore]

else:
    from asyncio import futures as _futures
    from asyncio import tasks as _tasks

    class _EagerTask(_tasks._PyTask):  # type: ignore[name-defined,misc]
        """asyncio's Python Task, its first step taken in __init__ instead of scheduled."""

        def __init__(self, loop: asyncio.AbstractEventLoop, coro: Coroutine[Any, Any, Any]) -> None:
            # _PyTask.__init__ minus its call_soon(self.__step): the same fields, the same order.
            _futures._PyFuture.__init__(self, loop=loop)  # type: ignore[attr-defined]
            if self._source_traceback:
                del self._source_traceback[-1]
            self._name = f"Task-{_tasks._task_name_counter()}"  # type: ignore[attr-defined]
            self._must_cancel = False
            self._fut_waiter = None
            self._coro = coro
            self._context = contextvars.copy_context()
            self._num_cancels_requested = 0  # 3.11's cancelling()/uncancel() count (unused on 3.10)
            caller = asyncio.current_task(loop)
            if caller is not None:  # a task's step may only start while no other task is current
                _tasks._leave_task(loop, caller)
            try:
                self._context.run(self._Task__step)
            finally:
                if caller is not None:
                    _tasks._enter_task(loop, caller)
            if not self.done():
                _tasks._register_task(self)  # all_tasks() lists it from now on

    _eager_task = _EagerTask  # the class is the factory: one call less per task


def start_eagerly(awaitable: Awaitable[T]) -> asyncio.Future[T]:
    """A task for `awaitable` whose first step has run: done() already if it never waited.

    Call it from a coroutine (it needs the running loop). Anything but a coroutine (a future,
    an object with __await__) is wrapped as asyncio.ensure_future does, without the eager step.
    The loop's task factory, if one is set, is not used for coroutines.
    """
    if type(awaitable) is CoroutineType or asyncio.iscoroutine(awaitable):
        return _eager_task(asyncio.get_running_loop(), awaitable)  # type: ignore[arg-type]
    return asyncio.ensure_future(awaitable)
