"""The pooled client and the cancellation wrapper."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from lich_core.providers.http import (
    aclose_client,
    get_client,
    parse_tool_arguments,
    run_cancellable,
)
from lich_core.tools.types import CancelToken


async def test_one_client_per_loop_until_closed() -> None:
    first = get_client()
    assert get_client() is first
    await aclose_client()
    assert first.is_closed
    second = get_client()
    assert second is not first and not second.is_closed
    await aclose_client()


def test_each_event_loop_gets_its_own_client() -> None:
    async def grab() -> object:
        client = get_client()
        await aclose_client()
        return client

    assert asyncio.run(grab()) is not asyncio.run(grab())


async def test_cancel_from_another_thread_stops_the_awaitable() -> None:
    cancel = CancelToken()
    timer = threading.Timer(0.1, cancel.cancel)
    timer.start()
    started = time.monotonic()
    with pytest.raises(asyncio.CancelledError):
        await run_cancellable(asyncio.sleep(30), cancel)
    assert time.monotonic() - started < 5
    timer.join()


async def test_run_cancellable_passes_results_and_errors_through() -> None:
    async def value() -> int:
        return 42

    async def boom() -> None:
        raise ValueError("inner")

    assert await run_cancellable(value(), CancelToken()) == 42
    assert await run_cancellable(value(), None) == 42
    with pytest.raises(ValueError, match="inner"):
        await run_cancellable(boom(), CancelToken())


async def test_token_and_caller_cancelling_together_let_cleanup_finish() -> None:
    # The agent loop fires the token and cancels its own await at the same moment; a second
    # cancellation must not cut short the cleanup (httpx closing a half-read stream).
    cleaned_up = asyncio.Event()
    started = asyncio.Event()

    async def stream() -> None:
        started.set()
        try:
            await asyncio.sleep(30)
        finally:
            await asyncio.sleep(0.05)  # an await during cleanup, like closing a socket
            cleaned_up.set()

    cancel = CancelToken()
    caller = asyncio.ensure_future(run_cancellable(stream(), cancel))
    await started.wait()
    cancel.cancel()
    caller.cancel()
    with pytest.raises(asyncio.CancelledError):
        await caller
    assert cleaned_up.is_set()


def test_parse_tool_arguments() -> None:
    assert parse_tool_arguments('{"a": 1}') == ({"a": 1}, "")
    assert parse_tool_arguments("") == ({}, "")
    assert parse_tool_arguments(None) == ({}, "")
    assert parse_tool_arguments({"b": 2}) == ({"b": 2}, "")
    assert parse_tool_arguments("[1, 2]") == ({}, "[1, 2]")
    assert parse_tool_arguments('{"a": ') == ({}, '{"a": ')


async def test_run_cancellable_runs_in_the_calling_task() -> None:
    """No task of its own: a task switch before the request would delay the first token."""
    caller = asyncio.current_task()

    async def where() -> object:
        return asyncio.current_task()

    assert await run_cancellable(where(), CancelToken()) is caller


async def test_the_tokens_cancellation_is_taken_back_before_the_error_leaves() -> None:
    """The caller tells the token's stop from a cancellation of its own task by Task.cancelling()."""
    cancel = CancelToken()
    started = asyncio.Event()

    async def wait_forever() -> None:
        started.set()
        await asyncio.Event().wait()

    async def caller() -> int:
        try:
            await run_cancellable(wait_forever(), cancel)
        except asyncio.CancelledError:
            return asyncio.current_task().cancelling()  # type: ignore[union-attr]
        return -1

    task = asyncio.ensure_future(caller())
    await started.wait()
    cancel.cancel()
    assert await task == 0


async def test_a_token_fired_as_the_call_returns_cancels_nothing_later() -> None:
    """The token's cancel is scheduled (call_soon_threadsafe); landing after the call returned,
    it must not cancel whatever the caller awaits next."""
    cancel = CancelToken()

    async def value() -> int:
        cancel.cancel()
        return 7

    assert await run_cancellable(value(), cancel) == 7
    await asyncio.sleep(0)  # the scheduled callback runs during this turn of the loop
    await asyncio.sleep(0)
    assert asyncio.current_task().cancelling() == 0  # type: ignore[union-attr]
