"""Process checks shared by the tests that kill what they started."""

from __future__ import annotations

import os
from pathlib import Path


def pid_alive(pid: int) -> bool:
    """True while `pid` runs; a zombie (killed, not yet reaped by whoever adopted it: in a
    container an orphan may stay one) counts as dead."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    except OSError:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        return True
    try:
        state = stat.rsplit(")", 1)[1].split()[0]
    except IndexError:
        return False
    return state not in ("Z", "X")
