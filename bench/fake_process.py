"""The fake provider (tests.support.fake_provider) in a process of its own.

A latency benchmark that ran the fake provider as a thread of the measuring process would time
that thread too: each streamed chunk it writes takes the GIL from the client whose round trips
are being measured. In its own process it competes for a core at most, as a remote provider
would not, but never for the interpreter.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
STOP_TIMEOUT_S = 10


@contextmanager
def fake_provider_process(turns: list[dict[str, Any]]) -> Iterator[str]:
    """Serve `turns` (the fake provider's script) from a child process; yields its base URL."""
    handle, script_path = tempfile.mkstemp(suffix=".json", prefix="lich-bench-")
    with os.fdopen(handle, "w") as out:
        json.dump(turns, out)
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.support.fake_provider", "--port", "0", "--script", script_path],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline().strip()
        if not line.startswith("LISTENING "):
            raise RuntimeError(f"fake provider did not start: {line!r}")
        yield line.split(" ", 1)[1]
    finally:
        proc.kill()
        proc.wait(timeout=STOP_TIMEOUT_S)
        os.unlink(script_path)
