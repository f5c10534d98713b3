"""python_eval over the wire: the approval question shows the code, and lich.cancel stops a long
eval promptly. A real server process, pytest-lsp and the fake provider."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from lsp_harness import provider_options, tool_messages

pytestmark = pytest.mark.filterwarnings("error::pytest_lsp.LspSpecificationWarning")

# Failure detection only: the cancel is measured against the moment it was sent.
WAIT_S = 30.0
STOPPED_WITHIN_S = 1.0


async def test_the_approval_question_shows_the_code_then_it_runs(
    session, root: Path, fake_provider
) -> None:
    code = "answer = 6 * 7\nprint('from the image')\nanswer"
    fake_provider.script(
        {"tool_calls": [{"name": "python_eval", "arguments": {"code": code}}]},
        {"tool_calls": [{"name": "python_eval", "arguments": {"code": "answer + 1"}}]},
        {"text": "done"},
    )
    client = await session("visual-studio-code", init_options=provider_options(fake_provider))
    client.editor.message_answers.extend(["Allow once", "Allow once"])
    result = await client.command("lich.ask", {"prompt": "compute"})
    assert result["stopped_reason"] == "final"
    asked = client.editor.message_requests[0]
    assert "python_eval" in asked.message and "image/eval" in asked.message
    assert "answer = 6 * 7" in asked.message  # the code's first line
    first, second = tool_messages(fake_provider)
    assert first == "from the image\n42"
    assert second == "43"  # the same run's image kept its state


async def test_lich_cancel_ends_a_long_eval_promptly(session, root: Path, fake_provider) -> None:
    started_file = root / "eval-started"
    code = f"open({str(started_file)!r}, 'w').close()\nwhile True:\n    pass"
    fake_provider.script(
        {"tool_calls": [{"name": "python_eval", "arguments": {"code": code, "timeout": 300}}]},
        {"text": "not reached"},
    )
    client = await session(
        "visual-studio-code",
        init_options=provider_options(fake_provider, approval={"image/eval": "allow"}),
    )
    ask = asyncio.ensure_future(client.command("lich.ask", {"prompt": "spin"}))
    await client.wait_until(started_file.exists, WAIT_S, "the eval to start")
    assert not ask.done()
    loop = asyncio.get_running_loop()
    cancelled_at = loop.time()
    assert (await client.command("lich.cancel", {}))["cancelled"]
    result = await asyncio.wait_for(ask, WAIT_S)
    elapsed = loop.time() - cancelled_at
    assert result["stopped_reason"] == "aborted"
    assert elapsed < STOPPED_WITHIN_S, elapsed
    for message in tool_messages(fake_provider):
        assert json.loads(message).get("error") in (None, "cancelled")
