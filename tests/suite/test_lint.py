"""The tree is lint-clean as pyproject.toml's [tool.ruff] says: `ruff check` runs as part of the
suite, so it cannot drift (ruff is pinned to one minor version in the test extra)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
RUFF_TIMEOUT_S = 110


def test_ruff_check() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "--no-cache", "."],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=RUFF_TIMEOUT_S,
    )
    assert done.returncode == 0, f"ruff check:\n{done.stdout}{done.stderr}"
