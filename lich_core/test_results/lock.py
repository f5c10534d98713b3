"""One run_tests at a time per workspace root, across threads and processes.

The lock is an `flock(LOCK_EX | LOCK_NB)` on `run_tests.lock` in the workspace's folder of the user
state dir (lich_core.userstate), never in the repository. flock locks belong to an open file
description, so two opens in one process exclude each other as two processes do; a process-local
set of held roots is checked first all the same (cheap, and the only guard where flock is missing:
Windows, or a state dir that cannot be written, which is logged). The kernel drops the lock when
its descriptor closes, so a crashed lich never leaves a stale lock behind; the descriptor is not
inherited by the test command (close-on-exec).
"""

from __future__ import annotations

import logging
import os
import threading
from pathlib import Path

from lich_core.userstate import ensure_private_dir, workspace_state_dir

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

log = logging.getLogger("lich.tools")

LOCK_FILE_NAME = "run_tests.lock"

_held: set[str] = set()
_held_guard = threading.Lock()


def lock_path(root: str | os.PathLike[str]) -> Path:
    """The lock file for a workspace root (in the user state dir of this process's environment)."""
    return workspace_state_dir(root) / LOCK_FILE_NAME


class WorkspaceLock:
    """A held run_tests lock; `release()` (idempotent) or use it as a context manager."""

    def __init__(self, key: str, fd: int | None) -> None:
        self.key = key
        self.fd = fd
        self._released = False

    def release(self) -> None:
        if self._released:
            return
        self._released = True
        if self.fd is not None:
            try:
                os.close(self.fd)  # closing the descriptor releases the flock
            except OSError:
                pass
            self.fd = None
        with _held_guard:
            _held.discard(self.key)

    def __enter__(self) -> WorkspaceLock:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def _open_lock_file(path: Path) -> int:
    ensure_private_dir(path.parent)
    flags = os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOFOLLOW", 0)
    return os.open(path, flags, 0o600)


def try_lock_workspace(root: str | os.PathLike[str]) -> WorkspaceLock | None:
    """The root's lock, or None when another run_tests (thread or process) holds it."""
    key = os.path.realpath(root)
    with _held_guard:
        if key in _held:
            return None
        _held.add(key)
    fd: int | None = None
    try:
        if fcntl is not None:
            path = lock_path(key)
            try:
                fd = _open_lock_file(path)
            except OSError as err:
                log.warning(
                    "run_tests: cannot open the lock file %s (%s); locking in this process only",
                    path,
                    err,
                )
            if fd is not None:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    os.close(fd)
                    fd = None
                    with _held_guard:
                        _held.discard(key)
                    return None
                except OSError as err:  # a file system without flock
                    log.warning(
                        "run_tests: cannot lock %s (%s); locking in this process only", path, err
                    )
                    os.close(fd)
                    fd = None
                else:
                    _note_holder(fd)
    except BaseException:
        if fd is not None:
            os.close(fd)
        with _held_guard:
            _held.discard(key)
        raise
    return WorkspaceLock(key, fd)


def _note_holder(fd: int) -> None:
    """Write the holder's pid into the lock file, for a human wondering who holds it."""
    try:
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    except OSError:
        pass
