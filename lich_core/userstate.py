"""The user state dir: what lich remembers outside any repository.

`$XDG_STATE_HOME/lich` (default `~/.local/state/lich`) holds the trust records (`trust.json`) and,
per workspace, a folder `workspaces/<name>-<hash>/` keyed by the workspace's real path: "allow
always" answers, session logs, transcripts, the undo journal and the CLI's read state. Nothing
here is ever read from or written into the repository, so a repository cannot plant answers or
redirect these writes with a symlink.

Nor can anything planted in the state dir itself. Every reader and writer goes through the
helpers here, which:

- walk from the state root down with `O_DIRECTORY|O_NOFOLLOW` relative to the parent's fd, so no
  symbolic link below the root is followed (a link `workspaces/<key>/sessions` -> elsewhere would
  otherwise receive the session log), and create what is missing with mode 0700;
- refuse a directory not owned by the user or writable by group or others, as ssh does for
  `~/.ssh` (group-writable passes when the group has no member but the user; UnsafeStateDir, an OSError: callers already treat a state write that fails as "not
  persisted", never as fatal);
- open a file with `O_NOFOLLOW|O_NONBLOCK` (a FIFO cannot hang the open) and read it only when
  fstat says it is a regular file of at most MAX_STATE_FILE_BYTES, and parse JSON so that deep
  nesting is a skipped file, not a RecursionError out of every later request;
- write through a temp file and a rename inside the directory's fd.

The root itself (`$XDG_STATE_HOME/lich`) may be a link the user made; it is checked like the rest
once opened. Paths outside the root (a `session_dir` the user configured, a test's own directory)
are the user's choice: their directories are created and followed as given, and only the file
itself is opened without following a link.
"""

from __future__ import annotations

import errno
import functools
import hashlib
import json
import logging
import os
import re
import secrets
import stat
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import IO, Any

log = logging.getLogger("lich.state")

STATE_DIR_NAME = "lich"
WORKSPACES_DIR_NAME = "workspaces"
WORKSPACE_KEY_HASH_CHARS = 16
PRIVATE_DIR_MODE = 0o700
PRIVATE_FILE_MODE = 0o600
# A state file bigger than this is skipped unread: the largest real one (an undo journal entry of
# a task that rewrote big files) stays far below; /dev/zero or a planted giant does not.
MAX_STATE_FILE_BYTES = 16 * 1024 * 1024
_READ_CHUNK_BYTES = 1024 * 1024
_UNSAFE_NAME_CHARS = re.compile(r"[^A-Za-z0-9._-]+")
_GROUP_OTHER_WRITE = stat.S_IWGRP | stat.S_IWOTH
_O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_O_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_O_NONBLOCK = getattr(os, "O_NONBLOCK", 0)


class UnsafeStateDir(OSError):
    """A state directory lich will not use; the message names the path and the fix."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        # Callers print err.strerror for an OSError; the whole message is the useful part.
        self.strerror = message

    def __str__(self) -> str:
        return str(self.strerror)


class StateFileError(Exception):
    """A state file that is skipped: missing, unsafe, too big or not JSON (`missing` for the first)."""

    def __init__(
        self, path: Path, reason: str, *, missing: bool = False, refused: bool = False
    ) -> None:
        super().__init__(f"state_file_skipped: {path}: {reason}")
        self.path = path
        self.reason = reason
        self.missing = missing
        self.refused = refused  # its directory was refused (the reason is UnsafeStateDir's message)


def user_state_dir(env: Mapping[str, str] | None = None) -> Path:
    env = os.environ if env is None else env
    base = env.get("XDG_STATE_HOME") or os.path.join(
        env.get("HOME") or os.path.expanduser("~"), ".local", "state"
    )
    return Path(base) / STATE_DIR_NAME


def workspace_key(root: str | os.PathLike[str]) -> str:
    """`<folder name>-<sha256 of the real path>`: readable, and distinct for same-named folders."""
    real = os.path.realpath(root)
    name = _UNSAFE_NAME_CHARS.sub("_", os.path.basename(real) or "root")[:40]
    digest = hashlib.sha256(real.encode("utf-8", "surrogateescape")).hexdigest()[
        :WORKSPACE_KEY_HASH_CHARS
    ]
    return f"{name}-{digest}"


def workspace_state_dir(root: str | os.PathLike[str], env: Mapping[str, str] | None = None) -> Path:
    return user_state_dir(env) / WORKSPACES_DIR_NAME / workspace_key(root)


# --- warnings, once each ---

_warned: set[str] = set()
_warned_lock = threading.Lock()


def warn_once(message: str) -> None:
    """Log `message` as a warning the first time only (a bad file is read on every request)."""
    with _warned_lock:
        if message in _warned:
            return
        _warned.add(message)
    log.warning("lich: %s", message)


# --- directories ---


@functools.lru_cache(maxsize=8)
def _group_is_only(gid: int, uid: int) -> bool:
    """Whether `uid` is the one member of group `gid` (a user private group, as `umask 002`
    systems give every user): then group-writable is writable by nobody else. Debian's ssh takes
    the same exception for ~/.ssh."""
    try:
        import grp
        import pwd

        group = grp.getgrgid(gid)
        me = pwd.getpwuid(uid)
        primary = [entry.pw_uid for entry in pwd.getpwall() if entry.pw_gid == gid]
    except (ImportError, KeyError, OSError):
        return False
    if any(member != me.pw_name for member in group.gr_mem) or any(
        other != uid for other in primary
    ):
        return False
    return bool(group.gr_mem) or bool(primary)


def _check_dir(fd: int, path: Path) -> None:
    info = os.fstat(fd)
    uid = os.getuid()
    if info.st_uid != uid:
        raise UnsafeStateDir(
            f"state_dir_refused: {path} is owned by uid {info.st_uid}, not by you (uid {uid}); "
            f"remove it, lich makes a new one"
        )
    writable = info.st_mode & _GROUP_OTHER_WRITE
    if writable == stat.S_IWGRP and _group_is_only(info.st_gid, uid):
        writable = 0
    if writable:
        raise UnsafeStateDir(
            f"state_dir_refused: {path} is writable by group or others (mode {stat.S_IMODE(info.st_mode):03o}); "
            f"run `chmod 700 {path}`"
        )


def _open_child_dir(parent_fd: int, name: str, path: Path, create: bool) -> int:
    if create:
        try:
            os.mkdir(name, PRIVATE_DIR_MODE, dir_fd=parent_fd)
        except FileExistsError:
            pass
    try:
        fd = os.open(name, os.O_RDONLY | _O_DIRECTORY | _O_NOFOLLOW | _O_CLOEXEC, dir_fd=parent_fd)
    except OSError as err:
        if err.errno in (errno.ELOOP, errno.ENOTDIR):
            try:
                is_link = stat.S_ISLNK(
                    os.stat(name, dir_fd=parent_fd, follow_symlinks=False).st_mode
                )
            except OSError:
                is_link = False
            what = "a symbolic link" if is_link else "not a directory"
            raise UnsafeStateDir(
                f"state_dir_refused: {path} is {what}; lich keeps its state only in real directories "
                f"it owns: remove it (`rm {path}`), lich makes a new one"
            ) from None
        raise
    try:
        _check_dir(fd, path)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _relative_to_root(path: Path) -> tuple[Path, tuple[str, ...]] | None:
    root = user_state_dir()
    try:
        rel = path.relative_to(root)
    except ValueError:
        return None
    if ".." in rel.parts:
        return None
    return root, rel.parts


def open_state_dir(path: str | os.PathLike[str], *, create: bool = True) -> int:
    """An fd (O_DIRECTORY) on `path`, created with mode 0700 when missing and `create`.

    Under the state root no component is followed if it is a link, and every one must be the
    user's and not writable by group or others (UnsafeStateDir otherwise). FileNotFoundError when
    it is missing and not `create`. The caller closes the fd.
    """
    path = Path(path)
    split = _relative_to_root(path)
    if split is None:
        # Not the state dir: a place the user chose, taken as given.
        if create:
            os.makedirs(path, mode=PRIVATE_DIR_MODE, exist_ok=True)
        return os.open(path, os.O_RDONLY | _O_DIRECTORY | _O_CLOEXEC)
    root, parts = split
    if create:
        os.makedirs(root, mode=PRIVATE_DIR_MODE, exist_ok=True)
    fd = os.open(root, os.O_RDONLY | _O_DIRECTORY | _O_CLOEXEC)
    current = root
    try:
        _check_dir(fd, root)
        for name in parts:
            current = current / name
            child = _open_child_dir(fd, name, current, create)
            os.close(fd)
            fd = child
    except BaseException:
        os.close(fd)
        raise
    return fd


def ensure_private_dir(path: Path) -> Path:
    """`path`, made (0700) and checked as open_state_dir does; UnsafeStateDir when refused."""
    os.close(open_state_dir(path, create=True))
    return path


def list_state_dir(path: str | os.PathLike[str]) -> list[str]:
    """The names in a state directory (checked as open_state_dir); FileNotFoundError when missing."""
    fd = open_state_dir(path, create=False)
    try:
        return os.listdir(fd)
    finally:
        os.close(fd)


def unlink_state_file(path: str | os.PathLike[str]) -> None:
    path = Path(path)
    fd = open_state_dir(path.parent, create=False)
    try:
        os.unlink(path.name, dir_fd=fd)
    finally:
        os.close(fd)


# --- files ---


def open_state_file(path: str | os.PathLike[str], flags: int, *, create_dir: bool = False) -> int:
    """An fd on the regular file `path`, opened with `flags` without following a link (its
    directory checked as open_state_dir). A FIFO, device or socket is refused without blocking:
    OSError(EINVAL); a link: OSError(ELOOP). The fd is blocking again once returned."""
    path = Path(path)
    dir_fd = open_state_dir(path.parent, create=create_dir)
    try:
        fd = os.open(
            path.name,
            flags | _O_NOFOLLOW | _O_NONBLOCK | _O_CLOEXEC,
            PRIVATE_FILE_MODE,
            dir_fd=dir_fd,
        )
    finally:
        os.close(dir_fd)
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise OSError(errno.EINVAL, f"not a regular file ({_file_kind(mode)})", str(path))
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _file_kind(mode: int) -> str:
    for test, name in (
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISDIR, "a directory"),
    ):
        if test(mode):
            return name
    return f"mode {mode:o}"


def read_state_bytes(path: str | os.PathLike[str], max_bytes: int = MAX_STATE_FILE_BYTES) -> bytes:
    """The bytes of a state file; StateFileError (never anything else) when it cannot be used."""
    path = Path(path)
    try:
        fd = open_state_file(path, os.O_RDONLY)
    except FileNotFoundError:
        raise StateFileError(path, "missing", missing=True) from None
    except UnsafeStateDir as err:
        raise StateFileError(path, str(err), refused=True) from None
    except OSError as err:
        if err.errno == errno.ELOOP:
            raise StateFileError(path, "a symbolic link; remove it") from None
        raise StateFileError(path, err.strerror or str(err)) from None
    try:
        if os.fstat(fd).st_size > max_bytes:
            raise StateFileError(path, f"larger than {max_bytes} bytes")
        chunks: list[bytes] = []
        total = 0
        while True:
            # The size can grow after fstat: the bound holds on what is read.
            chunk = os.read(fd, min(_READ_CHUNK_BYTES, max_bytes + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
            if total > max_bytes:
                raise StateFileError(path, f"larger than {max_bytes} bytes")
        return b"".join(chunks)
    except OSError as err:
        raise StateFileError(path, err.strerror or str(err)) from None
    finally:
        os.close(fd)


def parse_state_json(data: bytes, path: Path) -> Any:
    """JSON from a state file's bytes; StateFileError when it is not JSON or nests too deep."""
    try:
        return json.loads(data.decode("utf-8"))
    except RecursionError:
        raise StateFileError(path, "JSON nested too deep") from None
    except ValueError as err:  # UnicodeDecodeError too
        raise StateFileError(path, f"not JSON ({err})") from None


def load_json(path: str | os.PathLike[str]) -> Any:
    """The parsed state file; StateFileError (never anything else) when it is missing or bad."""
    path = Path(path)
    return parse_state_json(read_state_bytes(path), path)


def read_json(path: Path) -> Any:
    """The parsed file, or None when it is missing or bad (state is advisory, never fatal); a bad
    one is logged once."""
    try:
        return load_json(path)
    except StateFileError as err:
        if err.refused:
            warn_once(err.reason)  # once per refused dir, not once per file in it
        elif not err.missing:
            warn_once(f"{err} (ignored)")
        return None


def write_state_bytes(path: str | os.PathLike[str], data: bytes) -> None:
    """Write `data` through a temp file and a rename in the directory's fd: readers never see
    half a file, and a link at `path` is replaced, not written through."""
    _write_atomic(Path(path), "wb", lambda handle: handle.write(data))


def write_json_atomic(path: Path, data: Any) -> None:
    """Write `data` as JSON through a temp file and a rename (as write_state_bytes)."""

    def dump(handle: IO[Any]) -> None:
        json.dump(data, handle, indent=2, sort_keys=True)
        handle.write("\n")

    _write_atomic(Path(path), "w", dump)


def _write_atomic(path: Path, mode: str, fill: Callable[[IO[Any]], object]) -> None:
    dir_fd = open_state_dir(path.parent, create=True)
    try:
        temp_name = f".{path.name}.{secrets.token_hex(6)}.tmp"
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _O_NOFOLLOW | _O_CLOEXEC
        fd = os.open(temp_name, flags, PRIVATE_FILE_MODE, dir_fd=dir_fd)
        try:
            with os.fdopen(fd, mode, encoding=None if "b" in mode else "utf-8") as handle:
                fill(handle)
            os.replace(temp_name, path.name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        except BaseException:
            try:
                os.unlink(temp_name, dir_fd=dir_fd)
            except OSError:
                pass
            raise
    finally:
        os.close(dir_fd)
