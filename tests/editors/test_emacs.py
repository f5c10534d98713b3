"""editors/emacs in a real batch Emacs (Debian's emacs-nox 28 + elpa-eglot 1.9, elpa-lsp-mode 8).

Starts lich-lsp through lich-eglot.el (the Eglot adapter of the shared lich.el) with our server
class, checks the server initialized, that lich.read returns anchored rows, that lich.cancel
answers, that lich.applyPatch edits the buffer and the lich/saveDocuments request saves it, and
that the "Ask agent…" code action is offered; and that `lich-eglot-trust-workspace` trusts and
(with a prefix argument) revokes a workspace config through lich.trustWorkspace, after Eglot
showed the server's trust question. When lsp-mode is installed, the same commands run end to
end through lich-lsp-mode.el (the lsp-mode adapter). ERT without a server: lich.el alone renders
lich/event payloads, saves documents and sends its commands through an adapter; both adapters
route lich/event to it. The three files name no private `eglot--`/`lsp--` function. Skips when
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

REPO = Path(__file__).resolve().parents[2]
SCENARIO = Path(__file__).resolve().parent / "emacs" / "eglot_scenario.el"
TRUST_SCENARIO = SCENARIO.parent / "eglot_trust.el"
PROCESS_TIMEOUT_S = 180
EMACS_DIR = REPO / "editors" / "emacs"
EMACS_FILES = ("lich.el", "lich-eglot.el", "lich-lsp-mode.el")
# An Emacs Lisp symbol (no quote or `#'`), e.g. `eglot--uri-to-path`, `lich-eglot--servers`.
SYMBOL = re.compile(r"[A-Za-z0-9_+*/<>=!?$%&:.~^-]+")


def _eglot_available(emacs: str) -> bool:
    probe = subprocess.run(
        [emacs, "--batch", "--eval", "(require (quote eglot))"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    return probe.returncode == 0


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
    probe = subprocess.run(
        [emacs, "--batch", "--eval", "(require (quote lsp-mode))"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    if probe.returncode != 0:
        pytest.skip("Emacs has no lsp-mode (Debian: apt-get install elpa-lsp-mode)")
    workspace = tmp_path / "ws"
    (workspace / ".git").mkdir(parents=True)
    (tmp_path / "home").mkdir()
    hello = workspace / "hello.py"
    hello.write_text("def hello():\n    return 1\n", encoding="utf-8")
    anchor = f"2:{line_hash('    return 1')}"
    patch = f"@@ hello.py\n= {anchor}..{anchor}\n~    return 2\n"
    run_emacs_scenario(
        emacs, SCENARIO.parent / "lsp_mode_scenario.el", workspace, tmp_path, {"LICH_TEST_PATCH": patch}
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


def run_ert(emacs: str, test_file: Path) -> str:
    """Run the ERT tests of TEST_FILE in batch Emacs; assert none failed; return stderr."""
    proc = subprocess.run(
        [emacs, "--batch", "-L", str(EMACS_DIR), "-l", str(test_file)]
        + ["-f", "ert-run-tests-batch-and-exit"],
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
    lich/saveDocuments saves exactly the named buffers; commands go through an adapter."""
    stderr = run_ert(emacs, SCENARIO.parent / "lich_shared.el")
    for name in (
        "lich-loads-without-a-client",
        "lich-renders-events-from-plists",
        "lich-renders-events-from-hash-tables",
        "lich-save-documents-saves-exactly-the-named-buffers",
        "lich-ask-sends-uri-and-region",
    ):
        assert re.search(rf"passed\s+\d+/\d+\s+{name}\b", stderr), (name, stderr[-4000:])


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
    assert private_client_symbols(sample) == ["eglot--uri-to-path", "lsp--path-to-uri", "jsonrpc--process"]


def test_emacs_files_use_public_client_api_only() -> None:
    """lich.el and its two adapters name no private `eglot--`/`lsp--`/`jsonrpc--` function or
    variable (code, comments and strings alike), and lich.el needs neither client."""
    found = {
        name: private_client_symbols((EMACS_DIR / name).read_text(encoding="utf-8")) for name in EMACS_FILES
    }
    assert not any(found.values()), found
    shared = (EMACS_DIR / "lich.el").read_text(encoding="utf-8")
    assert not re.search(r"\(require '(eglot|lsp-mode|jsonrpc)\)", shared)
    for adapter in ("lich-eglot.el", "lich-lsp-mode.el"):
        assert "(require 'lich)" in (EMACS_DIR / adapter).read_text(encoding="utf-8"), adapter
