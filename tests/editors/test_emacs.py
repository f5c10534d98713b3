"""editors/emacs/lich-eglot.el in a real batch Emacs (Debian's emacs-nox 28 + elpa-eglot 1.9).

Starts lich-lsp through Eglot with our server class, checks the server initialized, that
lich.read returns anchored rows, that lich.applyPatch edits the buffer and the lich/saveDocuments
request saves it, and that the "Ask agent…" code action is offered; and that
`lich-eglot-trust-workspace` trusts and (with a prefix argument) revokes a workspace config
through lich.trustWorkspace, after Eglot showed the server's trust question. Skips when there is no
`emacs` or no Eglot (never under CI=true, where .ci/run installs both).
"""

from __future__ import annotations

import json
import os
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


def run_eglot_scenario(
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
        str(REPO / "editors" / "emacs"),
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
    run_eglot_scenario(emacs, SCENARIO, workspace, tmp_path, {"LICH_TEST_PATCH": patch})
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
    result = run_eglot_scenario(
        emacs, TRUST_SCENARIO, workspace, tmp_path, {"XDG_STATE_HOME": str(state)}
    )
    assert "trusted" in (result["values"]["trust_message"] or "")
    assert "untrusted" in (result["values"]["revoke_message"] or "")
    from lich_core.trust import TrustStore

    # Revoked at the end, in the test's own user state dir.
    assert TrustStore.for_env({"XDG_STATE_HOME": str(state)}).record_for(workspace) is None


def test_transcript_renders_llm_retry(emacs: str) -> None:
    """ERT in batch Emacs: both configs turn an llm_retry event into a restart notice."""
    test_file = SCENARIO.parent / "transcript_retry.el"
    proc = subprocess.run(
        [emacs, "--batch", "-L", str(REPO / "editors" / "emacs"), "-l", str(test_file)]
        + ["-f", "ert-run-tests-batch-and-exit"],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=PROCESS_TIMEOUT_S,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert "0 unexpected" in proc.stderr, proc.stderr[-4000:]
