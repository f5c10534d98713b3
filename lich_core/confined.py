"""Race-free file access inside a root: what was checked is what gets opened.

Checking a path and then opening it by name leaves a window in which a directory on the way can
be swapped for a symlink to somewhere else. So:

- **Writes** walk from a descriptor of the root, one component at a time, with `O_NOFOLLOW |
  O_DIRECTORY`, and create, rename and unlink relative to the final directory's descriptor. No
  symlink is ever followed on the way to a write, not even one that stays inside the root.
- **Reads** may follow a symlink that stays inside the root. The file is opened first (with
  `O_NONBLOCK`, so a FIFO cannot hang the caller), then the real path of the *opened* descriptor
  is checked against the root and it must be a regular file; only then is it read.

Errors are ToolErrors with stable prefixes: `path_escape:`, `not_regular_file:`,
`permission_denied:`, `bad_path:`.
"""

from __future__ import annotations

import errno
import functools
import os
import secrets
import stat
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import IO

from lich_core.errors import ToolError

TEMP_SUFFIX = ".lich-tmp"
# A piece of a file's bytes (a slice of another file's bytes, or newly encoded text).
BytesPiece = bytes | bytearray | memoryview
# Linux limits; a longer path fails in the kernel with ENAMETOOLONG, reported as bad_path.
MAX_PATH_BYTES = 4096
MAX_NAME_BYTES = 255
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_CLOEXEC", 0)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_NOCTTY = getattr(os, "O_NOCTTY", 0)
FD_PATH_DIR = Path("/proc/self/fd")
# ParentDir.holds reads this much at a time.
COMPARE_CHUNK_BYTES = 256 * 1024


def check_path_text(target: str) -> None:
    """`bad_path:` for what the kernel cannot take: a NUL byte, an over-long path or name."""
    if "\x00" in target:
        raise ToolError("bad_path: the path contains a NUL byte")
    encoded = os.fsencode(target)
    if len(encoded) >= MAX_PATH_BYTES:
        raise ToolError(
            f"bad_path: the path is {len(encoded)} bytes long (the limit is {MAX_PATH_BYTES - 1})"
        )
    longest = max((len(part) for part in encoded.split(b"/")), default=0)
    if longest > MAX_NAME_BYTES:
        raise ToolError(
            f"bad_path: a name in the path is {longest} bytes long (the limit is {MAX_NAME_BYTES})"
        )


def _relative_parts(root: Path, path: Path) -> list[str]:
    rel = os.path.relpath(path, root)
    parts = [part for part in rel.split(os.sep) if part not in ("", ".")]
    if not parts or parts[0] == ".." or os.path.isabs(rel):
        raise ToolError(f"path_escape: {path} is not inside {root}")
    return parts


def _is_within(root_real: str, real: str) -> bool:
    return real == root_real or real.startswith(root_real.rstrip(os.sep) + os.sep)


def _descriptor_path(fd: int, fallback: Path) -> str:
    """The real path of an open descriptor (Linux: /proc/self/fd); elsewhere the path's realpath."""
    try:
        return os.readlink(f"{FD_PATH_DIR}/{fd}")
    except OSError:
        return os.path.realpath(fallback)


@functools.lru_cache(maxsize=64)
def _real_root(root: str) -> str:
    """The root's real path as first seen: a read must land under it.

    Kept, not looked up per read (a realpath costs a stat per component, the largest part of a
    small file's read). Should the root's own path later be swapped for a symlink, reads through
    it then resolve outside this real path and are refused, where a fresh realpath would follow.
    """
    return os.path.realpath(root)


# --- reads ---


def open_for_read(
    root: Path, path: Path, *, check_real: Callable[[str], None] | None = None
) -> int:
    """A descriptor of the regular file `path`, checked to lie inside `root` after opening.

    `check_real`, when given, is called with the real path of the opened file (it raises to
    refuse it): a check of where a link really led that no swap after it can get round."""
    check_path_text(str(path))
    fd = os.open(path, os.O_RDONLY | _NONBLOCK | _NOCTTY | getattr(os, "O_CLOEXEC", 0))
    try:
        real = _descriptor_path(fd, path)
        if not _is_within(_real_root(os.fspath(root)), real):
            raise ToolError(f"path_escape: {path} resolves to {real}, outside {root}")
        if check_real is not None:
            check_real(real)
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            raise IsADirectoryError(21, "Is a directory", str(path))
        if not stat.S_ISREG(info.st_mode):
            raise ToolError(
                f"not_regular_file: {path} is a {file_kind(info.st_mode)}, not a regular file"
            )
        if _NONBLOCK:
            os.set_blocking(fd, True)
        return fd
    except BaseException:
        os.close(fd)
        raise


def read_bytes_within(root: Path, path: Path) -> bytes:
    fd = open_for_read(root, path)
    with os.fdopen(fd, "rb") as handle:
        return handle.read()


def file_kind(mode: int) -> str:
    """What a file that is not a regular file is, for a `not_regular_file:` error."""
    if stat.S_ISFIFO(mode):
        return "FIFO"
    if stat.S_ISSOCK(mode):
        return "socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "device"
    if stat.S_ISLNK(mode):
        return "symbolic link"
    return "special file"


# --- writes ---


class ParentDir:
    """The directory that holds a write target, opened through descriptors only."""

    def __init__(self, fd: int, name: str, path: Path) -> None:
        self.fd = fd
        self.name = name
        self.path = path

    def close(self) -> None:
        os.close(self.fd)

    def lstat(self) -> os.stat_result | None:
        try:
            return os.stat(self.name, dir_fd=self.fd, follow_symlinks=False)
        except FileNotFoundError:
            return None

    def check_target(self) -> os.stat_result | None:
        """Refuse a symlink, a non-regular file or a read-only file at the target name."""
        info = self.lstat()
        if info is None:
            return None
        if stat.S_ISLNK(info.st_mode):
            raise ToolError(
                f"path_escape: {self.path} is a symbolic link; writes never follow symbolic links"
            )
        if stat.S_ISDIR(info.st_mode):
            raise IsADirectoryError(21, "Is a directory", str(self.path))
        if not stat.S_ISREG(info.st_mode):
            raise ToolError(
                f"not_regular_file: {self.path} is a {file_kind(info.st_mode)}, not a regular file"
            )
        if not os.access(self.name, os.W_OK, dir_fd=self.fd, follow_symlinks=False):
            raise ToolError(f"permission_denied: {self.path} is read-only; it was not changed")
        return info

    def _open_target(self) -> IO[bytes] | None:
        """The target opened for reading without following a symlink (None when absent)."""
        if self.check_target() is None:
            return None
        fd = os.open(self.name, os.O_RDONLY | _NOFOLLOW | _NONBLOCK | _NOCTTY, dir_fd=self.fd)
        return os.fdopen(fd, "rb", buffering=0)

    def read_bytes(self) -> bytes | None:
        """The target's current bytes (None when absent)."""
        handle = self._open_target()
        if handle is None:
            return None
        with handle:
            return handle.read()

    def holds(self, expected: bytes) -> bool | None:
        """Whether the target's bytes are exactly `expected` (None when absent).

        Read and compared a chunk at a time: a copy of the whole file (2 MiB, made and dropped
        per check) would cost more than the compare itself.
        """
        handle = self._open_target()
        if handle is None:
            return None
        with handle:
            if os.fstat(handle.fileno()).st_size != len(expected):
                return False
            offset = 0
            while chunk := handle.read(COMPARE_CHUNK_BYTES):
                if not expected.startswith(chunk, offset):
                    return False
                offset += len(chunk)
            return offset == len(expected)

    def write_temp(self, data: bytes | Sequence[BytesPiece], mode: int) -> str:
        """A new temp file beside the target holding `data` (bytes, or pieces written in order),
        with `mode`; returns its name."""
        name = f".{self.name[:200]}.{secrets.token_hex(4)}{TEMP_SUFFIX}"
        fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW, 0o600, dir_fd=self.fd)
        try:
            try:
                write_all(fd, [data] if isinstance(data, bytes) else data)
                os.fsync(fd)
                os.fchmod(fd, mode)
            finally:
                os.close(fd)
        except BaseException:
            self.remove_quietly(name)
            raise
        return name

    def replace_with(self, temp_name: str) -> None:
        os.replace(temp_name, self.name, src_dir_fd=self.fd, dst_dir_fd=self.fd)

    def unlink_target(self) -> None:
        os.unlink(self.name, dir_fd=self.fd)

    def remove_quietly(self, name: str) -> None:
        try:
            os.unlink(name, dir_fd=self.fd)
        except FileNotFoundError:
            pass


def _writev_max_buffers() -> int:
    """Buffers per writev call: the system's IOV_MAX (Linux: 1024), 16 (POSIX's least) if unknown."""
    try:
        limit = os.sysconf("SC_IOV_MAX")
    except (AttributeError, ValueError, OSError):
        return 16
    return min(1024, limit) if limit > 0 else 16


WRITEV_MAX_BUFFERS = _writev_max_buffers()


def write_all(fd: int, pieces: Sequence[BytesPiece]) -> None:
    """Write `pieces` to `fd` in order, whole: a file's bytes without first joining them.

    The pieces go out in writev calls of up to WRITEV_MAX_BUFFERS; a short write (a full disk
    raises instead) resumes where it stopped.
    """
    views = [view for view in (memoryview(piece).cast("B") for piece in pieces) if view.nbytes]
    start = 0
    while start < len(views):
        written = os.writev(fd, views[start : start + WRITEV_MAX_BUFFERS])
        while start < len(views) and written >= views[start].nbytes:
            written -= views[start].nbytes
            start += 1
        if written:
            views[start] = views[start][written:]


def open_parent(root: Path, path: Path, *, create: bool) -> ParentDir:
    """Walk from `root` to the directory of `path` without following any symlink.

    With `create`, missing directories are made on the way (each relative to its parent's
    descriptor, so a swapped-in symlink is never followed).
    """
    check_path_text(str(path))
    parts = _relative_parts(root, path)
    fd = os.open(root, _DIR_FLAGS)
    try:
        walked = Path(root)
        for part in parts[:-1]:
            walked = walked / part
            child = _enter(fd, part, walked, create=create)
            os.close(fd)
            fd = child
        return ParentDir(fd, parts[-1], path)
    except BaseException:
        os.close(fd)
        raise


def _enter(parent_fd: int, name: str, walked: Path, *, create: bool) -> int:
    """The descriptor of directory `name` in `parent_fd` (made first with `create`); the parent stays open."""
    try:
        return os.open(name, _DIR_FLAGS | _NOFOLLOW, dir_fd=parent_fd)
    except FileNotFoundError:
        if not create:
            raise
    except OSError as err:
        raise _not_a_plain_dir(err, walked) from None
    try:
        os.mkdir(name, 0o777, dir_fd=parent_fd)
    except FileExistsError:
        pass  # made meanwhile: open it below, still without following
    try:
        return os.open(name, _DIR_FLAGS | _NOFOLLOW, dir_fd=parent_fd)
    except OSError as err:
        raise _not_a_plain_dir(err, walked) from None


def _not_a_plain_dir(err: OSError, walked: Path) -> Exception:
    """ELOOP/ENOTDIR on an O_NOFOLLOW|O_DIRECTORY open: a symlink (refused) or a file in the way."""
    if err.errno == errno.ELOOP or (err.errno == errno.ENOTDIR and os.path.islink(walked)):
        return ToolError(
            f"path_escape: {walked} is a symbolic link; writes never follow symbolic links"
        )
    if err.errno == errno.ENOTDIR:
        return NotADirectoryError(err.errno, "Not a directory", str(walked))
    return err
