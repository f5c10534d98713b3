"""The fake model server itself: scripting, recording, standalone mode."""

from __future__ import annotations

from pathlib import Path

import httpx

from tests.support.fake_provider import (
    EXHAUSTED_TEXT,
    FakeProviderServer,
    split_pieces,
    standalone_process,
)

ROOT = Path(__file__).resolve().parents[2]


def test_split_pieces_covers_text_exactly() -> None:
    assert split_pieces("abcdefg", 3) == ["abc", "de", "fg"]
    assert split_pieces("ab", 5) == ["a", "b"]
    assert split_pieces("", 4) == []


def test_records_requests_and_falls_back_when_exhausted(fake_provider: FakeProviderServer) -> None:
    fake_provider.script({"text": "one"})
    with httpx.Client() as client:
        first = client.post(
            fake_provider.url + "/v1/chat/completions",
            json={"model": "m"},
            headers={"X-Probe": "1"},
        )
        second = client.post(fake_provider.url + "/v1/chat/completions", json={"model": "m"})
    assert first.json()["choices"][0]["message"]["content"] == "one"
    assert second.json()["choices"][0]["message"]["content"] == EXHAUSTED_TEXT
    assert fake_provider.requests[0]["path"] == "/v1/chat/completions"
    assert fake_provider.requests[0]["headers"]["x-probe"] == "1"
    assert fake_provider.requests[0]["json"] == {"model": "m"}


def test_dropped_stream_is_a_broken_body(fake_provider: FakeProviderServer) -> None:
    fake_provider.script({"text": "abcdefgh", "chunks": 6, "drop_after_chunks": 2})
    lines: list[str] = []
    try:
        with httpx.Client() as client:
            with client.stream(
                "POST", fake_provider.url + "/v1/chat/completions", json={"stream": True}
            ) as resp:
                lines.extend(line for line in resp.iter_lines() if line)
    except httpx.RemoteProtocolError:
        pass
    else:
        raise AssertionError("a dropped stream must not look like a complete one")
    assert len(lines) == 2


def test_standalone_mode_prints_url_and_serves() -> None:
    # standalone_process reads the "LISTENING <url>" line main() prints, then the server answers.
    with standalone_process([{"text": "from file"}]) as url:
        assert url.startswith("http://127.0.0.1:")
        reply = httpx.post(url + "/api/chat", json={"stream": False}, timeout=10)
        assert reply.json()["message"]["content"] == "from file"
