"""The user state dir: what lich remembers outside any repository.

`$XDG_STATE_HOME/lich` (default `~/.local/state/lich`) holds the trust records (`trust.json`) and,
per workspace, a folder `workspaces/<name>-<hash>/` keyed by the workspace's real path: "allow
always" answers, session logs, transcripts and the CLI's read state. Nothing here is ever read from
or written into the repository, so a repository cannot plant answers or redirect these writes with
a symlink.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

STATE_DIR_NAME = "lich"
WORKSPACES_DIR_NAME = "workspaces"
WORKSPACE_KEY_HASH_CHARS = 16
PRIVATE_DIR_MODE = 0o700
_UNSAFE_NAME_CHARS = re.compile(r"[^A-Za-z0-9._-]+")


def user_state_dir(env: Mapping[str, str] | None = None) -> Path:
    env = os.environ if env is None else env
    base = env.get("XDG_STATE_HOME") or os.path.join(env.get("HOME") or os.path.expanduser("~"), ".local", "state")
    return Path(base) / STATE_DIR_NAME


def workspace_key(root: str | os.PathLike[str]) -> str:
    """`<folder name>-<sha256 of the real path>`: readable, and distinct for same-named folders."""
    real = os.path.realpath(root)
    name = _UNSAFE_NAME_CHARS.sub("_", os.path.basename(real) or "root")[:40]
    digest = hashlib.sha256(real.encode("utf-8", "surrogateescape")).hexdigest()[:WORKSPACE_KEY_HASH_CHARS]
    return f"{name}-{digest}"


def workspace_state_dir(root: str | os.PathLike[str], env: Mapping[str, str] | None = None) -> Path:
    return user_state_dir(env) / WORKSPACES_DIR_NAME / workspace_key(root)


def ensure_private_dir(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True, mode=PRIVATE_DIR_MODE)
    return path


def write_json_atomic(path: Path, data: Any) -> None:
    """Write `data` as JSON through a temp file and a rename: readers never see half a file."""
    ensure_private_dir(path.parent)
    fd, temp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(data, handle, indent=2, sort_keys=True)
            handle.write("\n")
        os.replace(temp_name, path)
    except BaseException:
        try:
            os.unlink(temp_name)
        except OSError:
            pass
        raise


def read_json(path: Path) -> Any:
    """The parsed file, or None when it is missing or unreadable (state is advisory, never fatal)."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
