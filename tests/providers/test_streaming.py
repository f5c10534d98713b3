"""Each provider against the fake server: streaming, tool calls, non-streaming, broken bodies, cancel."""

from __future__ import annotations

import asyncio
import time

import pytest

from lich_core.agent.messages import Message
from lich_core.providers.base import CallOptions, ProviderError
from lich_core.tools.types import CancelToken
from tests.support.provider_helpers import KINDS, wait_until

# How long a test waits for the fake server to have a request (a hang fails, not a slow machine).
REQUEST_WAIT_S = 10.0

HELLO = [Message(role="user", content="hi")]


@pytest.mark.parametrize("kind", KINDS)
async def test_streamed_text_arrives_in_pieces(kind, fake_provider, model_for) -> None:
    fake_provider.script(
        {
            "text": "The quick brown fox jumps",
            "chunks": 5,
            "usage": {"input_tokens": 7, "output_tokens": 3},
        }
    )
    pieces: list[str] = []
    response = await model_for(kind).complete(HELLO, [], CallOptions(on_text=pieces.append))
    assert len(pieces) == 5
    assert "".join(pieces) == "The quick brown fox jumps"
    assert response.message.role == "assistant"
    assert response.message.content == "The quick brown fox jumps"
    assert response.stop_reason == "stop"
    assert (response.usage.input_tokens, response.usage.output_tokens) == (7, 3)
    assert response.provider == f"fake-{kind}"


@pytest.mark.parametrize("kind", KINDS)
async def test_several_tool_calls_split_across_chunks(kind, fake_provider, model_for) -> None:
    fake_provider.script(
        {
            "text": "Reading both.",
            "chunks": 4,
            "tool_calls": [
                {"name": "read_file", "arguments": {"path": "src/a.py", "start": 1}},
                {"name": "grep", "arguments": {"pattern": "def \\w+", "paths": ["x", "y"]}},
            ],
        }
    )
    response = await model_for(kind).complete(HELLO, [])
    calls = response.message.tool_calls
    assert [c.name for c in calls] == ["read_file", "grep"]
    assert calls[0].arguments == {"path": "src/a.py", "start": 1}
    assert calls[1].arguments == {"pattern": "def \\w+", "paths": ["x", "y"]}
    assert all(c.raw_arguments == "" for c in calls)
    assert len({c.id for c in calls}) == 2 and all(c.id for c in calls)
    assert response.stop_reason == "tool_calls"
    assert response.message.content == "Reading both."


@pytest.mark.parametrize("kind", KINDS)
async def test_non_streaming_gives_the_same_turn(kind, fake_provider, model_for) -> None:
    turn = {"text": "plain answer", "tool_calls": [{"name": "ls", "arguments": {"path": "."}}]}
    fake_provider.script(turn)
    pieces: list[str] = []
    response = await model_for(kind, stream=False).complete(
        HELLO, [], CallOptions(on_text=pieces.append)
    )
    assert fake_provider.requests[-1]["json"]["stream"] is False
    assert response.message.content == "plain answer"
    assert [(c.name, c.arguments) for c in response.message.tool_calls] == [("ls", {"path": "."})]
    assert pieces == []


@pytest.mark.parametrize("kind", ["openai_compat", "anthropic"])
async def test_unparseable_tool_arguments_are_kept_raw(kind, fake_provider, model_for) -> None:
    fake_provider.script(
        {"tool_calls": [{"name": "edit", "arguments": '{"path": "a.py", "text": '}], "chunks": 3}
    )
    response = await model_for(kind).complete(HELLO, [])
    (call,) = response.message.tool_calls
    assert call.name == "edit"
    assert call.arguments == {}
    assert call.raw_arguments == '{"path": "a.py", "text": '


async def test_ollama_string_arguments_are_parsed_or_kept_raw(fake_provider, model_for) -> None:
    fake_provider.script(
        {
            "tool_calls": [
                {"name": "a", "arguments": '{"x": 1}'},
                {"name": "b", "arguments": "{oops"},
            ]
        }
    )
    model = model_for("ollama")
    response = await model.complete(HELLO, [])
    a, b = response.message.tool_calls
    assert a.arguments == {"x": 1} and a.raw_arguments == ""
    assert b.arguments == {} and b.raw_arguments == "{oops"
    # Ollama sends no ids; ours must stay unique across turns too.
    fake_provider.script({"tool_calls": [{"name": "c", "arguments": {}}]})
    (c,) = (await model.complete(HELLO, [])).message.tool_calls
    assert len({a.id, b.id, c.id}) == 3 and c.id.startswith("call_")


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("stream", [True, False])
async def test_malformed_json_is_a_clear_error(kind, stream, fake_provider, model_for) -> None:
    raw = "data: {not json\n\n" if stream and kind != "ollama" else "{not json\n"
    fake_provider.script({"raw": raw})
    with pytest.raises(ProviderError) as info:
        await model_for(kind, stream=stream).complete(HELLO, [])
    assert info.value.kind == "unknown"
    assert "malformed response" in str(info.value)
    assert info.value.provider == f"fake-{kind}"
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("kind", KINDS)
async def test_dropped_connection_mid_stream_is_a_network_error(
    kind, fake_provider, model_for
) -> None:
    fake_provider.script({"text": "a" * 40, "chunks": 10, "drop_after_chunks": 5})
    pieces: list[str] = []
    with pytest.raises(ProviderError) as info:
        await model_for(kind).complete(HELLO, [], CallOptions(on_text=pieces.append))
    assert info.value.kind == "network"
    assert pieces, "some text streamed before the drop"


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize(
    ("status", "error_kind"),
    [(401, "auth"), (429, "rate_limit"), (500, "unknown"), (400, "bad_request")],
)
async def test_error_status_is_classified(
    kind, status, error_kind, fake_provider, model_for
) -> None:
    fake_provider.script({"status": status, "retry_after": 3})
    with pytest.raises(ProviderError) as info:
        await model_for(kind).complete(HELLO, [])
    assert (info.value.kind, info.value.status) == (error_kind, status)
    assert info.value.retry_after_s == 3.0
    assert f"scripted HTTP {status}" in str(info.value)
    assert fake_provider.url in str(info.value)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("stream", [True, False])
async def test_html_page_instead_of_an_answer_is_a_one_line_error(
    kind, stream, fake_provider, model_for
) -> None:
    # What a misconfigured proxy or a wrong base_url returns: 200 with a web page.
    fake_provider.script({"raw": "<html>\n<body>Welcome to nginx!</body>\n</html>\n"})
    with pytest.raises(ProviderError) as info:
        await model_for(kind, stream=stream).complete(HELLO, [])
    message = str(info.value)
    assert info.value.kind == "unknown", "garbage is not retried as a network blip"
    assert "malformed response" in message and "<html>" in message
    assert "\n" not in message and len(message) < 400


@pytest.mark.parametrize("kind", ["openai_compat", "anthropic"])
async def test_broken_json_after_good_events_names_the_chunk(
    kind, fake_provider, model_for
) -> None:
    good = 'data: {"choices": [{"delta": {"content": "hi"}}]}\n\n'
    if kind == "anthropic":
        good = 'event: message_start\ndata: {"type": "message_start", "message": {}}\n\n'
    fake_provider.script({"raw": good + 'data: {"half": \n\n'})
    with pytest.raises(ProviderError) as info:
        await model_for(kind).complete(HELLO, [])
    assert info.value.kind == "unknown"
    assert "is not JSON" in str(info.value) and '{"half":' in str(info.value)


@pytest.mark.parametrize("kind", KINDS)
async def test_cancel_during_slow_response_is_prompt(kind, fake_provider, model_for) -> None:
    fake_provider.script({"text": "late", "delay_s": 20})
    cancel = CancelToken()
    task = asyncio.create_task(model_for(kind).complete(HELLO, [], CallOptions(cancel=cancel)))
    await wait_until(lambda: len(fake_provider.requests) == 1)
    started = time.monotonic()
    cancel.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(task, 5)
    assert time.monotonic() - started < 2
    await wait_until(lambda: fake_provider.disconnects == [1])


@pytest.mark.parametrize("kind", KINDS)
async def test_cancel_mid_stream_stops_reading(kind, fake_provider, model_for) -> None:
    fake_provider.script({"text": "x" * 50, "chunks": 50, "chunk_delay_s": 0.2})
    cancel = CancelToken()
    pieces: list[str] = []

    def on_text(piece: str) -> None:
        pieces.append(piece)
        if len(pieces) == 2:
            cancel.cancel()

    started = time.monotonic()
    with pytest.raises(asyncio.CancelledError):
        await model_for(kind).complete(HELLO, [], CallOptions(on_text=on_text, cancel=cancel))
    assert time.monotonic() - started < 3
    assert len(pieces) == 2
    # Cancelling closes the connection (it is not left streaming into the pool).
    await wait_until(lambda: fake_provider.disconnects == [1])


async def test_already_cancelled_token_sends_nothing(fake_provider, model_for) -> None:
    cancel = CancelToken()
    cancel.cancel()
    with pytest.raises(asyncio.CancelledError):
        await model_for("openai_compat").complete(HELLO, [], CallOptions(cancel=cancel))
    assert fake_provider.requests == []


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("stream", [True, False])
async def test_connection_is_reused_across_calls(kind, stream, fake_provider, model_for) -> None:
    fake_provider.script(
        {"text": "one", "chunks": 2},
        {"text": "two", "tool_calls": [{"name": "t", "arguments": {}}]},
    )
    model = model_for(kind, stream=stream)
    await model.complete(HELLO, [])
    await model.complete(HELLO, [])
    first, second = (r["peer"] for r in fake_provider.requests)
    assert first == second


@pytest.mark.parametrize("kind", KINDS)
async def test_on_sent_is_called_once_the_request_is_on_the_wire(
    kind, fake_provider, model_for
) -> None:
    """The agent loop delivers its bookkeeping events from `on_sent`, while the provider thinks:
    the request must be out (the server, in its own thread, gets it while on_sent blocks this
    one) and no answer read yet."""
    fake_provider.script({"text": "hello there", "chunks": 2})
    pieces: list[str] = []
    seen_when_sent: list[tuple[bool, list[str]]] = []

    def on_sent() -> None:
        arrived = fake_provider.wait_for_requests(1, REQUEST_WAIT_S)
        seen_when_sent.append((arrived, list(pieces)))

    response = await model_for(kind).complete(
        HELLO, [], CallOptions(on_text=pieces.append, on_sent=on_sent)
    )
    assert seen_when_sent == [(True, [])]
    assert response.message.content == "hello there" and "".join(pieces) == "hello there"
    # Sent with its length, not chunked, and whole.
    request = fake_provider.requests[0]
    assert "transfer-encoding" not in request["headers"]
    assert int(request["headers"]["content-length"]) > 0 and "_unparsed" not in request["json"]
    assert request["json"]["model"]
