"""The type checker runs in CI: lich_core, lich_lsp, lich_acp and lich_cli have 0 mypy errors."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MYPY_TIMEOUT_S = 600


@pytest.mark.timeout(MYPY_TIMEOUT_S + 60)
@pytest.mark.skipif(importlib.util.find_spec("mypy") is None, reason="mypy is in the test extra")
def test_mypy_reports_no_errors(tmp_path: Path) -> None:
    # scripts/test.sh keeps mypy's incremental cache in .ci/cache/mypy (a build cache, like the
    # Neovim it downloads there): a re-run checks only what changed. Elsewhere a fresh one.
    cache_dir = os.environ.get("LICH_MYPY_CACHE_DIR") or str(tmp_path / "mypy-cache")
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "lich_core",
            "lich_lsp",
            "lich_acp",
            "lich_cli",
            "--cache-dir",
            cache_dir,
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=MYPY_TIMEOUT_S,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Success: no issues found" in done.stdout
