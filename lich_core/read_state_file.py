"""The CLI's read state on disk: what `lich tool read_file` has shown, kept between `lich tool`
calls so `apply_patch` works from a shell as in a session. It lives in the user state dir and is
read and written only through lich_core.userstate's guards (no links followed, bounded reads)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from lich_core.hashline.read_state import ReadState
from lich_core.userstate import read_json, write_state_bytes


def save_read_state(state: ReadState, file: str | os.PathLike[str]) -> None:
    """Atomic, never through a link, into a private dir; OSError (an UnsafeStateDir among them)
    when it cannot be saved."""
    write_state_bytes(file, json.dumps(state.to_json()).encode("utf-8"))


def load_read_state(file: str | os.PathLike[str]) -> ReadState:
    """The saved state, or an empty one when the file is missing or unusable (a link, a FIFO, too
    big, not JSON: logged once)."""
    return ReadState.from_json(read_json(Path(file)))
