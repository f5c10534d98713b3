"""Running `lich demo` as a user does: a real `python -m lich_cli demo` in a directory of its own."""

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


def run_demo(
    *args: str, cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "lich_cli", "demo", *args],
        cwd=cwd,
        env=env or repo_env(),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=DEMO_TIMEOUT_S,
    )


def run_demo_on_a_terminal(*args: str, cwd: Path, env: dict[str, str]) -> tuple[int, str]:
    """`lich demo ARGS` with a pseudo-terminal as its standard input and output (what it prints
    there is read as it comes, so a full terminal never blocks it); its exit code and output."""
    import pty
    import threading

    controller, terminal = pty.openpty()
    output = bytearray()

    def drain() -> None:
        while True:
            try:
                chunk = os.read(controller, 65536)
            except OSError:  # the last holder of the terminal side closed it
                return
            if not chunk:
                return
            output.extend(chunk)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    try:
        done = subprocess.run(
            [sys.executable, "-m", "lich_cli", "demo", *args],
            cwd=cwd,
            env=env,
            stdin=terminal,
            stdout=terminal,
            stderr=terminal,
            timeout=DEMO_TIMEOUT_S,
        )
    finally:
        os.close(terminal)
    reader.join(DEMO_TIMEOUT_S)
    os.close(controller)
    return done.returncode, output.decode("utf-8", "replace")
