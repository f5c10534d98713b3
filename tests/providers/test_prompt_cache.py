"""Prompt caching: where the Anthropic request puts cache_control, and the cache figures each
provider reads from its usage, asserted against the fake HTTP server on 127.0.0.1."""

from __future__ import annotations

import json

import httpx
import pytest

from lich_core.agent.messages import Message, ToolCall
from lich_core.tools.types import ToolDefinition
from lich_core.vocabulary import Usage
from tests.support.fake_provider import count_cache_control

EPHEMERAL = {"type": "ephemeral"}


def tool(name: str) -> ToolDefinition:
    return ToolDefinition(name=name, description=f"{name}.", parameters={"type": "object"})


TOOLS = [tool("read_file"), tool("apply_patch")]


def tool_round(n: int) -> list[Message]:
    """One model turn asking for a tool, and its result."""
    return [
        Message(
            role="assistant",
            content=f"step {n}",
            tool_calls=[ToolCall(id=f"c{n}", name="read_file", arguments={"path": f"{n}.py"})],
        ),
        Message(role="tool", content=f"result {n}", tool_call_id=f"c{n}", name="read_file"),
    ]


def conversation(rounds: int) -> list[Message]:
    history = [
        Message(role="system", content="You are lich."),
        Message(role="user", content="Fix the bug."),
    ]
    for n in range(1, rounds + 1):
        history += tool_round(n)
    return history


def marked_messages(body: dict) -> list[int]:
    """Indexes of the wire messages carrying a mark, checking each sits on the last block."""
    marked = []
    for index, item in enumerate(body["messages"]):
        content = item["content"]
        if isinstance(content, str):
            continue
        flags = [block.get("cache_control") for block in content]
        if any(flags):
            assert flags[-1] == EPHEMERAL and not any(flags[:-1]), item
            marked.append(index)
    return marked


def _unmarked(value):
    if isinstance(value, dict):
        return {k: _unmarked(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [_unmarked(item) for item in value]
    return value


def prefix_through(body: dict, index: int) -> str:
    """The request's cacheable prefix through message `index`, in the API's order; the marks
    themselves are not part of what the cache compares."""
    prefix = [body.get("tools"), body.get("system"), body["messages"][: index + 1]]
    return json.dumps(_unmarked(prefix))


async def test_anthropic_marks_tools_system_and_the_last_two_user_turns(
    fake_provider, model_for
) -> None:
    await model_for("anthropic").complete(conversation(3), TOOLS)
    body = fake_provider.requests[0]["json"]
    assert count_cache_control(body) == 4
    assert body["tools"][-1]["cache_control"] == EPHEMERAL
    assert all("cache_control" not in t for t in body["tools"][:-1])
    assert body["system"] == [{"type": "text", "text": "You are lich.", "cache_control": EPHEMERAL}]
    roles = [item["role"] for item in body["messages"]]
    assert roles == ["user", "assistant", "user", "assistant", "user", "assistant", "user"]
    # The newest turn (the last tool result) and the one before it, nothing older.
    assert marked_messages(body) == [4, 6]
    assert body["messages"][6]["content"][-1]["type"] == "tool_result"


async def test_a_follow_up_resends_the_previous_marked_prefix_unchanged(
    fake_provider, model_for
) -> None:
    """The cache hits only if the next request's prefix through a mark is byte-identical to the
    prefix the previous request wrote at its newest mark: here a loop turn, then a follow-up."""
    model = model_for("anthropic")
    first = conversation(2)
    second = first + tool_round(3)
    follow_up = second + [
        Message(role="assistant", content="Done."),
        Message(role="user", content="Now add a test."),
    ]
    for history in (first, second, follow_up):
        await model.complete(history, TOOLS)
    bodies = [request["json"] for request in fake_provider.requests]
    for before, after in zip(bodies, bodies[1:], strict=False):
        written = marked_messages(before)[-1]
        read = marked_messages(after)[0]
        assert read == written
        assert prefix_through(after, read) == prefix_through(before, written)
        assert count_cache_control(after) <= 4
    assert bodies[2]["messages"][-1]["content"] == [
        {"type": "text", "text": "Now add a test.", "cache_control": EPHEMERAL}
    ]


@pytest.mark.parametrize(
    ("history", "tools", "expected"),
    [
        # A first prompt: one user turn, marked with the system prompt and the tools.
        ([Message(role="system", content="S"), Message(role="user", content="hi")], TOOLS, 3),
        # No system prompt, no tools: only the two newest user turns.
        (conversation(2)[1:], [], 2),
        # Nothing but a user turn.
        ([Message(role="user", content="hi")], [], 1),
    ],
)
async def test_fewer_parts_get_fewer_marks(fake_provider, model_for, history, tools, expected):
    await model_for("anthropic").complete(history, tools)
    body = fake_provider.requests[0]["json"]
    assert count_cache_control(body) == expected
    if not tools:
        assert "tools" not in body
    if history[0].role != "system":
        assert "system" not in body


async def test_the_fake_server_refuses_a_fifth_mark_as_the_api_does(fake_provider) -> None:
    """The check every Anthropic request in the suite passes through is a real one."""
    block = {"type": "text", "text": "x", "cache_control": EPHEMERAL}
    body = {
        "model": "m",
        "max_tokens": 10,
        "system": [block, block],
        "messages": [{"role": "user", "content": [block, block, block]}],
    }
    async with httpx.AsyncClient() as client:
        reply = await client.post(fake_provider.url + "/v1/messages", json=body)
    assert reply.status_code == 400
    assert "maximum of 4 blocks with cache_control" in reply.json()["error"]["message"]


CACHED_TURN = {
    "text": "ok",
    "usage": {
        "input_tokens": 1000,
        "output_tokens": 7,
        "cache_read_tokens": 800,
        "cache_write_tokens": 150,
    },
}


@pytest.mark.parametrize("stream", [True, False])
async def test_anthropic_cache_reads_and_writes_reach_the_usage(
    fake_provider, model_for, stream
) -> None:
    fake_provider.script(CACHED_TURN)
    response = await model_for("anthropic", stream=stream).complete(conversation(1), TOOLS)
    # The API's input_tokens is the uncached rest (50): the usage gives the whole prompt.
    assert response.usage == Usage(
        input_tokens=1000, output_tokens=7, cache_read_tokens=800, cache_write_tokens=150
    )


@pytest.mark.parametrize("stream", [True, False])
async def test_openai_cached_tokens_reach_the_usage(fake_provider, model_for, stream) -> None:
    fake_provider.script(CACHED_TURN)
    response = await model_for("openai_compat", stream=stream).complete(conversation(1), TOOLS)
    # prompt_tokens_details carries reads only; OpenAI reports no cache writes.
    assert response.usage == Usage(input_tokens=1000, output_tokens=7, cache_read_tokens=800)
    assert "cache_control" not in json.dumps(fake_provider.requests[0]["json"])


@pytest.mark.parametrize("kind", ["anthropic", "openai_compat"])
@pytest.mark.parametrize("stream", [True, False])
async def test_a_provider_without_cache_fields_still_parses(
    fake_provider, model_for, kind, stream
) -> None:
    fake_provider.script({"text": "ok", "usage": {"input_tokens": 40, "output_tokens": 3}})
    response = await model_for(kind, stream=stream).complete(conversation(1), [])
    assert response.usage == Usage(input_tokens=40, output_tokens=3)
    assert response.usage.to_dict() == {"input_tokens": 40, "output_tokens": 3}


def openai_stream(usage: dict) -> str:
    chunk = {"choices": [{"index": 0, "delta": {"content": "ok"}, "finish_reason": "stop"}]}
    return f"data: {json.dumps(chunk)}\n\ndata: {json.dumps({'choices': [], 'usage': usage})}\n\n"


@pytest.mark.parametrize(
    ("usage", "cached"),
    [
        # Servers that send the details object with nothing in it, or null.
        ({"prompt_tokens": 40, "completion_tokens": 3, "prompt_tokens_details": None}, 0),
        ({"prompt_tokens": 40, "completion_tokens": 3, "prompt_tokens_details": {}}, 0),
        # DeepSeek's own name for the cached part.
        ({"prompt_tokens": 40, "completion_tokens": 3, "prompt_cache_hit_tokens": 32}, 32),
        # Garbage in a figure counts as none rather than failing the answer.
        (
            {
                "prompt_tokens": 40,
                "completion_tokens": 3,
                "prompt_tokens_details": {"cached_tokens": "x"},
            },
            0,
        ),
    ],
)
async def test_openai_usage_variants(fake_provider, model_for, usage, cached) -> None:
    fake_provider.script({"raw": openai_stream(usage) + "data: [DONE]\n\n"})
    response = await model_for("openai_compat").complete(conversation(1), [])
    assert response.message.content == "ok"
    assert response.usage == Usage(input_tokens=40, output_tokens=3, cache_read_tokens=cached)


async def test_anthropic_message_delta_figures_replace_message_start_ones(
    fake_provider, model_for
) -> None:
    """Newer API versions repeat the prompt's figures, final, in message_delta."""

    def event(name: str, data: dict) -> str:
        return f"event: {name}\ndata: {json.dumps({'type': name, **data})}\n\n"

    start_usage = {"input_tokens": 5, "output_tokens": 1, "cache_read_input_tokens": 0}
    final_usage = {
        "input_tokens": 5,
        "output_tokens": 9,
        "cache_read_input_tokens": 600,
        "cache_creation_input_tokens": 20,
    }
    raw = "".join(
        [
            event("message_start", {"message": {"model": "m", "usage": start_usage}}),
            event("content_block_start", {"index": 0, "content_block": {"type": "text"}}),
            event(
                "content_block_delta",
                {"index": 0, "delta": {"type": "text_delta", "text": "ok"}},
            ),
            event("message_delta", {"delta": {"stop_reason": "end_turn"}, "usage": final_usage}),
            event("message_stop", {}),
        ]
    )
    fake_provider.script({"raw": raw})
    response = await model_for("anthropic").complete(conversation(1), [])
    assert response.usage == Usage(
        input_tokens=625, output_tokens=9, cache_read_tokens=600, cache_write_tokens=20
    )
