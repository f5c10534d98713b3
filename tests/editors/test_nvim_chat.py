"""The chat (:LichChat, editors/nvim/lua/lich/chat.lua) in a real headless Neovim against the real
lich-lsp and the fake provider (tests/editors/nvim/chat.lua): two turns of one thread with the
history in the second request, the cursor left alone while an answer streams, <CR> and <C-s> in
the input, :LichAsk continuing the chat's thread, a provider error and a cancel in plain words,
`@` completion, :LichNewThread / :LichThreads / :LichRewind and a server restart. Runs under
every Neovim test_nvim.py finds (Debian's 0.7.2 and the CI's 0.11)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.editors.test_nvim import (  # noqa: F401 - `nvim` and `workspace` are fixtures
    assert_passed,
    nvim,
    run_scenario,
    workspace,
    write_provider_config,
)
from tests.support.fake_provider import FakeProviderServer

pytestmark = pytest.mark.nvim


def _messages(provider: FakeProviderServer, index: int) -> str:
    return json.dumps(provider.requests[index]["json"]["messages"])


def test_chat_turns_streaming_input_threads_rewind_and_restart(
    nvim: str,  # noqa: F811 - the fixture imported above
    workspace: Path,  # noqa: F811 - the fixture imported above
    tmp_path: Path,
    fake_provider: FakeProviderServer,
) -> None:
    fake_provider.script(
        {"text": "Answer one.", "chunks": 3},
        {"tool_calls": [{"name": "read_file", "arguments": {"path": "hello.py"}}]},
        {"text": "Answer two."},
        {"text": "Answer three, streamed in pieces.", "chunks": 8, "chunk_delay_s": 0.05},
        {"text": "Answer four."},
        {"text": "Answer five."},
        {"text": "Answer six."},
        {"status": 401},
        {"text": "too late", "delay_s": 60},
        {"text": "never sent: the server is killed first", "delay_s": 60},
    )
    write_provider_config(tmp_path, fake_provider)
    result = run_scenario(nvim, "chat", workspace, tmp_path)
    assert_passed(result)
    # The follow-up's request carries the first turn: its prompt and its answer.
    follow_up = _messages(fake_provider, 1)
    assert "first" in follow_up and "Answer one." in follow_up and "follow-up" in follow_up
    assert "typed in the input" in _messages(fake_provider, 4)
    assert "sent with ctrl-s" in _messages(fake_provider, 5)
    assert "Answer five." in _messages(fake_provider, 6)


def test_chat_draws_a_thread_with_diffs_folds_and_errors_and_a_long_one_quickly(
    nvim: str,  # noqa: F811 - the fixture imported above
    tmp_path: Path,
) -> None:
    """lich.thread's answer drawn without a server: edits as ```diff blocks inside closed folds,
    a refused tool and a provider error in plain words, a rewound turn marked; a 200-turn
    thread in under a second."""
    result = run_scenario(nvim, "chat_render", tmp_path, tmp_path)
    assert_passed(result)
    assert len(result["checks"]) >= 13
