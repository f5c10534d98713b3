"""Cancelling a running lich.ask over the wire: a real server process, pytest-lsp, the fake provider.

Only what the protocol layer does is tested here: `$/cancelRequest` through pygls (which cancels
only the request's outer future; lich_lsp.pygls_adapter.LichProtocol stops the agent task) for
every client profile, and `window/workDoneProgress/cancel` through pygls' own progress handler.
Approvals, review mode, the other cancel paths and the cancellation deadlines are tested
in-process against the fake editor in test_session_tasks.py.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from lsp_harness import WAIT_S, EditorClient, provider_options
from lsprotocol import types
from pygls.exceptions import JsonRpcException

from tests.support.fake_provider import FakeProviderServer

pytestmark = pytest.mark.filterwarnings("error::pytest_lsp.LspSpecificationWarning")

SLOW_TURN = {"text": "never finishes", "delay_s": 30}
# The slow turn takes 30 s, so ending well before that proves the cancel stopped it; the bound is
# loose because CI shares two busy cores (`python -m bench lsp` measures the real cancel latency).
STOPPED_WITHIN_S = 10.0


async def _running_task(client: EditorClient, fake_provider: FakeProviderServer) -> str:
    assert await asyncio.to_thread(fake_provider.wait_for_requests, 1, WAIT_S), (
        fake_provider.requests
    )
    status = await client.command("lich.status", {})
    (task,) = [t for t in status["tasks"] if t["state"] == "running"]
    return task["task_id"]


def _elapsed(started: float) -> float:
    return asyncio.get_running_loop().time() - started


async def test_cancel_request_on_lich_ask(
    session, root: Path, client_name: str, fake_provider
) -> None:
    fake_provider.script(SLOW_TURN)
    client = await session(client_name, init_options=provider_options(fake_provider))
    params = types.ExecuteCommandParams(command="lich.ask", arguments=[{"prompt": "slow"}])
    ask = asyncio.ensure_future(
        client.protocol.send_request_async("workspace/executeCommand", params, msg_id="ask-1")
    )
    await _running_task(client, fake_provider)
    started = asyncio.get_running_loop().time()
    client.protocol.notify("$/cancelRequest", types.CancelParams(id="ask-1"))
    with pytest.raises(JsonRpcException) as caught:
        await asyncio.wait_for(ask, WAIT_S)
    assert caught.value.code == -32800  # RequestCancelled
    status = await client.wait_for_status(
        lambda status: all(t["state"] == "done" for t in status["tasks"])
    )
    assert _elapsed(started) < STOPPED_WITHIN_S
    assert len(status["tasks"]) == 1


async def test_cancel_with_the_progress_button(session, root: Path, fake_provider) -> None:
    fake_provider.script(SLOW_TURN)
    client = await session("visual-studio-code", init_options=provider_options(fake_provider))
    ask = asyncio.ensure_future(client.command("lich.ask", {"prompt": "slow"}))
    await _running_task(client, fake_provider)
    (token,) = client.progress_reports
    started = asyncio.get_running_loop().time()
    client.window_work_done_progress_cancel(types.WorkDoneProgressCancelParams(token=token))
    result = await asyncio.wait_for(ask, WAIT_S)
    assert _elapsed(started) < STOPPED_WITHIN_S
    assert result["stopped_reason"] == "aborted"
    reports = client.progress_reports[token]
    kinds = [type(v).__name__ for v in reports]
    assert kinds[0] == "WorkDoneProgressBegin" and kinds[-1] == "WorkDoneProgressEnd"
    assert reports[0].cancellable is True and reports[0].title.startswith("lich: slow · thread ")
    assert reports[-1].message == "aborted"
