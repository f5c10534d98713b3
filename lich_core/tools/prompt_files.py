"""The read guard for what lich itself reads into a prompt: `@path` mentions and project rules.

A mention or a rules file is text lich sends to the model on its own, before any tool runs, so it
passes at least what a tool's read would, and more:

- inside the root, symbolic links resolved, and not on the read tools' deny list
  (`.lich/config.json`), nor a secret file (`.env*`, keys, `.netrc`, ...): the one rule every
  prompt follows, lich_core.tools.secrets.prompt_refusal;
- not version-control metadata (`.git/`, `.hg/`, `.svn/`, case-folded): `.git/config` holds
  remote URLs with their tokens;
- each by its own name and by where a link leads (`AGENTS.md -> .lich/config.json` is refused as
  that file);
- from the disk, a regular file only, and never a wait: a stat before the open refuses a FIFO,
  device or socket (`not_regular_file:`), the open does not block (O_NONBLOCK) should the file be
  swapped for one meanwhile, and the opened file's real path is checked again, so a link changed
  after the first check gains nothing.

Errors are ToolErrors with the guard's stable prefixes (`path_escape:`, `forbidden_path:`,
`secret_file:`, `not_regular_file:`, `not_found:`, ...), naming the path relative to the root.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from lich_core.confined import file_kind, open_for_read
from lich_core.errors import ToolError
from lich_core.tools.guard import VCS_DIRS, relative_to_root, resolve_safe_path
from lich_core.tools.secrets import prompt_refusal


def prompt_file_refusal(root: str | os.PathLike[str], path: Path) -> str | None:
    """Why the file at `path` (absolute, under `root`) may not go into a prompt lich builds
    itself, or None when it may: prompt_refusal's answer, or version-control metadata by the
    path's name or by where it really leads."""
    refused = prompt_refusal(root, path)
    if refused is not None:
        return refused
    base = os.path.abspath(root)
    vcs = _vcs_dir(relative_to_root(base, path))
    real = os.path.realpath(path)
    if vcs is None and real != os.fspath(path):
        vcs = _vcs_dir(relative_to_root(os.path.realpath(base), Path(real)))
    if vcs is not None:
        rel = relative_to_root(base, path)
        return (
            f"forbidden_path: {rel} ({vcs}/ is version-control metadata, never put into a prompt)"
        )
    return None


def _vcs_dir(rel: str) -> str | None:
    return next((part for part in rel.split("/") if part.casefold() in VCS_DIRS), None)


def resolve_prompt_file(root: str | os.PathLike[str], target: str) -> Path:
    """The path `target` (as written in a mention, relative to `root`) names, checked by name and
    by where it leads; the early check, before its text is taken from a buffer or the disk."""
    path = resolve_safe_path(root, target)
    refused = prompt_file_refusal(root, path)
    if refused is not None:
        raise ToolError(refused)
    return path


def open_prompt_file(root: str | os.PathLike[str], path: Path) -> int:
    """A descriptor of the regular file `path` (from resolve_prompt_file) to read into a prompt;
    see the module docstring for what is refused."""
    base = Path(os.path.abspath(root))
    rel = relative_to_root(base, path)
    try:
        info = os.stat(path)
    except OSError as err:
        raise _open_error(err, rel) from None
    if stat.S_ISDIR(info.st_mode):
        raise ToolError(f"is_directory: {rel} is a directory")
    if not stat.S_ISREG(info.st_mode):
        raise ToolError(
            f"not_regular_file: {rel} is a {file_kind(info.st_mode)}, not a regular file"
        )
    real_base = os.path.realpath(base)

    def check_real(real: str) -> None:
        refused = prompt_file_refusal(real_base, Path(real))
        if refused is not None:
            raise ToolError(refused)

    try:
        return open_for_read(base, path, check_real=check_real)
    except OSError as err:
        raise _open_error(err, rel) from None


def _open_error(err: OSError, rel: str) -> ToolError:
    if isinstance(err, (FileNotFoundError, NotADirectoryError)):
        return ToolError(f"not_found: {rel}")
    if isinstance(err, IsADirectoryError):
        return ToolError(f"is_directory: {rel} is a directory")
    if isinstance(err, PermissionError):
        return ToolError(f"permission_denied: {rel} cannot be read")
    return ToolError(f"unreadable: {rel} could not be opened ({err.strerror or err})")
