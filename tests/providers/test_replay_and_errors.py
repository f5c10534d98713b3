"""Replay files (record, play back, exhaustion) and the error classification helpers."""

from __future__ import annotations

import asyncio
import json
from email.utils import formatdate

import pytest

from lich_core.agent.messages import Message, ModelResponse
from lich_core.providers.base import CallOptions, ProviderError
from lich_core.providers.chain import ProviderChain
from lich_core.providers.errors import classify_status, error_detail, parse_retry_after
from lich_core.providers.factory import build_model
from lich_core.providers.replay import RecordingModel, ReplayModel, record_turn
from lich_core.tools.types import CancelToken
from tests.support.provider_helpers import make_model

HELLO = [Message(role="user", content="hi")]


async def test_record_then_replay_gives_the_same_responses(fake_provider, tmp_path) -> None:
    fake_provider.script(
        {"text": "first", "usage": {"input_tokens": 3, "output_tokens": 4}},
        {
            "text": "calling",
            "tool_calls": [{"name": "ls", "arguments": {"path": "src"}, "id": "t9"}],
        },
        {"tool_calls": [{"name": "edit", "arguments": "{broken"}]},
    )
    path = tmp_path / "runs" / "demo.jsonl"
    recorder = RecordingModel(make_model("openai_compat", fake_provider, name="live"), path)
    live = [await recorder.complete(HELLO, []) for _ in range(3)]
    assert len(path.read_text().splitlines()) == 3

    replay = ReplayModel(path, name="replay")
    pieces: list[str] = []
    replayed = [await replay.complete([], [], CallOptions(on_text=pieces.append)) for _ in range(3)]
    for original, again in zip(live, replayed, strict=True):
        assert again.message == original.message
        assert again.usage == original.usage
        assert again.stop_reason == original.stop_reason
    assert replayed[1].message.tool_calls[0].id == "t9"
    assert replayed[2].message.tool_calls[0].raw_arguments == "{broken"
    assert pieces == ["first", "calling"]

    with pytest.raises(ProviderError) as info:
        await replay.complete([], [])
    assert info.value.kind == "bad_request"
    assert "replay exhausted" in str(info.value)


async def test_replay_through_config_skips_notes_and_blank_lines(tmp_path) -> None:
    path = tmp_path / "r.jsonl"
    path.write_text(
        json.dumps({"note": "hand written"})
        + "\n\n"
        + json.dumps(
            {
                "message": {"role": "assistant", "content": "hello from file"},
                "usage": {"input_tokens": 1, "output_tokens": 2},
            }
        )
        + "\n"
    )
    config = {
        "work_dir": str(tmp_path),
        "providers": [{"name": "r", "kind": "replay", "path": "r.jsonl"}],
    }
    model = build_model(config, env={})
    response = await model.complete(HELLO, [])
    assert response.message.content == "hello from file"
    assert response.provider == "r"
    # Exhaustion is not retried and, with nothing to fail over to, is the error raised.
    with pytest.raises(ProviderError, match="replay exhausted"):
        await model.complete(HELLO, [])


async def test_replay_bad_line_names_the_line(tmp_path) -> None:
    path = tmp_path / "r.jsonl"
    path.write_text('{"message": {"role": "assistant", "content": "ok"}}\n{"message": 5}\n')
    with pytest.raises(ProviderError, match="line 2 is not a recorded turn"):
        await ReplayModel(path).complete([], [])


async def test_replay_honours_cancel(tmp_path) -> None:
    path = tmp_path / "r.jsonl"
    record_turn(path, ModelResponse(message=Message(role="assistant", content="x")))
    cancel = CancelToken()
    cancel.cancel()
    with pytest.raises(asyncio.CancelledError):
        await ProviderChain([ReplayModel(path)]).complete([], [], CallOptions(cancel=cancel))


def test_parse_retry_after() -> None:
    assert parse_retry_after("7") == 7.0
    assert parse_retry_after("1.5") == 1.5
    assert parse_retry_after(None) is None
    assert parse_retry_after("soon") is None
    now = 1_700_000_000.0
    assert parse_retry_after(formatdate(now + 12, usegmt=True), now_s=now) == pytest.approx(
        12, abs=1
    )
    assert parse_retry_after(formatdate(now - 50, usegmt=True), now_s=now) == 0.0


@pytest.mark.parametrize(
    ("status", "detail", "kind"),
    [
        (401, "", "auth"),
        (403, "", "auth"),
        (429, "", "rate_limit"),
        (529, "overloaded", "rate_limit"),
        (400, "", "bad_request"),
        (404, "model not found", "bad_request"),
        (422, "", "bad_request"),
        (413, "", "overflow"),
        (400, "prompt is too long: 210000 tokens > 200000 maximum", "overflow"),
        (408, "", "network"),
        (500, "", "unknown"),
        (503, "", "unknown"),
    ],
)
def test_classify_status(status, detail, kind) -> None:
    assert classify_status(status, detail) == kind


def test_error_detail_reads_every_shape() -> None:
    assert error_detail('{"error": {"message": "openai says"}}') == "openai says"
    assert (
        error_detail('{"type": "error", "error": {"type": "x", "message": "anthropic says"}}')
        == "anthropic says"
    )
    assert error_detail('{"error": "ollama says"}') == "ollama says"
    assert error_detail('{"detail": "Not Found"}') == "Not Found"  # FastAPI: vLLM
    assert error_detail("<html>\n  Bad Gateway\n</html>") == "<html> Bad Gateway </html>"
    assert len(error_detail("x" * 1000)) == 200
