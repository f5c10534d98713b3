"""Shared bits of the VS Code tests: where things are installed, and the skip-or-fail rule.

Outside CI a missing install is a skip with the command that installs it; with CI=true it is a
failure, so a broken install step can't pass as "skipped".
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

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
