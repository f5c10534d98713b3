"""lich's ACP face (`python -m lich_acp`, `lich acp`) driven by two ACP clients nobody here wrote.

- driver.mjs: a small client on the official TypeScript SDK (@agentclientprotocol/sdk), which
  declares fs read/write, answers session/request_permission with a chosen option kind and
  prints every message it got as a JSON line;
- acpx: a headless ACP command-line client (`acpx --agent CMD exec PROMPT`).

The model is the fake provider (tests/support/fake_provider.py) in the user's config file; its
script calls edit_file on hello.py, then answers with text. Needs node and this folder's npm
packages (scripts/test.sh installs them); skips without them, fails instead under CI=true.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from lich_core.config import user_config_path
from tests.support.fake_provider import FakeProviderServer

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
DRIVER = HERE / "driver.mjs"
NODE_MODULES = HERE / "node_modules"
SDK_PACKAGE = NODE_MODULES / "@agentclientprotocol" / "sdk" / "package.json"
ACPX = NODE_MODULES / ".bin" / "acpx"
AGENT_COMMAND = [sys.executable, "-m", "lich_acp"]
# `lich acp`, the same agent behind the CLI (python -m lich_cli is the `lich` command).
LICH_ACP_COMMAND = [sys.executable, "-m", "lich_cli", "acp"]
# One prompt turn: lich starts, calls the model twice and the client answers its fs requests.
PROCESS_TIMEOUT_S = 150

HELLO = "def hello():\n    return 1\n"
EDITED = "def hello():\n    return 42\n"
PROMPT = "Make hello() return 42."
FINAL_TEXT = "Changed hello() to return 42."
# One fake-provider turn: the model calls edit_file.
EDIT_CALL = {
    "tool_calls": [
        {
            "name": "edit_file",
            "arguments": {"path": "hello.py", "old_string": "return 1", "new_string": "return 42"},
        }
    ]
}


def require(condition: bool, reason: str) -> None:
    """Skip (developer machine) or fail (CI=true) when a prerequisite is missing."""
    if condition:
        return
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"CI=true but {reason}")
    pytest.skip(reason)


@pytest.fixture
def node() -> str:
    binary = shutil.which("node")
    require(binary is not None, "node is not installed")
    require(
        SDK_PACKAGE.exists() and ACPX.exists(),
        f"{NODE_MODULES} is missing: run `npm install --no-save` in {HERE} (scripts/test.sh does it)",
    )
    require(importlib.util.find_spec("lich_acp") is not None, "the lich_acp package is missing")
    assert binary is not None
    return binary


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / ".git").mkdir(parents=True)
    (root / "hello.py").write_text(HELLO, encoding="utf-8")
    return root


def write_user_config(provider: FakeProviderServer, **extra: Any) -> None:
    """The fake provider in the user's config file (tests/conftest.py points HOME and
    XDG_CONFIG_HOME at a temporary folder for every test)."""
    config = {
        "providers": [
            {
                "name": "fake",
                "kind": "openai_compat",
                "base_url": provider.url + "/v1",
                "model": "fake-model",
            }
        ],
        **extra,
    }
    path = user_config_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(config), encoding="utf-8")


def agent_env() -> dict[str, str]:
    env = dict(os.environ)
    # `python -m lich_acp` from this checkout, installed editable or not.
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH")) if p)
    # lich's own log (stderr, in the failure message): each model request, each client call.
    env.setdefault("LICH_ACP_LOG", "INFO")
    return env


def json_lines(text: str) -> list[dict[str, Any]]:
    records = []
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("{"):
            try:
                records.append(json.loads(line))
            except json.JSONDecodeError:
                pass
    return records


def run_driver(
    node: str, workspace: Path, permission: str = "allow_once"
) -> tuple[list[dict[str, Any]], str]:
    command = [
        node, str(DRIVER), "--cwd", str(workspace), "--prompt", PROMPT,
        "--permission", permission, "--timeout-ms", str((PROCESS_TIMEOUT_S - 10) * 1000),
        "--", *AGENT_COMMAND,
    ]  # fmt: skip
    done = subprocess.run(
        command,
        cwd=HERE,
        env=agent_env(),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=PROCESS_TIMEOUT_S,
    )
    transcript = f"rc={done.returncode}\nstdout:\n{done.stdout}\nstderr:\n{done.stderr[-6000:]}"
    return json_lines(done.stdout), transcript


def updates(records: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [
        r["update"]
        for r in records
        if r["type"] == "update" and r["update"]["sessionUpdate"] == kind
    ]


def message_text(records: list[dict[str, Any]]) -> str:
    return "".join(
        u["content"].get("text", "")
        for u in updates(records, "agent_message_chunk")
        if u["content"]["type"] == "text"
    )


def one_edit_call(records: list[dict[str, Any]], transcript: str) -> dict[str, Any]:
    calls = updates(records, "tool_call")
    assert len(calls) == 1, f"expected one tool_call update\n{transcript}"
    return calls[0]


def call_updates(records: list[dict[str, Any]], call_id: str) -> list[dict[str, Any]]:
    return [u for u in updates(records, "tool_call_update") if u["toolCallId"] == call_id]


def same_file(path: str, expected: Path) -> bool:
    return os.path.isabs(path) and os.path.realpath(path) == os.path.realpath(expected)


def assert_clean_finish(records: list[dict[str, Any]], transcript: str) -> None:
    errors = [r for r in records if r["type"] == "error"]
    assert not errors, f"the client reported errors\n{transcript}"
    stops = [r for r in records if r["type"] == "stop"]
    assert [s["stopReason"] for s in stops] == ["end_turn"], transcript
    # The agent ends when the client closes its stdin (the driver waits 10 s, then SIGTERMs it).
    last = records[-1]
    assert (last["type"], last["code"], last["signal"]) == ("exit", 0, None), transcript


@pytest.mark.timeout(PROCESS_TIMEOUT_S + 30)
def test_sdk_client_edit_with_permission_streams_a_diff(
    node: str, workspace: Path, fake_provider: FakeProviderServer
) -> None:
    """initialize → session/new → session/prompt with `approval.edit_file = "ask"`: lich asks
    session/request_permission (answered allow_once), writes hello.py through fs/write_text_file,
    reports the call as a tool_call and a tool_call_update carrying a diff, streams the answer
    and ends the turn with end_turn."""
    fake_provider.script(EDIT_CALL, {"text": FINAL_TEXT, "chunks": 3})
    write_user_config(fake_provider, approval={"edit_file": "ask"})
    records, transcript = run_driver(node, workspace)
    assert_clean_finish(records, transcript)

    init = next(r["response"] for r in records if r["type"] == "initialize")
    assert init["protocolVersion"] == 1, transcript
    session = next(r["response"] for r in records if r["type"] == "session")
    assert isinstance(session.get("sessionId"), str) and session["sessionId"], transcript

    assert (workspace / "hello.py").read_text(encoding="utf-8") == EDITED, transcript
    assert PROMPT in json.dumps(fake_provider.requests[0]["json"]["messages"])
    assert len(fake_provider.requests) == 2, transcript

    call = one_edit_call(records, transcript)
    call_id = call["toolCallId"]
    assert call.get("kind") == "edit", f"edit_file's tool_call kind\n{transcript}"

    asks = [r for r in records if r["type"] == "permission"]
    assert len(asks) == 1, f"expected one session/request_permission\n{transcript}"
    assert asks[0]["request"]["toolCall"]["toolCallId"] == call_id, transcript
    kinds = {option["kind"] for option in asks[0]["request"]["options"]}
    assert {"allow_once", "reject_once"} <= kinds, transcript
    assert asks[0]["chosen"] is not None, transcript

    # ACP's write path: the client's fs/write_text_file, with the whole new text.
    writes = [r["request"] for r in records if r["type"] == "write"]
    assert [(same_file(w["path"], workspace / "hello.py"), w["content"]) for w in writes] == [
        (True, EDITED)
    ], transcript

    later = call_updates(records, call_id)
    assert later and later[-1].get("status") == "completed", transcript
    diffs = [c for u in later for c in (u.get("content") or []) if c.get("type") == "diff"]
    assert diffs, f"no tool_call_update with a diff content item\n{transcript}"
    diff = diffs[-1]
    assert same_file(diff["path"], workspace / "hello.py"), diff
    assert (diff.get("oldText"), diff["newText"]) == (HELLO, EDITED), diff

    assert FINAL_TEXT in message_text(records), transcript


@pytest.mark.timeout(PROCESS_TIMEOUT_S + 30)
def test_sdk_client_rejecting_the_edit_leaves_the_file(
    node: str, workspace: Path, fake_provider: FakeProviderServer
) -> None:
    """The same ask answered reject_once: nothing is written, the tool call fails, the model is
    told it was denied, and the turn still ends with end_turn."""
    fake_provider.script(EDIT_CALL, {"text": "Leaving it as it is."})
    write_user_config(fake_provider, approval={"edit_file": "ask"})
    records, transcript = run_driver(node, workspace, permission="reject_once")
    assert_clean_finish(records, transcript)

    assert (workspace / "hello.py").read_text(encoding="utf-8") == HELLO, transcript
    assert not [r for r in records if r["type"] == "write"], transcript
    asks = [r for r in records if r["type"] == "permission"]
    assert len(asks) == 1 and asks[0]["chosen"] is not None, transcript

    call = one_edit_call(records, transcript)
    later = call_updates(records, call["toolCallId"])
    assert later and later[-1].get("status") == "failed", transcript
    assert len(fake_provider.requests) == 2, transcript
    assert "approval_denied" in json.dumps(fake_provider.requests[1]["json"]["messages"])
    assert "Leaving it as it is." in message_text(records), transcript


@pytest.mark.timeout(PROCESS_TIMEOUT_S + 30)
def test_acpx_exec_edits_the_file(
    node: str, workspace: Path, fake_provider: FakeProviderServer
) -> None:
    """`acpx --agent 'lich acp' --approve-all --format json exec PROMPT`, with lich's
    default approvals: acpx's NDJSON shows the streamed answer, the write went through acpx's
    fs/write_text_file, the file changed and the prompt ended with end_turn."""
    fake_provider.script(EDIT_CALL, {"text": FINAL_TEXT, "chunks": 3})
    write_user_config(fake_provider)
    command = [
        str(ACPX), "--agent", shlex.join(LICH_ACP_COMMAND), "--cwd", str(workspace),
        "--approve-all", "--format", "json", "--timeout", str(PROCESS_TIMEOUT_S - 20),
        "exec", PROMPT,
    ]  # fmt: skip
    done = subprocess.run(
        command,
        cwd=workspace,
        env=agent_env(),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=PROCESS_TIMEOUT_S,
    )
    transcript = f"rc={done.returncode}\nstdout:\n{done.stdout}\nstderr:\n{done.stderr[-6000:]}"
    assert done.returncode == 0, transcript
    assert (workspace / "hello.py").read_text(encoding="utf-8") == EDITED, transcript

    messages = json_lines(done.stdout)
    text = "".join(
        m["params"]["update"]["content"].get("text", "")
        for m in messages
        if m.get("method") == "session/update"
        and m["params"]["update"].get("sessionUpdate") == "agent_message_chunk"
    )
    assert FINAL_TEXT in text, transcript
    writes = [m["params"] for m in messages if m.get("method") == "fs/write_text_file"]
    assert [(same_file(w["path"], workspace / "hello.py"), w["content"]) for w in writes] == [
        (True, EDITED)
    ], transcript
    stop_reasons = [
        m["result"]["stopReason"] for m in messages if "stopReason" in (m.get("result") or {})
    ]
    assert stop_reasons == ["end_turn"], transcript
