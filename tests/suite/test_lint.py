"""The tree is lint-clean and formatted as pyproject.toml's [tool.ruff] says: `ruff check` and
`ruff format --check` run as part of the suite, so neither can drift (ruff is pinned to one
minor version in the test extra: a newer formatter could change its style)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
RUFF_TIMEOUT_S = 110


@pytest.mark.parametrize(
    "args",
    [("check", "--no-cache", "."), ("format", "--check", "--no-cache", ".")],
    ids=["check", "format"],
)
def test_ruff(args: tuple[str, ...]) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "ruff", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=RUFF_TIMEOUT_S,
    )
    assert done.returncode == 0, f"ruff {' '.join(args)}:\n{done.stdout}{done.stderr}"
