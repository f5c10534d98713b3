"""Running `lich demo` as a user does: a real `python -m lich_core demo` in a directory of its own."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DEMO_TIMEOUT_S = 120


def repo_env(**extra: str) -> dict[str, str]:
    """This process's environment (the isolated HOME and XDG dirs of tests/conftest.py) with the
    checkout importable from any directory, whether or not lich is installed."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH", "")) if p)
    env.pop("NO_COLOR", None)
    env.update(extra)
    return env


def run_demo(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "lich_core", "demo", *args],
        cwd=cwd,
        env=env or repo_env(),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=DEMO_TIMEOUT_S,
    )
