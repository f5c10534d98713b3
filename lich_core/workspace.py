"""The Workspace seam: the one place tools read and change file text.

`DiskWorkspace` reads and writes the file system (CLI, tests). The language server provides an
`EditorWorkspace` that reads open buffers and turns changes into `workspace/applyEdit`. Either
way a change set is all-or-nothing: every file is checked against the text the tool computed its
change from, and if any check or write fails, nothing is left changed.
"""

from __future__ import annotations

import asyncio
import os
import stat
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol, runtime_checkable

from lich_core.confined import ParentDir, open_parent, read_bytes_within
from lich_core.errors import EditRejected
from lich_core.hashline.byte_lines import ByteLines, byte_lines
from lich_core.hashline.replacements import line_replacements, splice_replacements
from lich_core.test_results.report import TestReport
from lich_core.vocabulary import CancelToken
from lich_core.vocabulary import LineReplacement as LineReplacement  # re-export (lives there)

TEXT_ENCODING = "utf-8"
# Undecodable bytes survive a read/write round trip instead of failing the read.
TEXT_ERRORS = "surrogateescape"


class FileChange:
    """One file's change in a change set (immutable).

    - `path`, `kind` ("write" or "delete").
    - `new_text`: the new full text for a write; None for a delete.
    - `base_text`: the text this change was computed from; None means the file did not exist. A
      workspace refuses the whole change set when a file no longer matches its base (someone
      edited it).
    - `replacements`: minimal line-range edits from base_text (None reads as "") to new_text,
      always given: the editor layer sends exactly these as TextEdits and never diffs. A new file
      or a full rewrite carries the one replacement covering the whole text; a delete carries
      none (the DeleteFile says it all). Producers that do not know them get them from
      lich_core.hashline.replacements.line_replacements (or use `FileChange.write`).

    A write made with `FileChange.deferred` builds its new text only when `new_text` is first
    read: a disk write does not need it (it splices the replacements into the base bytes).
    """

    __slots__ = ("path", "kind", "base_text", "replacements", "_new_text", "_build_text")

    path: Path
    kind: Literal["write", "delete"]
    base_text: str | None
    replacements: tuple[LineReplacement, ...]
    _new_text: str | None
    _build_text: Callable[[], str] | None

    def __init__(
        self,
        path: Path,
        kind: Literal["write", "delete"],
        new_text: str | None,
        base_text: str | None,
        replacements: tuple[LineReplacement, ...],
    ) -> None:
        if kind == "delete" and (new_text is not None or replacements):
            raise ValueError(f"a delete of {path} carries no new text and no replacements")
        for name, value in (
            ("path", path),
            ("kind", kind),
            ("base_text", base_text),
            ("replacements", replacements),
        ):
            object.__setattr__(self, name, value)
        object.__setattr__(self, "_new_text", new_text)
        object.__setattr__(self, "_build_text", None)

    @classmethod
    def write(cls, path: Path, new_text: str, base_text: str | None) -> FileChange:
        """A write whose replacements are computed from the two texts."""
        return cls(path, "write", new_text, base_text, line_replacements(base_text or "", new_text))

    @classmethod
    def delete(cls, path: Path, base_text: str | None) -> FileChange:
        return cls(path, "delete", None, base_text, ())

    @classmethod
    def deferred(
        cls,
        path: Path,
        build_text: Callable[[], str],
        base_text: str | None,
        replacements: tuple[LineReplacement, ...],
    ) -> FileChange:
        """A write whose new text `build_text()` makes on first use; `replacements` must turn
        base_text into exactly that text (they are what a disk write applies)."""
        change = cls(path, "write", None, base_text, replacements)
        object.__setattr__(change, "_build_text", build_text)
        return change

    @property
    def new_text(self) -> str | None:
        build = self._build_text
        if build is not None:
            object.__setattr__(self, "_new_text", build())
            object.__setattr__(self, "_build_text", None)
        return self._new_text

    @property
    def text_is_built(self) -> bool:
        """Whether new_text is at hand (False only for a deferred write not read yet)."""
        return self._build_text is None

    def _fields(self) -> tuple[object, ...]:
        return (self.path, self.kind, self.new_text, self.base_text, self.replacements)

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self._fields() == other._fields()  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash(self._fields())

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"FileChange is immutable (cannot set {name})")

    def __repr__(self) -> str:
        text = repr(self._new_text) if self.text_is_built else "<deferred>"
        return (
            f"FileChange(path={self.path!r}, kind={self.kind!r}, new_text={text}, "
            f"base_text={self.base_text!r}, replacements={self.replacements!r})"
        )


@runtime_checkable
class Workspace(Protocol):
    root: Path

    def read_text(self, path: Path) -> str:
        """Current text of a file (an open buffer's unsaved text in the editor)."""
        ...

    def read_bytes(self, path: Path) -> bytes: ...

    def exists(self, path: Path) -> bool: ...

    def overlay_paths(self) -> Iterable[Path]:
        """Files whose current text may differ from disk (open editor buffers)."""
        ...

    async def apply(self, changes: Sequence[FileChange], label: str) -> None:
        """Apply all changes or none; raise EditRejected with the reason on refusal."""
        ...

    # --- what only some workspaces can do ---
    # Declared here, not looked up by name, so a workspace that renames one of these is no longer
    # a Workspace to the type checker (tests/core/test_workspace_seam_types.py). A workspace that
    # cannot do the thing says so with DiskWorkspace's answer: None, False, no notes, nothing done.

    # Runs the terminal tool's commands somewhere else (the ACP client's terminals); None: the
    # tool runs them itself.
    command_host: CommandHost | None
    # The user asked for this very tool call (the editor's lich.runTests): an "ask" approval
    # counts as answered.
    user_invoked: bool

    def lines_behind(self, path: Path, text: str) -> ByteLines | None:
        """`text`'s lines taken from the bytes it was decoded from, if it is the very text this
        workspace read at `path` (DiskWorkspace: apply_patch then reads a big file's lines from
        its bytes and splices its write); None: split the text as usual."""
        ...

    def drain_user_notes(self) -> list[str]:
        """What the user did in the editor since the model last looked (rejected a proposed change,
        edited lines the agent had changed, an edit the editor did not apply), taken once."""
        ...

    async def sync_to_disk(self) -> str | None:
        """Write unsaved buffers to disk before a program reads the files (run_tests); the problem
        in a few words if that failed, else None."""
        ...

    async def report_test_results(self, report: TestReport) -> None:
        """Take a test run's results (the editor shows its failures as diagnostics)."""
        ...


# --- listing: the files under a folder as a workspace sees them ---


def unsaved_files(workspace: Workspace, root: str | os.PathLike[str]) -> dict[str, Path]:
    """The workspace's files under `root` whose text may differ from disk (its `overlay_paths`:
    open editor buffers, a review's pending changes), by their "/"-separated path relative to
    `root`: {rel: normalised absolute path}. `WorkspaceListing` builds on it.
    """
    base = os.path.normpath(os.path.abspath(root))
    found: dict[str, Path] = {}
    for path in workspace.overlay_paths():
        absolute = os.path.normpath(os.path.abspath(path))
        rel = os.path.relpath(absolute, base)
        if (
            rel in (os.curdir, os.pardir)
            or rel.startswith(os.pardir + os.sep)
            or os.path.isabs(rel)
        ):
            continue
        found[rel.replace(os.sep, "/")] = Path(absolute)
    return found


def unsaved_set(workspace: Workspace) -> set[Path]:
    """The files whose workspace text may differ from disk, as normalised absolute paths."""
    return {Path(os.path.normpath(os.path.abspath(path))) for path in workspace.overlay_paths()}


@dataclass(frozen=True, slots=True)
class UnsavedFile:
    """A file under a listing's root whose text is the workspace's, not the disk's."""

    rel: str  # "/"-separated, relative to the listing's root
    path: Path  # normalised absolute
    # Something is at `path` on disk: the buffer shadows it (a disk walk meets it, and must take
    # its text from the workspace); False: a new file only the workspace has.
    on_disk: bool


class WorkspaceListing:
    """The files under `root` as `workspace` sees them: the disk, with its unsaved buffers merged in.

    The file tools keep their own disk walks (rg for grep, find_files' pruned glob walk, list_dir's
    breadth-first scan), fast where they must be; this is the one place that says which buffers
    count under `root`, which of them shadow a disk file and which are new files the disk does
    not have, and what their text is:

    - `unsaved`: every buffer in scope, by relative path (a disk search leaves these out and
      searches `texts()` instead);
    - `new_files(under)`: the buffers with nothing on disk, which a disk walk cannot find;
    - `new_children()`: the names a directory gains from them (their folders too), for a listing;
    - `texts()`: the text of each buffer in scope.

    `skip_dirs` leaves out buffers inside a folder of that name (a walk skips those folders);
    `accept(rel)` narrows further (a glob).
    """

    def __init__(
        self,
        workspace: Workspace | None,
        root: str | os.PathLike[str],
        *,
        skip_dirs: Collection[str] = (),
        accept: Callable[[str], bool] | None = None,
    ) -> None:
        self.workspace = workspace
        self.root = Path(os.path.normpath(os.path.abspath(root)))
        self.unsaved: dict[str, UnsavedFile] = {}
        if workspace is None:
            return
        for rel, path in unsaved_files(workspace, self.root).items():
            if skip_dirs and any(part in skip_dirs for part in rel.split("/")[:-1]):
                continue
            if accept is not None and not accept(rel):
                continue
            self.unsaved[rel] = UnsavedFile(rel, path, os.path.lexists(path))

    def __bool__(self) -> bool:
        return bool(self.unsaved)

    def new_files(self, under: str = "") -> dict[str, Path]:
        """{rel: path} of the buffers under the "/"-ended relative folder `under` ("" the root)
        that have nothing on disk."""
        return {
            rel: entry.path
            for rel, entry in self.unsaved.items()
            if not entry.on_disk and rel.startswith(under)
        }

    def new_children(self) -> dict[str, dict[str, bool]]:
        """{folder's "/"-ended relative path ("" the root): {name: is_dir}} of what the new files
        add to each folder: the file itself and every folder on its way, so `a/b/new.py` shows
        under `a/` as `b/`. A name may also be on disk (the folder `a/`): the caller's scan wins."""
        children: dict[str, dict[str, bool]] = {}
        for rel in self.new_files():
            parts = rel.split("/")
            prefix = ""
            for index, part in enumerate(parts):
                children.setdefault(prefix, {})[part] = index < len(parts) - 1
                prefix += part + "/"
        return children

    def texts(self) -> dict[str, str | None]:
        """{rel: the workspace's text} of every buffer in scope; None when it cannot be read."""
        assert self.workspace is not None or not self.unsaved
        texts: dict[str, str | None] = {}
        for rel, entry in self.unsaved.items():
            try:
                texts[rel] = self.workspace.read_text(entry.path)  # type: ignore[union-attr]
            except (OSError, UnicodeError):
                texts[rel] = None
        return texts


# --- the command seam ---
# A workspace's `command_host`, when not None, runs the terminal tool's commands somewhere else
# (the ACP face's, when the client offers `terminal/*`); None means the tool runs them itself.


@dataclass(frozen=True)
class CommandRequest:
    """One terminal command for a CommandHost: run `shell -lc command` in `cwd`."""

    shell: str
    command: str
    cwd: Path
    # Variables to set, and variables to remove from the host's own environment (provider keys:
    # the names the tool's own scrubbing removes).
    env: Mapping[str, str]
    unset_env: tuple[str, ...]
    timeout_ms: int
    # How much output to keep (the host's unit may be bytes; it keeps at most about this much).
    output_limit: int


@dataclass(frozen=True)
class CommandOutcome:
    output: str
    # How it ended: exited (exit_code or signal set), timeout or cancelled (the host killed it).
    ended: Literal["exited", "timeout", "cancelled"]
    exit_code: int | None = None
    signal: str | None = None
    # The host dropped output past the limit (from the start of the output, as ACP clients do).
    truncated: bool = False
    # The host's name for the command's terminal (an ACP terminalId), for the details.
    terminal_id: str | None = None


@runtime_checkable
class CommandHost(Protocol):
    async def run_command(self, request: CommandRequest, cancel: CancelToken) -> CommandOutcome:
        """Run the command to its end, its timeout or `cancel`, killing it in the last two cases."""
        ...


def command_host(workspace: Workspace | None) -> CommandHost | None:
    """The workspace's CommandHost, if it has one."""
    return workspace.command_host if workspace is not None else None


def read_disk_text(path: Path, root: Path | None = None) -> str:
    """A file's text; with `root`, opened race-free and refused unless it is a regular file inside it."""
    if root is None:
        with open(path, encoding=TEXT_ENCODING, errors=TEXT_ERRORS, newline="") as handle:
            return handle.read()
    return decode_text(read_bytes_within(root, path))


def encode_text(text: str) -> bytes:
    return text.encode(TEXT_ENCODING, errors=TEXT_ERRORS)


def decode_text(data: bytes) -> str:
    return data.decode(TEXT_ENCODING, errors=TEXT_ERRORS)


# Texts whose bytes a DiskTextMemo keeps, and the largest it keeps (more is read once anyway).
MEMO_KEPT_FILES = 4
MEMO_MAX_FILE_BYTES = 4 * 1024 * 1024


class DiskTextMemo:
    """The bytes behind the last few texts read from disk.

    Before a write replaces a file, the file must still hold the change's base text. With the
    bytes that text was decoded from at hand, the check compares bytes; otherwise it encodes the
    text again (for 2 MiB of non-ASCII source, ~2 ms). The same bytes let apply_patch take a big
    file's lines from them (`lines_behind`, made once per read) and a deferred write splice its new bytes
    (bench_hashline). A memo entry is used only for the very str it was read as (`is`): equal
    bytes are then guaranteed, and the memo's reference keeps that str alive.
    """

    def __init__(self) -> None:
        # path -> [text, its bytes, their ByteLines once asked for]
        self._entries: dict[Path, list[Any]] = {}

    def read(self, path: Path, root: Path) -> str:
        """read_disk_text(path, root), keeping the bytes behind it."""
        data = read_bytes_within(root, path)
        text = decode_text(data)
        self._entries.pop(path, None)  # re-inserted last: the dict's order is the reads' order
        if len(data) <= MEMO_MAX_FILE_BYTES:
            self._entries[path] = [text, data, None]
            while len(self._entries) > MEMO_KEPT_FILES:
                del self._entries[next(iter(self._entries))]
        return text

    def bytes_of(self, path: Path, text: str | None) -> bytes | None:
        """The bytes `text` was read from at `path`, if this memo read that very text."""
        entry = self._entries.get(path)
        return entry[1] if entry is not None and entry[0] is text else None

    def lines_of(self, path: Path, text: str | None) -> ByteLines | None:
        """split_lines(text) read from the bytes behind it (made once per read), if this memo
        read that very text (and numpy is there)."""
        entry = self._entries.get(path)
        if entry is None or entry[0] is not text:
            return None
        if entry[2] is None:
            entry[2] = byte_lines(entry[1], decode_text)
        return entry[2]


def current_umask() -> int:
    """The process umask, read without changing it where the OS allows.

    os.umask can only be read by setting it; in the window between the two calls, a file created
    by another thread (find_files and grep run in threads) would get mode 0o666.
    """
    try:
        with open("/proc/self/status", encoding="ascii") as handle:
            for line in handle:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    umask = os.umask(0o022)
    os.umask(umask)
    return umask


class DiskWorkspace:
    """Reads and writes the file system directly, atomically per file and per change set."""

    # No other place runs commands, no user at hand, no buffers, no notes (see Workspace).
    command_host: CommandHost | None = None
    user_invoked: bool = False

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root).resolve()
        self._lock = asyncio.Lock()
        self._memo = DiskTextMemo()

    def read_text(self, path: Path) -> str:
        return self._memo.read(Path(path), self.root)

    def read_bytes(self, path: Path) -> bytes:
        return read_bytes_within(self.root, Path(path))

    def lines_behind(self, path: Path, text: str) -> ByteLines | None:
        return self._memo.lines_of(Path(path), text)

    def exists(self, path: Path) -> bool:
        return Path(path).exists()

    def overlay_paths(self) -> Iterable[Path]:
        return ()

    async def apply(self, changes: Sequence[FileChange], label: str) -> None:
        async with self._lock:
            apply_to_disk(changes, self.root, self._memo)

    def drain_user_notes(self) -> list[str]:
        return []

    async def sync_to_disk(self) -> str | None:
        return None  # the files are the text

    async def report_test_results(self, report: TestReport) -> None:
        return None


def _open_parent_or_none(root: Path, path: Path) -> ParentDir | None:
    try:
        return open_parent(root, path, create=False)
    except (FileNotFoundError, NotADirectoryError):
        return None  # a missing directory, or a file in its place: the target cannot exist


def apply_to_disk(
    changes: Sequence[FileChange], root: Path, memo: DiskTextMemo | None = None
) -> None:
    """All-or-nothing write of a change set under `root`: validate all, stage all, then swap all in.

    Every file is reached through directory descriptors without following symlinks
    (lich_core.confined), so a directory swapped for a symlink cannot redirect a write. If a swap
    fails part-way, files already swapped are put back to their base text, so the change set
    never lands half-applied. Raises EditRejected (or a path_escape:/not_regular_file:/
    permission_denied: ToolError), and then nothing was written. `memo`, the one the base texts
    were read through, spares encoding them again for the staleness check.
    """
    parents: list[ParentDir] = []
    try:
        for change in changes:
            parent = _open_parent_or_none(root, change.path)
            try:
                known = memo.bytes_of(change.path, change.base_text) if memo is not None else None
                stale = _changed_since(parent, change.base_text, known)
            except OSError as err:  # a directory in the way, no permission: refuse, never raise raw
                raise EditRejected(f"unreadable: {change.path}: {err.strerror or err}") from err
            finally:
                if parent is not None:
                    parent.close()
            if stale:
                raise EditRejected(
                    f"stale_file: {change.path} changed since it was read; read it again"
                )
        staged = _stage(changes, root, parents, memo)
        _swap(staged)
    finally:
        for parent in parents:
            parent.close()


def _changed_since(
    parent: ParentDir | None, base_text: str | None, base_bytes: bytes | None = None
) -> bool:
    """Whether the target no longer holds `base_text` (None: no file); `base_bytes`, when known,
    are the bytes it was decoded from.

    Compared as bytes, never decoded: the file's bytes decode to `base_text` exactly when they
    are its encoding (surrogateescape round-trips), and decoding 2 MiB costs several times more
    than comparing them (bench: apply_patch on 2 MiB).
    """
    if parent is None:
        return base_text is not None
    if base_text is None:
        return parent.read_bytes() is not None
    if base_bytes is not None:
        return parent.holds(base_bytes) is not True
    try:
        expected = encode_text(base_text)
    except UnicodeEncodeError:  # a lone surrogate: no file's bytes decode to this text
        parent.read_bytes()  # what a read refuses (a symlink, no permission) is still refused
        return True
    return parent.holds(expected) is not True


def new_content(change: FileChange, memo: DiskTextMemo | None) -> bytes | list[bytes | memoryview]:
    """The bytes a write puts on disk, whole or in pieces.

    A deferred write (FileChange.deferred) whose base text `memo` read is spliced: its new text
    is never built, only its replacements are encoded, and the pieces are written as they are.
    """
    if memo is not None and not change.text_is_built:
        base_lines = memo.lines_of(change.path, change.base_text)
        pieces = (
            splice_replacements(base_lines, change.replacements, encode_text)
            if base_lines
            else None
        )
        if pieces is not None:
            return pieces
    assert change.new_text is not None
    return encode_text(change.new_text)


def _stage(
    changes: Sequence[FileChange], root: Path, parents: list[ParentDir], memo: DiskTextMemo | None
) -> list[tuple[FileChange, ParentDir, str | None]]:
    staged: list[tuple[FileChange, ParentDir, str | None]] = []
    try:
        for change in changes:
            parent = open_parent(root, change.path, create=change.kind == "write")
            parents.append(parent)
            if change.kind == "write":
                info = parent.check_target()
                mode = stat.S_IMODE(info.st_mode) if info is not None else 0o666 & ~current_umask()
                staged.append((change, parent, parent.write_temp(new_content(change, memo), mode)))
            else:
                staged.append((change, parent, None))
    except OSError as err:
        for _, parent, temp in staged:
            if temp is not None:
                parent.remove_quietly(temp)
        raise EditRejected(f"write_failed: {err}") from err
    except BaseException:
        for _, parent, temp in staged:
            if temp is not None:
                parent.remove_quietly(temp)
        raise
    return staged


def _swap(staged: list[tuple[FileChange, ParentDir, str | None]]) -> None:
    done: list[tuple[FileChange, ParentDir]] = []
    try:
        for change, parent, temp in staged:
            if temp is not None:
                parent.replace_with(temp)
            else:
                parent.unlink_target()
            done.append((change, parent))
    except OSError as err:
        for _, parent, temp in staged:
            if temp is not None:
                parent.remove_quietly(temp)
        for change, parent in reversed(done):
            _restore(change, parent)
        raise EditRejected(f"write_failed: {err}") from err


def _restore(change: FileChange, parent: ParentDir) -> None:
    if change.base_text is None:
        parent.remove_quietly(parent.name)
    else:
        info = parent.lstat()
        mode = stat.S_IMODE(info.st_mode) if info is not None else 0o666 & ~current_umask()
        parent.replace_with(parent.write_temp(encode_text(change.base_text), mode))


# --- the bytes seam ---


def lines_behind(workspace: Workspace | None, path: Path, text: str | None) -> ByteLines | None:
    """What the workspace's `lines_behind` says (None without a workspace or a text)."""
    return (
        workspace.lines_behind(path, text) if workspace is not None and text is not None else None
    )


# --- the notes seam ---
# The agent loop sends a workspace's notes (drain_user_notes) as one user message before its next
# model call, so the model does not undo the user's decisions.

USER_NOTES_HEADER = "[lich] Since your last step, in the editor:"


def user_notes_message(workspace: Workspace) -> str | None:
    """The workspace's pending notes as one user message (draining them), or None."""
    try:
        notes = [str(note).strip() for note in workspace.drain_user_notes() or ()]
    except Exception:  # noqa: BLE001 - notes are advice: a broken source must not end the run
        import logging

        logging.getLogger("lich.workspace").warning("drain_user_notes failed", exc_info=True)
        return None
    notes = [note for note in notes if note]
    if not notes:
        return None
    return "\n".join([USER_NOTES_HEADER, *("- " + note.replace("\n", "\n  ") for note in notes)])
