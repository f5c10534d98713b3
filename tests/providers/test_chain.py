"""Retry in place, failover, Retry-After and cancellation in ProviderChain, over real HTTP."""

from __future__ import annotations

import asyncio
import time

import pytest

from lich_core.agent.messages import Message
from lich_core.providers.base import CallOptions, ProviderError
from lich_core.providers.chain import ProviderChain, backoff_ms
from lich_core.providers.openai_compat import OpenAICompatModel
from lich_core.tools.types import CancelToken
from tests.support.fake_provider import FakeProviderServer
from tests.support.provider_helpers import KINDS, SleepRecorder, make_model, wait_until

HELLO = [Message(role="user", content="hi")]


def test_backoff_schedule() -> None:
    assert [backoff_ms(a) for a in range(3)] == [500, 1250, 2500]
    assert backoff_ms(10) == 8000


@pytest.mark.parametrize("kind", KINDS)
async def test_rate_limit_retried_in_place_with_retry_after_floor(
    kind, fake_provider, sleeps
) -> None:
    fake_provider.script({"status": 429, "retry_after": 2}, {"text": "ok now"})
    chain = ProviderChain([make_model(kind, fake_provider)], sleep=sleeps)
    response = await chain.complete(HELLO, [])
    assert response.message.content == "ok now"
    assert len(fake_provider.requests) == 2
    assert sleeps.delays == [2.0]  # Retry-After 2 s beats the 0.5 s backoff


async def test_backoff_wins_over_a_shorter_retry_after(fake_provider, sleeps) -> None:
    fake_provider.script(
        {"status": 429, "retry_after": 0}, {"status": 429, "retry_after": 1}, {"text": "ok"}
    )
    chain = ProviderChain([make_model("openai_compat", fake_provider)], sleep=sleeps)
    assert (await chain.complete(HELLO, [])).message.content == "ok"
    assert sleeps.delays == [0.5, 1.25]


async def test_retry_after_http_date_is_understood(fake_provider, sleeps) -> None:
    from email.utils import formatdate

    fake_provider.script(
        {"status": 429, "retry_after": formatdate(time.time() + 20, usegmt=True)}, {"text": "ok"}
    )
    chain = ProviderChain([make_model("openai_compat", fake_provider)], sleep=sleeps)
    assert (await chain.complete(HELLO, [])).message.content == "ok"
    assert len(sleeps.delays) == 1 and 15 < sleeps.delays[0] <= 20


async def test_long_retry_after_fails_over_instead_of_waiting(sleeps) -> None:
    with FakeProviderServer() as first, FakeProviderServer() as second:
        first.script({"status": 429, "retry_after": 120})
        second.script({"text": "from second"})
        chain = ProviderChain(
            [
                make_model("openai_compat", first, name="a"),
                make_model("anthropic", second, name="b"),
            ],
            sleep=sleeps,
        )
        response = await chain.complete(HELLO, [])
    assert response.message.content == "from second"
    assert response.provider == "b"
    assert sleeps.delays == []
    assert len(first.requests) == 1


async def test_rate_limit_three_attempts_then_failover(sleeps) -> None:
    with FakeProviderServer() as first, FakeProviderServer() as second:
        first.script(*[{"status": 429}] * 3)
        chain = ProviderChain(
            [make_model("openai_compat", first, name="a"), make_model("ollama", second, name="b")],
            sleep=sleeps,
        )
        response = await chain.complete(HELLO, [])
    assert len(first.requests) == 3
    assert sleeps.delays == [0.5, 1.25]
    assert response.provider == "b"
    assert [(name, attempt, err.kind) for name, attempt, err in chain.last_failures] == [
        ("a", 0, "rate_limit"),
        ("a", 1, "rate_limit"),
        ("a", 2, "rate_limit"),
    ]


@pytest.mark.parametrize("status", [401, 400, 413])
async def test_other_errors_fail_over_without_retry(status, sleeps) -> None:
    with FakeProviderServer() as first, FakeProviderServer() as second:
        first.script({"status": status})
        second.script({"text": "second answers"})
        chain = ProviderChain(
            [
                make_model("anthropic", first, name="a"),
                make_model("openai_compat", second, name="b"),
            ],
            sleep=sleeps,
        )
        response = await chain.complete(HELLO, [])
    assert response.message.content == "second answers"
    assert len(first.requests) == 1
    assert sleeps.delays == []
    assert chain.last_failures[0][2].status == status


@pytest.mark.parametrize("status", [500, 502, 503])
async def test_a_server_fault_is_retried_once_with_backoff_then_fails_over(status, sleeps) -> None:
    with FakeProviderServer() as first, FakeProviderServer() as second:
        first.script({"status": status}, {"status": status})
        second.script({"text": "second answers"})
        chain = ProviderChain(
            [make_model("ollama", first, name="a"), make_model("openai_compat", second, name="b")],
            sleep=sleeps,
        )
        response = await chain.complete(HELLO, [])
    assert response.message.content == "second answers"
    assert len(first.requests) == 2 and sleeps.delays == [0.5]
    assert [(name, attempt) for name, attempt, _ in chain.last_failures] == [("a", 0), ("a", 1)]


async def test_a_server_fault_that_passes_is_answered_by_the_same_provider(
    fake_provider, sleeps
) -> None:
    fake_provider.script({"status": 503}, {"text": "back again"})
    chain = ProviderChain([make_model("openai_compat", fake_provider, name="only")], sleep=sleeps)
    assert (await chain.complete(HELLO, [])).message.content == "back again"
    assert sleeps.delays == [0.5]


async def test_dropped_stream_is_retried(fake_provider, sleeps) -> None:
    fake_provider.script(
        {"text": "b" * 30, "chunks": 10, "drop_after_chunks": 4}, {"text": "whole"}
    )
    chain = ProviderChain([make_model("openai_compat", fake_provider)], sleep=sleeps)
    assert (await chain.complete(HELLO, [])).message.content == "whole"
    assert sleeps.delays == [0.5]


async def test_all_failed_raises_last_error_listing_each(sleeps) -> None:
    with FakeProviderServer() as first:
        first.script({"status": 401})
        dead = OpenAICompatModel(name="dead", model="m", base_url="http://127.0.0.1:9/v1")
        chain = ProviderChain([make_model("openai_compat", first, name="a"), dead], sleep=sleeps)
        with pytest.raises(ProviderError) as info:
            await chain.complete(HELLO, [])
    err = info.value
    assert err.kind == "network"
    assert err.provider == "dead"
    text = str(err)
    assert "\n" not in text
    assert "http://127.0.0.1:9/v1" in text
    assert "cannot connect" in text and "base_url" in text
    assert f"a: auth (HTTP 401 from POST {first.url}/v1/chat/completions)" in text
    assert sleeps.delays == [0.5, 1.25]  # the connection failures were retried in place


async def test_single_provider_failure_is_raised_unchanged(fake_provider, sleeps) -> None:
    fake_provider.script({"status": 400, "body": '{"error": {"message": "bad tool schema"}}'})
    chain = ProviderChain([make_model("openai_compat", fake_provider, name="only")], sleep=sleeps)
    with pytest.raises(ProviderError) as info:
        await chain.complete(HELLO, [])
    assert info.value.kind == "bad_request"
    url = f"{fake_provider.url}/v1"
    assert (
        str(info.value) == f"provider 'only' at {url}: bad_request: "
        f"HTTP 400 from POST {url}/chat/completions: bad tool schema"
    )


async def test_context_overflow_message_is_overflow(fake_provider, sleeps) -> None:
    body = '{"error": {"message": "This model\'s maximum context length is 8192 tokens", "code": "context_length_exceeded"}}'
    fake_provider.script({"status": 400, "body": body})
    chain = ProviderChain([make_model("openai_compat", fake_provider)], sleep=sleeps)
    with pytest.raises(ProviderError) as info:
        await chain.complete(HELLO, [])
    assert info.value.kind == "overflow"


async def test_cancel_during_backoff_sleep_is_prompt(fake_provider) -> None:
    fake_provider.script({"status": 429, "retry_after": 25})
    chain = ProviderChain([make_model("openai_compat", fake_provider)])  # real asyncio.sleep
    cancel = CancelToken()
    task = asyncio.create_task(chain.complete(HELLO, [], CallOptions(cancel=cancel)))
    await wait_until(lambda: len(fake_provider.requests) == 1)
    await asyncio.sleep(0.05)
    started = time.monotonic()
    cancel.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(task, 5)
    assert time.monotonic() - started < 1
    assert len(fake_provider.requests) == 1


async def test_cancel_during_request_through_chain(fake_provider) -> None:
    fake_provider.script({"text": "slow", "delay_s": 20})
    second = SleepRecorder()
    chain = ProviderChain([make_model("anthropic", fake_provider)], sleep=second)
    cancel = CancelToken()
    task = asyncio.create_task(chain.complete(HELLO, [], CallOptions(cancel=cancel)))
    await wait_until(lambda: len(fake_provider.requests) == 1)
    cancel.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(task, 5)
    assert second.delays == []


async def test_retry_notice_says_how_much_streamed_text_to_drop(fake_provider, sleeps) -> None:
    fake_provider.script(
        {"text": "abcdefghij" * 3, "chunks": 10, "drop_after_chunks": 4}, {"text": "whole answer"}
    )
    shown: list[str] = []
    notices = []

    def on_retry(notice) -> None:
        notices.append(notice)
        del shown[len(shown) - notice.discarded_chars :]  # what a display would do

    def on_text(piece: str) -> None:
        shown.extend(piece)

    chain = ProviderChain([make_model("openai_compat", fake_provider, name="p")], sleep=sleeps)
    response = await chain.complete(HELLO, [], CallOptions(on_text=on_text, on_retry=on_retry))
    assert response.message.content == "whole answer"
    assert "".join(shown) == "whole answer"
    (notice,) = notices
    assert (notice.provider, notice.attempt, notice.action, notice.kind) == (
        "p",
        1,
        "retry",
        "network",
    )
    assert notice.discarded_chars == 9  # chunk 1 is the role header, then 3 pieces of 3 chars
    assert notice.delay_s == 0.5 and notice.next_provider == "p"


async def test_failover_notice_names_the_next_provider(sleeps) -> None:
    with FakeProviderServer() as first, FakeProviderServer() as second:
        first.script({"status": 401})
        second.script({"status": 401})
        notices = []
        chain = ProviderChain(
            [make_model("ollama", first, name="a"), make_model("anthropic", second, name="b")],
            sleep=sleeps,
        )
        with pytest.raises(ProviderError):
            await chain.complete(HELLO, [], CallOptions(on_retry=notices.append))
    # Only failures followed by another attempt are announced; the last one is the error.
    (notice,) = notices
    assert (notice.action, notice.next_provider, notice.kind, notice.discarded_chars) == (
        "failover",
        "b",
        "auth",
        0,
    )
    assert "HTTP 401" in notice.message and "\n" not in notice.message


def test_a_chain_stops_on_cancel_only_if_every_model_does() -> None:
    """The agent loop awaits a model that stops on its token directly (no second race): true for
    the HTTP providers and chains of them, not when one of its models does not."""
    http = OpenAICompatModel(model="m", name="a", base_url="http://127.0.0.1:9/v1")

    class Plain:
        name = "plain"
        stops_on_cancel = False

    assert ProviderChain([http, http]).stops_on_cancel is True
    assert ProviderChain([http, Plain()]).stops_on_cancel is False  # type: ignore[list-item]


async def test_on_sent_reaches_the_model_that_sends_or_comes_before_one_that_cannot(
    fake_provider,
) -> None:
    """An HTTP model calls on_sent itself; for a model without a wire the chain calls it first."""
    order: list[str] = []

    class Local:
        name = "local"
        reports_sent = False
        stops_on_cancel = False

        async def complete(self, messages, tools, options=None):
            order.append("local called")
            raise ProviderError("unknown", "local model unavailable")

    def on_sent() -> None:
        order.append("sent")

    fake_provider.script({"text": "from http"})
    http = make_model("openai_compat", fake_provider)
    chain = ProviderChain([Local(), http])  # type: ignore[list-item]
    response = await chain.complete(
        [Message(role="user", content="hi")], [], CallOptions(on_sent=on_sent)
    )
    assert response.message.content == "from http"
    # Called before the local model, then again by the HTTP model once its request was out
    # (the loop's release is idempotent).
    assert order == ["sent", "local called", "sent"]
    assert len(fake_provider.requests) == 1
