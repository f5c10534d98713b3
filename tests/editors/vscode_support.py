"""Shared bits of the VS Code tests: where things are installed, the skip-or-fail rule, and running
an end-to-end driver (editors/vscode/e2e/*.mjs) for its `E2E_RESULT {json}` line.

Outside CI a missing install is a skip with the command that installs it; with CI=true it is a
failure, so a broken install step can't pass as "skipped".
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

REPO = Path(__file__).resolve().parents[2]
EXT_DIR = REPO / "editors" / "vscode"
VSIX = EXT_DIR / "dist" / "lich-lsp.vsix"
CACHE_DIR = Path(os.environ.get("LICH_VSCODE_CACHE") or REPO / ".ci" / "cache" / "vscode")
CODE_SERVER_ENTRY = (
    CACHE_DIR / "code-server" / "node_modules" / "code-server" / "out" / "node" / "entry.js"
)
PLAYWRIGHT_CORE = CACHE_DIR / "tools" / "node_modules" / "playwright-core" / "package.json"
CHROMIUM = Path(os.environ.get("LICH_CHROMIUM", "/usr/bin/chromium"))
ARTIFACTS = REPO / "test-artifacts"
# The docs' screenshots are retaken into docs/editors only when asked (a test run must not
# rewrite tracked files): LICH_UPDATE_DOCS_SCREENSHOTS=1.
DOCS_SHOTS = (
    REPO / "docs" / "editors"
    if os.environ.get("LICH_UPDATE_DOCS_SCREENSHOTS") == "1"
    else ARTIFACTS / "docs-screenshots"
)
RESULT_PREFIX = "E2E_RESULT "


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() == "true"


def require(condition: bool, reason: str) -> None:
    """Skip (developer machine) or fail (CI=true) when a prerequisite is missing."""
    if condition:
        return
    if in_ci():
        pytest.fail(f"CI=true but {reason}")
    pytest.skip(reason)


def node_binary() -> str | None:
    return shutil.which("node")


def newest_source_mtime() -> float:
    """Newest mtime among the files that go into the .vsix (stale-package check)."""
    paths = [
        EXT_DIR / "package.json",
        EXT_DIR / "package-lock.json",
        EXT_DIR / "esbuild.mjs",
        EXT_DIR / ".vscodeignore",
    ]
    worklist = [EXT_DIR / "src", EXT_DIR / "media"]
    while worklist:
        folder = worklist.pop()
        for entry in folder.iterdir():
            if entry.is_dir():
                worklist.append(entry)
            else:
                paths.append(entry)
    return max(path.stat().st_mtime for path in paths if path.exists())


def ensure_fresh_vsix(timeout_s: int = 180) -> None:
    """Repackage the extension when its sources are newer than the .vsix (or it is missing), so an
    end-to-end test never runs a stale build."""
    if VSIX.exists() and VSIX.stat().st_mtime >= newest_source_mtime():
        return
    vsce = EXT_DIR / "node_modules" / ".bin" / "vsce"
    require(
        vsce.exists(),
        f"{VSIX} is missing or stale and node_modules is not installed: run .ci/vscode/build.sh",
    )
    done = subprocess.run(
        ["npm", "run", "--silent", "package"],
        cwd=EXT_DIR,
        capture_output=True,
        text=True,
        timeout=timeout_s,
    )
    assert done.returncode == 0, f"packaging the extension failed:\n{done.stdout}\n{done.stderr}"


def require_vscode_install() -> None:
    """Node, code-server, playwright-core and Chromium are installed, and the .vsix is fresh."""
    require(node_binary() is not None, "node is not installed")
    require(
        CODE_SERVER_ENTRY.exists(),
        f"code-server is not installed in {CACHE_DIR}: run .ci/vscode/install.sh",
    )
    require(
        PLAYWRIGHT_CORE.exists(),
        f"playwright-core is not installed in {CACHE_DIR}: run .ci/vscode/install.sh",
    )
    require(
        CHROMIUM.exists(),
        f"{CHROMIUM} is missing: run .ci/vscode/install.sh (apt-get install chromium)",
    )
    ensure_fresh_vsix()


def run_driver(
    driver: str, timeout_s: int, *, docs_dir: Path | None = DOCS_SHOTS
) -> dict[str, Any]:
    """Run editors/vscode/e2e/<driver> with this interpreter and the installs above, and return
    its `E2E_RESULT` object with the driver's stderr (its progress log) under "_stderr". A driver
    that prints no result, or whose setup failed (its "errors"), fails the test here. `docs_dir`
    (LICH_DOCS_DIR) is where the docs' screenshots go, for the drivers that take them."""
    env = dict(os.environ)
    env.update(
        {
            "LICH_PYTHON": sys.executable,
            "LICH_VSCODE_CACHE": str(CACHE_DIR),
            "LICH_VSIX": str(VSIX),
            "LICH_ARTIFACTS_DIR": str(ARTIFACTS),
            "LICH_CHROMIUM": str(CHROMIUM),
        }
    )
    if docs_dir is not None:
        env["LICH_DOCS_DIR"] = str(docs_dir)
    done = subprocess.run(
        [node_binary() or "node", str(EXT_DIR / "e2e" / driver)],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout_s,
    )
    lines = [line for line in done.stdout.splitlines() if line.startswith(RESULT_PREFIX)]
    assert lines, (
        f"the driver printed no result (exit {done.returncode}):\n"
        f"{done.stdout[-3000:]}\n{done.stderr[-6000:]}"
    )
    result: dict[str, Any] = json.loads(lines[-1][len(RESULT_PREFIX) :])
    result["_stderr"] = done.stderr
    assert not result.get("errors"), (
        f"the e2e setup failed: {result['errors']}\n{done.stderr[-6000:]}"
    )
    return result


def passed_scenario(result: dict[str, Any], name: str) -> dict[str, Any]:
    """The driver's result for scenario `name` (run.mjs, editor.mjs), which must have run and
    passed; a failure shows its error, the notifications on screen and the driver's log."""
    scenario = result["scenarios"].get(name)
    assert scenario is not None, f"scenario {name} did not run: {sorted(result['scenarios'])}"
    assert scenario["ok"], (
        f"{name} failed: {scenario.get('error')}\nnotifications: {scenario.get('notifications')}\n"
        f"{result['_stderr'][-4000:]}"
    )
    return scenario
