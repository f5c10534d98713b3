"""Fixtures of the `lich demo` tests (helpers: demo_support.py)."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def elsewhere(tmp_path: Path) -> Path:
    """An empty directory to run the demo in (it must stay empty)."""
    folder = tmp_path / "cwd"
    folder.mkdir()
    return folder
