"""Runaway answers against the fake server: a response's text, a stream line and the idle timer are bounded.

Every wait is bounded (asyncio.wait_for); the streams are as fast as loopback allows, so each cap
is reached in well under a second of transfer.
"""

from __future__ import annotations

import asyncio
import time

import httpx
import pytest

from lich_core.agent.messages import Message
from lich_core.providers.base import CallOptions, ProviderError
from lich_core.providers.chain import ProviderChain
from lich_core.providers.http import (
    MAX_RESPONSE_BODY_BYTES,
    MAX_RESPONSE_TEXT_BYTES,
    MAX_STREAM_LINE_BYTES,
)
from tests.support.provider_helpers import KINDS, make_model, wait_until

HELLO = [Message(role="user", content="hi")]
# Generous bound for one capped call on a loaded 2-core machine (the transfer itself is ~0.1 s).
CALL_BOUND_S = 30.0


async def _fails(call) -> ProviderError:  # type: ignore[no-untyped-def]
    with pytest.raises(ProviderError) as info:
        await asyncio.wait_for(call, CALL_BOUND_S)
    return info.value


@pytest.mark.parametrize("kind", KINDS)
async def test_endless_stream_stops_at_the_response_text_cap(
    kind, fake_provider, model_for
) -> None:
    fake_provider.script({"endless": True, "text": "y" * 1000})
    streamed: list[int] = []
    error = await _fails(
        model_for(kind).complete(
            HELLO, [], CallOptions(on_text=lambda piece: streamed.append(len(piece)))
        )
    )
    assert error.kind == "response_too_large"
    message = str(error)
    assert message.startswith("response_too_large: ")
    assert "1 MiB" in message and f"fake-{kind}" in message and "\n" not in message
    # The text handed on never passes the cap, and the connection was hung up on.
    assert MAX_RESPONSE_TEXT_BYTES - 1000 <= sum(streamed) <= MAX_RESPONSE_TEXT_BYTES
    await wait_until(lambda: fake_provider.disconnects == [1], timeout_s=CALL_BOUND_S)


async def test_the_chain_stops_on_a_runaway_answer(fake_provider) -> None:
    """The answer already cost a megabyte of output: neither retried nor sent to the next provider."""
    fake_provider.script({"endless": True, "text": "z" * 1000}, {"text": "should not be asked"})
    chain = ProviderChain(
        [
            make_model("openai_compat", fake_provider, name="first"),
            make_model("anthropic", fake_provider, name="second"),
        ]
    )
    error = await _fails(chain.complete(HELLO, []))
    assert error.kind == "response_too_large" and str(error).startswith("response_too_large: ")
    assert len(fake_provider.requests) == 1


@pytest.mark.parametrize("kind", KINDS)
async def test_a_line_that_never_ends_is_cut_at_the_line_cap(
    kind, fake_provider, model_for
) -> None:
    fake_provider.script({"endless_line": True})
    error = await _fails(model_for(kind).complete(HELLO, []))
    assert error.kind == "response_too_large"
    assert str(error).startswith("response_too_large: ")
    assert f"{MAX_STREAM_LINE_BYTES // (1024 * 1024)} MiB" in str(error)
    assert "line" in str(error)
    await wait_until(lambda: fake_provider.disconnects == [1], timeout_s=CALL_BOUND_S)


@pytest.mark.parametrize("kind", KINDS)
async def test_a_body_that_never_ends_is_cut(kind, fake_provider, model_for) -> None:
    fake_provider.script({"endless_line": True})
    error = await _fails(model_for(kind, stream=False).complete(HELLO, []))
    assert error.kind == "response_too_large"
    assert f"{MAX_RESPONSE_BODY_BYTES // (1024 * 1024)} MiB" in str(error)


@pytest.mark.parametrize(
    ("kind", "keepalive"),
    [
        ("openai_compat", "comment"),
        ("anthropic", "comment"),
        ("anthropic", "ping"),
        ("ollama", "blank"),
    ],
)
async def test_keepalives_do_not_reset_the_idle_timeout(
    kind, keepalive, fake_provider, model_for
) -> None:
    # Keepalives every 20 ms would reset a plain read timeout forever; only progress counts.
    fake_provider.script({"keepalive": keepalive})
    started = time.monotonic()
    error = await _fails(model_for(kind, timeout_ms=300).complete(HELLO, []))
    elapsed = time.monotonic() - started
    assert error.kind == "network"
    assert "no progress" in str(error) and "timeout_ms" in str(error)
    assert elapsed >= 0.3
    await wait_until(lambda: fake_provider.disconnects == [1], timeout_s=CALL_BOUND_S)


@pytest.mark.parametrize("kind", KINDS)
async def test_steady_progress_slower_than_nothing_is_not_a_timeout(
    kind, fake_provider, model_for
) -> None:
    # 12 pieces, 0.1 s apart: 1.1 s in all, longer than timeout_ms, but never idle that long.
    fake_provider.script({"text": "abcdefghijkl", "chunks": 12, "chunk_delay_s": 0.1})
    pieces: list[str] = []
    response = await asyncio.wait_for(
        model_for(kind, timeout_ms=1000).complete(HELLO, [], CallOptions(on_text=pieces.append)),
        CALL_BOUND_S,
    )
    assert response.message.content == "abcdefghijkl" and len(pieces) == 12


class _Body:
    """Stands in for an httpx response: hands out the given chunks."""

    headers = httpx.Headers()

    def __init__(self, *chunks: bytes) -> None:
        self.chunks = chunks

    async def aiter_raw(self):  # type: ignore[no-untyped-def]
        for chunk in self.chunks:
            yield chunk


@pytest.mark.parametrize("stream", [True, False])
async def test_a_gzip_bomb_ends_as_response_too_large_at_once_and_never_blocks_the_loop(
    stream: bool, fake_provider, model_for
) -> None:
    from tests.support.fake_provider import newline_bomb

    newline_bomb(64)  # compressed before the clock runs
    fake_provider.script({"gzip_bomb_mib": 64})
    turns = 0

    async def tick() -> None:  # counts the loop's turns to other tasks while the bomb is read
        nonlocal turns
        while True:
            await asyncio.sleep(0)
            turns += 1

    ticker = asyncio.ensure_future(tick())
    try:
        error = await _fails(model_for("openai_compat", stream=stream).complete(HELLO, []))
    finally:
        ticker.cancel()
    assert str(error).startswith("response_too_large: "), error
    assert "compressed response" in str(error) and "\n" not in str(error)
    # Decompressing the whole bomb at once held the loop for a minute: now the loop turns between
    # pieces (how long it takes is the bench's to measure: python -m bench hostile).
    assert turns >= 8, turns


async def test_a_compressed_answer_is_decoded_in_bounded_pieces() -> None:
    import gzip

    import httpx

    from lich_core.providers.http import DECODED_PIECE_BYTES, body_bytes

    text = b"".join(b'data: {"n": %d}\n\n' % n for n in range(20_000))
    packed = gzip.compress(text)
    assert len(text) > 5 * len(packed)  # it expands, within the allowed ratio
    resp = httpx.Response(
        200, headers={"content-encoding": "gzip"}, stream=httpx.ByteStream(packed)
    )
    pieces = [piece async for piece in body_bytes(resp, ProviderError)]  # type: ignore[arg-type]
    assert b"".join(pieces) == text
    assert max(map(len, pieces)) <= DECODED_PIECE_BYTES


async def test_stream_lines_split_like_sse_wherever_the_chunks_break() -> None:
    from lich_core.providers.http import ResponseLimits, stream_lines

    limits = ResponseLimits(make_model("openai_compat", _NoServer()))
    body = _Body(
        b"data: a\r", b"\ndata: b\rdata: c\n", b"\n", b"da", b"ta: \xc3", b"\xa9\r\n", b"tail"
    )
    lines = [line async for line in stream_lines(body, limits)]  # type: ignore[arg-type]
    assert lines == ["data: a", "data: b", "data: c", "", "data: é", "tail"]


async def test_blank_lines_in_a_row_come_as_one() -> None:
    from lich_core.providers.http import ResponseLimits, stream_lines

    limits = ResponseLimits(make_model("openai_compat", _NoServer()))
    body = _Body(b"data: a\n\n\n\r\n\r\rdata: b\r", b"\n\n", b"\n" * 100_000, b"data: c\n")
    lines = [line async for line in stream_lines(body, limits)]  # type: ignore[arg-type]
    # A run of blank lines is one or two (per chunk), never one per line break.
    assert [line for line in lines if line] == ["data: a", "data: b", "data: c"]
    assert lines[:3] == ["data: a", "", "data: b"] and len(lines) <= 8


class _NoServer:
    url = "http://127.0.0.1:9"
