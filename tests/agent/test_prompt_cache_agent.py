"""Prompt caching through the agent loop: a real Anthropic provider against the fake server, the
cache marks on every request of a run, and the cache figures in the run's usage and events."""

from __future__ import annotations

from pathlib import Path

from agent_helpers import EventLog, make_config

from lich_core.agent.factory import build_agent
from tests.support.fake_provider import count_cache_control


def anthropic_config(tmp_path: Path, server):
    provider = {
        "name": "fake-anthropic",
        "kind": "anthropic",
        "base_url": server.url,
        "model": "fake-model",
    }
    return make_config(tmp_path, providers=[provider])


def usage(total: int, read: int, written: int) -> dict:
    return {
        "input_tokens": total,
        "output_tokens": 4,
        "cache_read_tokens": read,
        "cache_write_tokens": written,
    }


async def test_cached_tokens_reach_the_run_usage_and_events(tmp_path, fake_provider):
    (tmp_path / "a.py").write_text("x = 1\n")
    read_a = {"name": "read_file", "arguments": {"path": "a.py"}}
    fake_provider.script(
        {"tool_calls": [read_a], "usage": usage(2000, 0, 1900)},
        {"tool_calls": [read_a], "usage": usage(2100, 1900, 150)},
        {"text": "Read it twice.", "usage": usage(2200, 2050, 120)},
    )
    events = EventLog()
    result = await build_agent(anthropic_config(tmp_path, fake_provider)).run(
        "read a.py", on_event=events
    )
    assert result.stopped_reason == "final", result.error
    assert len(fake_provider.requests) == 3
    for request in fake_provider.requests:
        body = request["json"]
        # Tools, system prompt and the two newest user turns (one on the first request).
        assert count_cache_control(body) <= 4
        assert "cache_control" in body["tools"][-1]
        assert "cache_control" in body["system"][-1]
    assert [count_cache_control(r["json"]) for r in fake_provider.requests] == [3, 4, 4]

    assert (result.usage.input_tokens, result.usage.output_tokens) == (6300, 12)
    assert result.usage.cache_read_tokens == 3950
    assert result.usage.cache_write_tokens == 2170
    assert result.to_dict()["usage"] == {
        "input_tokens": 6300,
        "output_tokens": 12,
        "cache_read_tokens": 3950,
        "cache_write_tokens": 2170,
    }
    per_call = [e.data.usage.to_dict() for e in events.of("llm_end")]
    assert per_call[0] == {"input_tokens": 2000, "output_tokens": 4, "cache_write_tokens": 1900}
    assert per_call[2] == {
        "input_tokens": 2200,
        "output_tokens": 4,
        "cache_read_tokens": 2050,
        "cache_write_tokens": 120,
    }
    total = events.of("run_end")[0].data.usage
    assert (total.cache_read_tokens, total.cache_write_tokens) == (3950, 2170)
