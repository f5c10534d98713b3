"""editors/emacs in a real batch Emacs (Debian's emacs-nox 28 + elpa-eglot 1.9, elpa-lsp-mode 8).

Starts lich-lsp through lich-eglot.el (the Eglot adapter of the shared lich.el) with our server
class, checks the server initialized, that lich.read returns anchored rows, that lich.cancel
answers, that lich.applyPatch edits the buffer and the lich/saveDocuments request saves it, and
that the "Ask agent…" code action is offered; and that `lich-eglot-trust-workspace` trusts and
(with a prefix argument) revokes a workspace config through lich.trustWorkspace, after Eglot
showed the server's trust question. When lsp-mode is installed, the same commands run end to
end through lich-lsp-mode.el (the lsp-mode adapter). ERT without a server: lich.el alone renders
lich/event payloads, saves documents and sends its commands through an adapter; both adapters
route lich/event to it. The shared lich/event fixtures (tests/fixtures/events, checked against
docs/lich-event.schema.json) reach lich.el through each client's own JSON reader and render the
lines a user must see. The three files name no private `eglot--`/`lsp--` function. Skips when
there is no `emacs` or no Eglot (never under CI=true, where .ci/run installs both).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from lich_core.hashline.anchors import line_hash
from tests.support.event_schema import (
    FIXTURES_DIR,
    SCHEMA_FILE,
    assert_valid_event,
    fixture_files,
    load_fixture,
    schema_errors,
)
from tests.support.fake_provider import FakeProviderServer

REPO = Path(__file__).resolve().parents[2]
SCENARIO = Path(__file__).resolve().parent / "emacs" / "eglot_scenario.el"
TRUST_SCENARIO = SCENARIO.parent / "eglot_trust.el"
RUN_TESTS_SCENARIO = SCENARIO.parent / "eglot_run_tests.el"
PROCESS_TIMEOUT_S = 180
EMACS_DIR = REPO / "editors" / "emacs"
EMACS_FILES = ("lich.el", "lich-chat.el", "lich-completion.el", "lich-eglot.el", "lich-lsp-mode.el")
# An Emacs Lisp symbol (no quote or `#'`), e.g. `eglot--uri-to-path`, `lich-eglot--servers`.
SYMBOL = re.compile(r"[A-Za-z0-9_+*/<>=!?$%&:.~^-]+")


def _feature_available(emacs: str, feature: str) -> bool:
    probe = subprocess.run(
        [emacs, "--batch", "--eval", f"(require (quote {feature}))"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    return probe.returncode == 0


def _eglot_available(emacs: str) -> bool:
    return _feature_available(emacs, "eglot")


@pytest.fixture
def emacs() -> str:
    binary = shutil.which("emacs")
    problem = None
    if binary is None:
        problem = "no `emacs` binary on PATH (Debian: apt-get install emacs-nox elpa-eglot)"
    elif not _eglot_available(binary):
        problem = "Emacs has no Eglot (Debian: apt-get install elpa-eglot)"
    if problem:
        if os.environ.get("CI") == "true":
            pytest.fail(problem + " under CI=true")
        pytest.skip(problem)
    assert binary is not None
    return binary


def run_emacs_scenario(
    emacs: str, scenario: Path, workspace: Path, tmp_path: Path, extra_env: dict[str, str]
) -> dict[str, Any]:
    """Run one scenario file in batch Emacs; assert it wrote a result with no error and no
    failed check, and return that result."""
    result_file = tmp_path / "result.json"
    env = dict(os.environ)
    env.update(
        {
            "LICH_TEST_WORKSPACE": str(workspace),
            "LICH_TEST_PYTHON": sys.executable,
            "LICH_TEST_RESULT": str(result_file),
            "HOME": str(tmp_path / "home"),
            # The server's user state (trust records, "allow always") stays in this test.
            "XDG_STATE_HOME": str(tmp_path / "state"),
        }
    )
    env.update(extra_env)
    command = [
        emacs,
        # --batch skips the user's init file but keeps Debian's site-start, which puts the
        # elpa-* packages (Eglot) on the load path; -Q would drop them.
        "--batch",
        "-L",
        str(EMACS_DIR),
        "-l",
        str(scenario),
    ]
    proc = subprocess.run(
        command,
        cwd=workspace,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=PROCESS_TIMEOUT_S,
    )
    assert result_file.exists(), (
        f"emacs wrote no result (rc={proc.returncode})\n{proc.stdout}\n{proc.stderr}"
    )
    result: dict[str, Any] = json.loads(result_file.read_text(encoding="utf-8"))
    context = json.dumps(result, indent=1) + "\n" + proc.stderr[-4000:]
    assert result["error"] is None, context
    failed = [check for check in result["checks"] if not check["ok"]]
    assert not failed, context
    return result


def test_eglot_config_starts_server_and_runs_commands(emacs: str, tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    (workspace / ".git").mkdir(parents=True)
    hello = workspace / "hello.py"
    hello.write_text("def hello():\n    return 1\n", encoding="utf-8")
    anchor = f"2:{line_hash('    return 1')}"
    patch = f"@@ hello.py\n= {anchor}..{anchor}\n~    return 2\n"
    run_emacs_scenario(emacs, SCENARIO, workspace, tmp_path, {"LICH_TEST_PATCH": patch})
    assert hello.read_text(encoding="utf-8") == "def hello():\n    return 2\n"


def test_lsp_mode_config_starts_server_and_runs_commands(emacs: str, tmp_path: Path) -> None:
    """lich-lsp-mode.el end to end: lich starts as lsp-mode's add-on client, the lsp-mode
    commands (aliases of lich.el's) reach it, and lich.applyPatch's edit is saved through
    lich/saveDocuments. Skips when Emacs has no lsp-mode (Debian: elpa-lsp-mode)."""
    if not _feature_available(emacs, "lsp-mode"):
        pytest.skip("Emacs has no lsp-mode (Debian: apt-get install elpa-lsp-mode)")
    workspace = tmp_path / "ws"
    (workspace / ".git").mkdir(parents=True)
    (tmp_path / "home").mkdir()
    hello = workspace / "hello.py"
    hello.write_text("def hello():\n    return 1\n", encoding="utf-8")
    anchor = f"2:{line_hash('    return 1')}"
    patch = f"@@ hello.py\n= {anchor}..{anchor}\n~    return 2\n"
    run_emacs_scenario(
        emacs,
        SCENARIO.parent / "lsp_mode_scenario.el",
        workspace,
        tmp_path,
        {"LICH_TEST_PATCH": patch},
    )
    assert hello.read_text(encoding="utf-8") == "def hello():\n    return 2\n"


def test_eglot_trust_workspace_command(emacs: str, tmp_path: Path) -> None:
    """M-x lich-eglot-trust-workspace trusts a config naming a plugin; C-u revokes it."""
    workspace = tmp_path / "ws"
    (workspace / ".git").mkdir(parents=True)
    (workspace / "hello.py").write_text("def hello():\n    return 1\n", encoding="utf-8")
    (workspace / ".lich" / "plugins").mkdir(parents=True)
    (workspace / ".lich" / "plugins" / "evil.py").write_text(
        "from lich_core.plugins import Plugin\n\nplugin = Plugin(name='evil')\n", encoding="utf-8"
    )
    (workspace / ".lich" / "config.json").write_text(
        json.dumps({"plugins": [".lich/plugins/evil.py"]}), encoding="utf-8"
    )
    state = tmp_path / "state"
    result = run_emacs_scenario(
        emacs, TRUST_SCENARIO, workspace, tmp_path, {"XDG_STATE_HOME": str(state)}
    )
    assert "trusted" in (result["values"]["trust_message"] or "")
    assert "untrusted" in (result["values"]["revoke_message"] or "")
    from lich_core.trust import TrustStore

    # Revoked at the end, in the test's own user state dir.
    assert TrustStore.for_env({"XDG_STATE_HOME": str(state)}).record_for(workspace) is None


def test_eglot_run_tests_command(emacs: str, tmp_path: Path) -> None:
    """M-x lich-eglot-run-tests on a small pytest project (the one the Neovim test uses): a
    filtered green run (C-u), a red run whose failure is a Flymake diagnostic (source `lich
    tests`) on the assert line, then the bug fixed in an unsaved buffer and a green run that saved
    it and cleared the diagnostic."""
    from tests.editors.test_nvim import CALC, CALC_FIXED_LINE, write_pytest_project

    workspace = tmp_path / "ws"
    (workspace / ".git").mkdir(parents=True)
    data = write_pytest_project(workspace)
    result = run_emacs_scenario(
        emacs, RUN_TESTS_SCENARIO, workspace, tmp_path, {"LICH_TEST_DATA": json.dumps(data)}
    )
    assert (workspace / "calc.py").read_text(encoding="utf-8") == CALC.replace(
        "    return a - b", CALC_FIXED_LINE, 1
    )
    assert "tests failed" in result["values"]["red"]["message"]


def run_ert(emacs: str, test_file: Path, env: dict[str, str] | None = None) -> str:
    """Run the ERT tests of TEST_FILE in batch Emacs (ENV added to the environment); assert
    none failed; return stderr."""
    proc = subprocess.run(
        [emacs, "--batch", "-L", str(EMACS_DIR), "-l", str(test_file)]
        + ["-f", "ert-run-tests-batch-and-exit"],
        env={**os.environ, **(env or {})},
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=PROCESS_TIMEOUT_S,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert " 0 unexpected" in proc.stderr, proc.stderr[-4000:]
    return proc.stderr


def test_transcript_renders_llm_retry(emacs: str) -> None:
    """ERT in batch Emacs: both adapters hand lich/event to lich.el, which turns an llm_retry
    event into a restart notice; their commands are aliases of the shared ones."""
    run_ert(emacs, SCENARIO.parent / "transcript_retry.el")


def test_shared_lich_el(emacs: str) -> None:
    """ERT in batch Emacs, lich.el alone: loads without Eglot or lsp-mode; renders text_delta,
    tool_call_start/end, llm_retry (discarded_chars) and run_end from plists and hash tables;
    lich/saveDocuments saves exactly the named buffers; commands go through an adapter;
    lich-status adds one line per MCP server (none from a missing or malformed mcp_servers), and
    lich-run-tests tells green, red (the failing tests) and error runs apart."""
    stderr = run_ert(emacs, SCENARIO.parent / "lich_shared.el")
    for name in (
        "lich-loads-without-a-client",
        "lich-renders-events-from-plists",
        "lich-renders-events-from-hash-tables",
        "lich-save-documents-saves-exactly-the-named-buffers",
        "lich-ask-sends-uri-and-region",
        "lich-status-shows-mcp-servers",
        "lich-status-tolerates-a-missing-or-malformed-mcp-servers",
        "lich-run-tests-green-red-and-error",
        "lich-run-tests-interactive-filter-and-request-error",
    ):
        assert re.search(rf"passed\s+\d+/\d+\s+{name}\b", stderr), (name, stderr[-4000:])


# What the *lich transcript* buffer shows for each shared fixture (tests/fixtures/events), line
# by line. Same content as the Neovim (tests/editors/nvim/transcript_fixtures.lua) and VS Code
# (editors/vscode/test/transcript.test.ts) renderers show: the task and its model, tool calls
# with their names and arguments (or that they were too large to send), results and failures,
# plugin warnings, compression, retry/failover notices, the streamed text joined in order, the
# final answer of a provider that did not stream, errors, the budget stop and how the run ended.
# Like VS Code's output channel, the transcript keeps the void partial answer of a failed attempt
# and says where the restarted answer begins.
AUTH_ERROR = "provider 'fake' at http://127.0.0.1:8765/v1: auth: HTTP 401: invalid API key (check api_key_env)"
NO_SESSION = "session_not_found: no session 20240101-000000-ffffff in /home/dev/proj/.lich/sessions"
EXPECTED_TRANSCRIPTS: dict[str, list[str]] = {
    "run_tools_retry": [
        "▶ t1 (fake-model)",
        "! plugin warning: plugin .lich/plugins/lint.py: SyntaxError: invalid syntax (lint.py, line 3)",
        "Let me look at the file first.",
        '→ read_file {"path":"src/app.py","end":3}',
        "← read_file ok: 1:a3|def main(): 2:9f| return 1 3:0c|",
        '→ apply_patch {"input":"@@ src/app.py\\n= 2:9f..2:9f\\n~ return 2\\n"}',
        "← apply_patch failed: edit_rejected: stale_document: src/app.py changed in the editor; read it again",
        "… compressing the conversation (~81234 tokens)",
        "… compressed ~81234 → ~9120 tokens",
        "The answe",
        "… provider fake failed (network): retrying in 0.5 s (attempt 2 of 3); the answer restarts below",
        "The answer is 42.",
        "■ final",
    ],
    "run_failover": [
        "▶ t2 (a-model)",
        "Reading.",
        '→ read_file {"path":"README.md","end":2}',
        "← read_file ok: 1:5e|# proj 2:00|",
        "! plugin warning: plugin 'audit': before_llm_call raised KeyError: 'turn'",
        # The multi-line, multi-byte partial answer, voided by the failover...
        "héllo",
        "wor",
        "… provider a failed (bad_request): failing over to b; the answer restarts below",
        # ...and the final answer of the provider that does not stream.
        "Done.",
        "■ final",
    ],
    "run_budget": [
        "▶ t3 (fake-model)",
        "! turn budget exhausted (1 turns): skipped terminal, terminal",
        "■ budget",
    ],
    "run_error": [
        "▶ t4 (fake-model)",
        "… provider fake failed (rate_limit): retrying in 2.0 s (attempt 2 of 3)",
        f"! {AUTH_ERROR}",
        f"■ error: {AUTH_ERROR}",
    ],
    "run_session_error": [
        "▶ t5 (fake-model)",
        f"! {NO_SESSION}",
        f"■ error: {NO_SESSION}",
    ],
    "run_cancelled": [
        "▶ t6 (fake-model)",
        "→ edit_file (arguments too large to show)",
        "← edit_file ok: Edited src/big.py: 4000 replacements",
        "… compressing the conversation (~83010 tokens)",
        "… compression skipped: cancelled",
        "■ aborted",
    ],
    # The `plan` event has no line here: the update_plan call before it shows the plan.
    "run_plan": [
        "▶ t7 (fake-model)",
        '→ update_plan {"plan":[{"step":"Read the failing test","status":"completed"},{"step":"Fix parse_date",'
        '"status":"in_progress","priority":"high"},{"step":"Run the tests","stat…',
        "← update_plan ok: Plan updated: 1 of 3 steps completed; in progress: Fix parse_date",
        "Working on parse_date.",
        "■ final",
    ],
}
TRANSCRIPT_FIXTURES = SCENARIO.parent / "transcript_fixtures.el"


def render_fixtures(emacs: str, fixtures_dir: Path, tmp_path: Path) -> dict[str, dict[str, Any]]:
    """transcript_fixtures.el over the fixture files of FIXTURES_DIR, in batch Emacs with a
    fresh HOME: {client: {"transcripts": {fixture: text}, "events": {fixture: count}, ...}} for
    Eglot and, when installed, lsp-mode (hash tables, and plists as with `lsp-use-plists')."""
    home = tmp_path / "home"
    # --batch loads no init file (and -Q would drop Debian's site-start, which puts Eglot and
    # lsp-mode on the load path): an init file here would stop Emacs, failing the run.
    for init in (
        home / ".emacs",
        home / ".emacs.d" / "init.el",
        home / ".config" / "emacs" / "init.el",
    ):
        init.parent.mkdir(parents=True, exist_ok=True)
        init.write_text("(kill-emacs 7)\n", encoding="utf-8")
    out = tmp_path / "rendered"
    out.mkdir()
    env = {
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "LICH_TEST_FIXTURES_DIR": str(fixtures_dir),
        "LICH_TEST_RESULT_DIR": str(out),
    }
    stderr = run_ert(emacs, TRANSCRIPT_FIXTURES, env)
    clients = ["eglot"]
    if _feature_available(emacs, "lsp-mode"):
        clients += ["lsp-mode", "lsp-mode-plists"]
    else:
        assert re.search(r"skipped\s+\d+/\d+\s+lich-fixtures-through-lsp-mode\b", stderr), stderr[
            -4000:
        ]
    results = {}
    for client in clients:
        path = out / f"{client}.json"
        assert path.exists(), (client, stderr[-4000:])
        results[client] = json.loads(path.read_text(encoding="utf-8"))
    return results


def transcript_mismatches(results: dict[str, dict[str, Any]], fixtures_dir: Path) -> dict[str, Any]:
    """{"client/fixture": {"got": [...], "want": [...]}} for each transcript that is not the
    expected one (each fixture's every event delivered and rendered without an error)."""
    found: dict[str, Any] = {}
    for client, result in results.items():
        assert result["errors"] == [], (client, result["errors"])
        for name, want in EXPECTED_TRANSCRIPTS.items():
            events = json.loads((fixtures_dir / f"{name}.json").read_text(encoding="utf-8"))
            assert result["events"][name] == len(events), (client, name, result["events"])
            text = result["transcripts"][name]
            if text != "\n".join(want) + "\n":
                found[f"{client}/{name}"] = {"got": text.split("\n")[:-1], "want": want}
    return found


def test_transcript_renders_the_shared_event_fixtures(emacs: str, tmp_path: Path) -> None:
    """The fixtures of tests/fixtures/events, after checking them against the schema, framed as
    the server sends them and read by Eglot's (and lsp-mode's) own JSON-RPC reader, make the
    *lich transcript* show exactly EXPECTED_TRANSCRIPTS; every event reaches lich.el."""
    names = [path.stem for path in fixture_files()]
    for name in names:
        for index, event in enumerate(load_fixture(name)):
            assert_valid_event(event, f"{name}.json[{index}]")
    assert sorted(names) == sorted(EXPECTED_TRANSCRIPTS), (
        "a fixture without expected transcript lines"
    )
    results = render_fixtures(emacs, FIXTURES_DIR, tmp_path)
    mismatches = transcript_mismatches(results, FIXTURES_DIR)
    assert not mismatches, json.dumps(mismatches, indent=1, ensure_ascii=False)


# A field each fixture's transcript depends on, renamed in a copy: (fixture, event type, field,
# new name, the expected line that must then be gone).
RENAMES = [
    (
        "run_tools_retry",
        "tool_call_start",
        "name",
        "tool",
        '→ read_file {"path":"src/app.py","end":3}',
    ),
    ("run_failover", "final", "text", "answer", "Done."),
    (
        "run_budget",
        "budget_exhausted",
        "skipped_calls",
        "skipped",
        "! turn budget exhausted (1 turns): skipped terminal, terminal",
    ),
    (
        "run_error",
        "llm_retry",
        "delay_s",
        "delay",
        "… provider fake failed (rate_limit): retrying in 2.0 s (attempt 2 of 3)",
    ),
    ("run_session_error", "error", "message", "text", f"! {NO_SESSION}"),
    ("run_cancelled", "run_start", "model", "model_name", "▶ t6 (fake-model)"),
]


def test_renamed_fixture_field_fails_the_transcript_check(emacs: str, tmp_path: Path) -> None:
    """Renaming one field per fixture (in a copy) makes the schema reject it and the Emacs
    transcript lose the line that showed it: the check above would fail for every fixture."""
    copies = tmp_path / "fixtures"
    copies.mkdir()
    for path in fixture_files():
        shutil.copy(path, copies / path.name)
    for name, kind, field, renamed, _line in RENAMES:
        events = load_fixture(name)
        hits = [event for event in events if event["type"] == kind and field in event["data"]]
        assert hits, (name, kind, field)
        for event in hits:
            event["data"][renamed] = event["data"].pop(field)
            assert schema_errors(event), (name, event)
        (copies / f"{name}.json").write_text(
            json.dumps(events, ensure_ascii=False), encoding="utf-8"
        )
    results = render_fixtures(emacs, copies, tmp_path)
    mismatches = transcript_mismatches(results, copies)
    # Every client's transcript of every fixture differs, and only those.
    assert sorted(mismatches) == sorted(
        f"{client}/{rename[0]}" for client in results for rename in RENAMES
    )
    for client in results:
        for name, _kind, _field, _renamed, line in RENAMES:
            assert line in EXPECTED_TRANSCRIPTS[name]
            assert line not in mismatches[f"{client}/{name}"]["got"], (client, name)


def transcript_fields(source: str) -> set[tuple[str, str]]:
    """The (object, key) pairs lich.el's transcript code reads with `lich-json-get`, object
    being `event` or `data`."""
    start = source.index(";;;; The transcript")
    section = source[start : source.index(";;;; Progress", start)]
    return set(re.findall(r'\(lich-json-get (event|data) "([a-z_]+)"\)', section))


def test_transcript_reads_only_schema_fields() -> None:
    """Every field the Emacs transcript reads is in docs/lich-event.schema.json (an event's own
    or one of some event's data), so a renderer cannot drift to a field the server never sends."""
    schema = json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))
    defs = schema["$defs"]
    event_fields = {
        key for d in defs.values() if "type" in d.get("properties", {}) for key in d["properties"]
    }
    data_fields = {
        key
        for d in defs.values()
        if "type" not in d.get("properties", {})
        for key in d.get("properties", {})
    }
    read = transcript_fields((EMACS_DIR / "lich.el").read_text(encoding="utf-8"))
    assert ("data", "name") in read and ("event", "task_id") in read, read
    unknown = {
        f"{obj}.{key}"
        for obj, key in read
        if key not in (event_fields if obj == "event" else data_fields)
    }
    assert not unknown, unknown


def private_client_symbols(text: str) -> list[str]:
    """Symbols of Eglot's or lsp-mode's internals (`eglot--…`, `lsp--…`) in Emacs Lisp TEXT.
    Our own internals (`lich--…`, `lich-eglot--…`, `lich-lsp-mode--…`) are allowed."""
    return [
        symbol
        for symbol in SYMBOL.findall(text)
        if symbol.startswith(("eglot--", "lsp--", "jsonrpc--"))
    ]


def test_private_client_symbols_are_detected() -> None:
    """The check below sees a private call however it is written, and only those."""
    sample = "(eglot--uri-to-path u) #'lsp--path-to-uri 'jsonrpc--process (lich-eglot--x) lich--y"
    assert private_client_symbols(sample) == [
        "eglot--uri-to-path",
        "lsp--path-to-uri",
        "jsonrpc--process",
    ]


def test_emacs_files_use_public_client_api_only() -> None:
    """lich.el and its two adapters name no private `eglot--`/`lsp--`/`jsonrpc--` function or
    variable (code, comments and strings alike), and lich.el needs neither client."""
    found = {
        name: private_client_symbols((EMACS_DIR / name).read_text(encoding="utf-8"))
        for name in EMACS_FILES
    }
    assert not any(found.values()), found
    shared = (EMACS_DIR / "lich.el").read_text(encoding="utf-8")
    assert not re.search(r"\(require '(eglot|lsp-mode|jsonrpc)\)", shared)
    for adapter in ("lich-eglot.el", "lich-lsp-mode.el"):
        assert "(require 'lich)" in (EMACS_DIR / adapter).read_text(encoding="utf-8"), adapter


CHAT_SCENARIO = SCENARIO.parent / "chat_scenario.el"


@pytest.mark.parametrize("client", ["eglot", "lsp-mode"])
def test_chat_sends_a_message_and_a_follow_up(
    emacs: str, tmp_path: Path, fake_provider: FakeProviderServer, client: str
) -> None:
    """M-x lich-chat through each client against the real lich-lsp and the fake provider:
    `@hel` completes to `@hello.py` (lich.mentions); a two-line message (C-j) sent with RET
    shows its tool call as one line and the streamed answer; a follow-up sent with RET lands on
    the same thread without moving point out of the first answer, and the provider's request
    for it carries the first prompt and answer; a provider error is said inline;
    lich-new-thread empties the chat, lich-threads brings the thread back from lich.thread and
    lich-rewind on the second turn marks turns 2 and 3 rewound (and the server agrees); the
    server restarts (eglot-reconnect / lsp-workspace-restart) and the chat reloads the thread
    from the new server, says so in one line, keeps the draft input, and its next message
    continues the thread there (the provider sees the first turn again)."""
    if client == "lsp-mode" and not _feature_available(emacs, "lsp-mode"):
        pytest.skip("Emacs has no lsp-mode (Debian: apt-get install elpa-lsp-mode)")
    from tests.editors.test_nvim import write_provider_config

    fake_provider.script(
        {"tool_calls": [{"name": "read_file", "arguments": {"path": "hello.py"}}]},
        {"text": "The answer is 42."},
        {"text": "Still 42, as I said."},
        {"status": 401},
        {"text": "Back after the restart."},
    )
    write_provider_config(tmp_path, fake_provider)
    workspace = tmp_path / "ws"
    (workspace / ".git").mkdir(parents=True)
    (tmp_path / "home").mkdir()
    (workspace / "hello.py").write_text("def hello():\n    return 1\n", encoding="utf-8")
    result = run_emacs_scenario(
        emacs,
        CHAT_SCENARIO,
        workspace,
        tmp_path,
        {"LICH_TEST_CLIENT": client, "XDG_CONFIG_HOME": str(tmp_path / "config")},
    )
    thread = result["values"]["thread"]
    assert thread.startswith("chat-")
    requests = [request["json"]["messages"] for request in fake_provider.requests]
    first = json.dumps(requests[0])
    assert "First question\\nabout hello.py" in first
    follow_up = json.dumps(requests[2])
    # The follow-up's request carries the whole first turn: prompt, tool call and answer.
    assert "First question" in follow_up and "The answer is 42." in follow_up
    assert "Follow-up question" in follow_up
    assert "Follow-up question" not in first
    # After the restart: the new server continues the thread (rewound turns 2 and 3 are gone).
    after_restart = json.dumps(requests[-1])
    assert "After the restart" in after_restart and "The answer is 42." in after_restart
    assert "Follow-up question" not in after_restart


def test_chat_renders_events_without_a_server(emacs: str) -> None:
    """ERT in batch Emacs, lich-chat.el over a fake adapter: lich.el autoloads the chat
    commands; a first message names its new thread (`new_thread: chat-…`) and the chat follows
    only that thread's events (a run another client started at the same time is not adopted),
    text and tool lines stream in without moving point, a follow-up names the thread; a
    cancelled turn, a refused request (thread_busy:) and a non-streamed answer are shown once,
    in plain words; a connect of the chat's server (not another's) ends a turn the old server
    took with it and reloads the thread, keeping the draft input, saying so in one line; a
    200-turn thread opens in under a second, each turn findable at point; M-p/M-n walk the
    prompts sent and a shown thread's prompts, M-n past the newest gives the draft back.
    Issue #45: lich.ask says `origin: "chat"`; C-c C-c is an asynchronous lich.cancel (no
    synchronous request), sent once the turn's first event names its task, and a late event of
    the failed turn before is not adopted; a message sent while a turn runs is queued (shown under
    the conversation, C-c C-k takes it back) and sent when the turn ends; a tool call line opens
    with TAB/RET to its diff (an edit) or output (a command); answers take markdown-mode's faces
    (plain with `lich-chat-markdown' nil)."""
    stderr = run_ert(emacs, CHAT_SCENARIO.parent / "chat_render.el")
    for name in (
        "lich-chat-commands-are-autoloaded",
        "lich-chat-streams-without-moving-point",
        "lich-chat-says-cancelled-and-errors-in-plain-words",
        "lich-chat-opens-a-200-turn-thread-quickly",
        "lich-chat-reloads-its-thread-when-the-server-connects",
        "lich-chat-input-history-walks-the-prompts-sent",
        "lich-chat-input-history-holds-a-loaded-threads-prompts",
        "lich-chat-cancel-does-not-wait-and-never-sticks",
        "lich-chat-queues-a-message-sent-while-a-turn-runs",
        "lich-chat-keeps-a-queued-message-it-cannot-send",
        "lich-chat-tool-line-opens-to-its-diff-or-output",
        "lich-chat-draws-answers-as-markdown",
    ):
        assert re.search(rf"passed\s+\d+/\d+\s+{name}\b", stderr), (name, stderr[-4000:])


def test_chat_byte_compiles(emacs: str, tmp_path: Path) -> None:
    """lich-chat.el and lich-completion.el byte-compile with warnings as errors next to lich.el,
    without any LSP client loaded (tests/editors/test_editor_configs.py covers the other three
    files)."""
    for name in ("lich.el", "lich-chat.el", "lich-completion.el"):
        shutil.copy(EMACS_DIR / name, tmp_path / name)
    proc = subprocess.run(
        [emacs, "--batch", "-L", str(tmp_path), "--eval", "(setq byte-compile-error-on-warn t)"]
        + ["-f", "batch-byte-compile", "lich-chat.el", "lich-completion.el"],
        cwd=tmp_path,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=PROCESS_TIMEOUT_S,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert (tmp_path / "lich-chat.elc").exists()
    assert (tmp_path / "lich-completion.elc").exists()


COMPLETION_SCENARIO = SCENARIO.parent / "completion_scenario.el"


@pytest.mark.parametrize("client", ["eglot", "lsp-mode"])
def test_completion_at_point_inserts_the_suggestion(
    emacs: str, tmp_path: Path, fake_provider: FakeProviderServer, client: str
) -> None:
    """completion-at-point through each client against the real lich-lsp, the fake provider as
    the user config's completion model: typing `x = max(va` then completion-at-point leaves
    `x = max(value_a, value_b)` in the buffer (the item's textEdit replaced the typed `va`);
    the capf alone offers that one candidate, as a completion UI would show it; lich-completion-mode
    shows it as ghost text through the client's adapter and TAB inserts it; the provider was
    asked with the text before the cursor as the prompt. With `lich-eglot-completions` nil,
    Eglot's capf is gone from the lich buffer after a reconnect."""
    if client == "lsp-mode" and not _feature_available(emacs, "lsp-mode"):
        pytest.skip("Emacs has no lsp-mode (Debian: apt-get install elpa-lsp-mode)")
    # Three turns: the second capf call and the ghost text may ask again rather than answer from
    # the last suggestion.
    fake_provider.script(*[{"text": "lue_a, value_b)"}] * 3)
    config = {
        "completion": {
            "kind": "openai_compat",
            "format": "completions",
            "base_url": fake_provider.url + "/v1",
            "model": "fim",
        },
        "completion_debounce_ms": 0,
    }
    user_config = tmp_path / "config" / "lich" / "config.json"
    user_config.parent.mkdir(parents=True)
    user_config.write_text(json.dumps(config), encoding="utf-8")
    workspace = tmp_path / "ws"
    (workspace / ".git").mkdir(parents=True)
    (tmp_path / "home").mkdir()
    (workspace / "hello.py").write_text("def hello():\n    return 1\n", encoding="utf-8")
    result = run_emacs_scenario(
        emacs,
        COMPLETION_SCENARIO,
        workspace,
        tmp_path,
        {"LICH_TEST_CLIENT": client, "XDG_CONFIG_HOME": str(tmp_path / "config")},
    )
    assert result["values"]["after_completion_at_point"] == "x = max(value_a, value_b)"
    assert result["values"][f"capf_candidates_{client}"] == ["value_a, value_b)"]
    assert result["values"][f"ghost_{client}"] == "lue_a, value_b)"
    fim = [r for r in fake_provider.requests if r["path"].endswith("/completions")]
    assert fim, fake_provider.requests
    body = fim[0]["json"]
    assert body["model"] == "fim"
    assert body["prompt"].endswith("def hello():\n    return 1\nx = max(va"), body["prompt"]
