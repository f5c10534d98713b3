"""The VS Code extension's own checks: `tsc --noEmit`, the vitest suite (mocked `vscode` module and
language client), and the packaged .vsix's contents. Needs `npm ci` in editors/vscode
(.ci/vscode/build.sh does it); skips without node_modules, fails instead under CI=true.
"""

from __future__ import annotations

import json
import subprocess
import zipfile

import pytest

from tests.editors.vscode_support import EXT_DIR, VSIX, node_binary, require

pytestmark = pytest.mark.vscode

NODE_MODULES = EXT_DIR / "node_modules"
TSC = NODE_MODULES / ".bin" / "tsc"
VITEST = NODE_MODULES / ".bin" / "vitest"
VSCE = NODE_MODULES / ".bin" / "vsce"
TOOL_TIMEOUT_S = 300


def _require_node_modules() -> None:
    require(node_binary() is not None, "node is not installed")
    require(
        TSC.exists() and VITEST.exists(),
        f"{NODE_MODULES} is missing: run .ci/vscode/build.sh (npm ci)",
    )


def _run(args: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, cwd=EXT_DIR, capture_output=True, text=True, timeout=TOOL_TIMEOUT_S)


def test_typescript_compiles_cleanly() -> None:
    _require_node_modules()
    done = _run([str(TSC), "--noEmit", "-p", "tsconfig.json"])
    assert done.returncode == 0, f"tsc --noEmit failed:\n{done.stdout}\n{done.stderr}"


def test_protocol_types_are_generated_from_the_schemas() -> None:
    """src/protocol.generated.ts is what scripts/genProtocolTypes.mjs makes of
    docs/lich-event.schema.json and docs/lich-commands.schema.json (run it after either changes)."""
    require(node_binary() is not None, "node is not installed")
    done = _run([str(node_binary()), "scripts/genProtocolTypes.mjs", "--check"])
    assert done.returncode == 0, (
        "src/protocol.generated.ts is stale: run `node scripts/genProtocolTypes.mjs` in "
        f"editors/vscode\n{done.stdout}\n{done.stderr}"
    )
    generated = (EXT_DIR / "src" / "protocol.generated.ts").read_text(encoding="utf-8")
    for name in (
        "export interface LichCommands",
        '"lich.ask": { params: AskParams; result: AskResult }',
    ):
        assert name in generated
    # The extension reads command results and events through them.
    for source in ("chatView.ts", "transcript.ts"):
        assert '"./protocol.generated"' in (EXT_DIR / "src" / source).read_text(encoding="utf-8")


def test_vitest_suite_passes() -> None:
    _require_node_modules()
    report = EXT_DIR / "node_modules" / ".vitest-report.json"
    done = _run(
        [str(VITEST), "run", "--reporter=default", "--reporter=json", f"--outputFile={report}"]
    )
    assert done.returncode == 0, f"vitest failed:\n{done.stdout[-6000:]}\n{done.stderr[-3000:]}"
    summary = json.loads(report.read_text(encoding="utf-8"))
    assert summary["numFailedTests"] == 0
    # The suites the extension's contract rests on all ran.
    files = {result["name"].rsplit("/", 1)[-1] for result in summary["testResults"]}
    for suite in (
        "serverResolve.test.ts",
        "middleware.test.ts",
        "saveDocuments.test.ts",
        "settings.test.ts",
        "extension.test.ts",
        "trust.test.ts",
        "runTests.test.ts",  # Run Tests / Run Tests Matching… and their notifications
        "transcript.test.ts",  # renders the shared event fixtures, validated against the schema
        "chatWebview.test.ts",  # the chat view's script in a DOM: rendering, input, @ completion
        "chatSession.test.ts",  # the chat's server commands, event routing, errors in words
        "chatLinks.test.ts",  # which links of the model's text open: http(s) and workspace files
        "chatApprovals.test.ts",  # approval questions in the chat and the notification, raced
        "chatDiff.test.ts",  # edits drawn as diffs from the tool calls' arguments
        "completions.test.ts",  # ghost text: the capability, the setting, the server's model
    ):
        assert suite in files, f"{suite} did not run"
    assert summary["numPassedTests"] >= 160


def test_vsix_packages_only_the_bundle() -> None:
    _require_node_modules()
    require(VSCE.exists(), "@vscode/vsce is missing: run .ci/vscode/build.sh")
    out = EXT_DIR / "dist" / "lich-lsp.test.vsix"
    done = _run(
        [str(VSCE), "package", "--no-dependencies", "--allow-missing-repository", "--out", str(out)]
    )
    assert done.returncode == 0, f"vsce package failed:\n{done.stdout}\n{done.stderr}"
    try:
        with zipfile.ZipFile(out) as vsix:
            names = set(vsix.namelist())
            manifest = json.loads(vsix.read("extension/package.json"))
    finally:
        out.unlink(missing_ok=True)
    assert "extension/dist/extension.js" in names
    # The chat view's script and its side bar icon.
    assert {"extension/dist/chat.js", "extension/media/lich.svg"} <= names
    assert not any("node_modules" in name or name.startswith("extension/src/") for name in names), (
        sorted(names)
    )
    assert manifest["main"] == "./dist/extension.js"
    assert manifest["capabilities"]["untrustedWorkspaces"]["supported"] == "limited"
    # VS Code 1.100 (code-server 4.100.3) must accept the engine range.
    assert manifest["engines"]["vscode"] in ("^1.82.0", "^1.91.0")
    assert VSIX.parent.exists()
