"""Safety helpers every builtin composes: confinement, deny list, deadlines, clamping, coercion."""

from __future__ import annotations

import asyncio
import functools
import os
import sys
from collections.abc import Awaitable, Callable, Coroutine
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

from lich_core.confined import check_path_text
from lich_core.errors import ToolCancelledError, ToolError, ToolTimeoutError
from lich_core.tools.types import ToolContext
from lich_core.vocabulary import CancelToken, ToolResult

if sys.version_info >= (3, 12):
    from asyncio import eager_task_factory
else:
    eager_task_factory = None

T = TypeVar("T")

DEFAULT_MAX_OUTPUT_CHARS = 20_000
# After a deadline or a cancellation, how long timed work may take to clean up (kill children).
CANCEL_GRACE_MS = 5_000

# Directories no walk descends into (list_dir, find_files, grep_files).
SKIP_DIRS = frozenset({"node_modules", ".git", "dist", ".lich", ".cursor", "__pycache__", ".venv"})
# Directory entries one walk may visit before it stops and says so (find_files, grep_files; kli's bound).
MAX_WALK_ENTRIES = 100_000

# .lich/ holds the agent's own config and approvals; tools may only write notes and plugins there.
LICH_DIR = ".lich"
LICH_WRITABLE_SUBDIRS = ("skills", "plugins")
PROTECTED_CONFIG = (".lich", "config.json")
# The root's MEMORY.md is append-only: only memory_append (which adds dated entries) writes it.
MEMORY_FILE = "MEMORY.md"
MEMORY_APPEND_ONLY = f"forbidden_path: {MEMORY_FILE} is append-only: use memory_append"
# Version-control metadata: `.git/config` (core.fsmonitor) and `.git/hooks/*` run programs on the
# next `git status`, so tools may read these folders but never write them.
VCS_DIRS = frozenset({".git", ".hg", ".svn"})
# The protected names above are compared case-folded on every platform: on a case-insensitive file
# system (macOS, Windows) `.GIT/config` and `.Lich/Config.json` are those very files, and a name
# Linux keeps apart (`.GIT`) costs nothing to refuse. MEMORY.md is the exception (_is_root_memory).


def _is_within(root: Path, path: Path) -> bool:
    try:
        rel = os.path.relpath(path, root)
    except ValueError:  # different drives on Windows
        return False
    return not (rel == ".." or rel.startswith(".." + os.sep) or os.path.isabs(rel))


def resolve_safe_path(
    base_dir: str | os.PathLike[str], target: str, *, for_write: bool = False
) -> Path:
    """Resolve `target` against `base_dir` and refuse anything that leaves it.

    Two checks: lexical (`..`, absolute paths elsewhere) and real-path (a symlink anywhere in the
    path that leads outside the root). A write never goes through any symlink, not even one that
    stays inside the root, so a link cannot redirect a write. This is the early, readable refusal;
    the reads and writes themselves are race-free (lich_core.confined), so swapping a directory for
    a symlink after this check gains nothing.
    """
    check_path_text(target)
    base = Path(os.path.abspath(base_dir))
    resolved = Path(os.path.normpath(os.path.join(base, os.path.expanduser(target))))
    if not _is_within(base, resolved):
        raise ToolError(f"path_escape: {target} escapes {base_dir}")
    real_base = Path(_realpath(base, target))
    real = Path(_realpath(resolved, target))
    if not _is_within(real_base, real):
        raise ToolError(
            f"path_escape: {target} resolves through a symbolic link to {real}, outside {base_dir}"
        )
    if for_write:
        link = _first_symlink(base, resolved)
        if link is not None:
            what = (
                "is a symbolic link"
                if link == resolved
                else f"goes through the symbolic link {relative_to_root(base, link)}"
            )
            raise ToolError(
                f"path_escape: {target} {what}; writes never follow symbolic links, write to the real path instead"
            )
    return resolved


REALPATH_ATTEMPTS = 3


def _realpath(path: str | os.PathLike[str], target: str) -> str:
    """os.path.realpath, which raises when a link on the way changes under it; tried again then."""
    for _ in range(REALPATH_ATTEMPTS - 1):
        try:
            return os.path.realpath(path)
        except OSError:
            continue
    try:
        return os.path.realpath(path)
    except OSError as err:
        raise ToolError(
            f"not_found: {target} kept changing while it was checked ({err.strerror}); try again"
        ) from None


def _first_symlink(base: Path, path: Path) -> Path | None:
    """The first symlink on the way from `base` (exclusive) to `path` (inclusive), if any."""
    current = base
    for part in path.relative_to(base).parts:
        current = current / part
        if current.is_symlink():
            return current
        if not current.exists():
            return None
    return None


def relative_to_root(base_dir: str | os.PathLike[str], path: Path) -> str:
    rel = os.path.relpath(path, os.path.abspath(base_dir))
    return "." if rel == "." else rel.replace(os.sep, "/")


def read_denied(rel: str) -> str | None:
    """The deny list for reading a root-relative path ("a/b", as relative_to_root spells it):
    the `forbidden_path:` error, or None when the file may be read."""
    if tuple(rel.casefold().split("/", 2)[:2]) == PROTECTED_CONFIG:
        return f"forbidden_path: {rel} (the agent's config is not accessible to tools)"
    return None


def check_file_access(base_dir: str | os.PathLike[str], path: Path, *, write: bool) -> None:
    """The deny list: raise `forbidden_path:` for files tools must not touch."""
    rel = relative_to_root(base_dir, path)
    denied = read_denied(rel)
    if denied is not None:
        raise ToolError(denied)
    if not write:
        return
    parts = tuple(rel.split("/"))
    if len(parts) == 1 and _is_root_memory(base_dir, path, parts[0]):
        raise ToolError(MEMORY_APPEND_ONLY)
    folded = tuple(part.casefold() for part in parts)
    if folded[-1].startswith(".env"):
        raise ToolError(f"forbidden_path: {rel} (.env files are never written by tools)")
    vcs = next((part for part, name in zip(parts, folded, strict=True) if name in VCS_DIRS), None)
    if vcs is not None:
        raise ToolError(
            f"forbidden_path: {rel} ({vcs}/ is never written by tools: its config and hooks run programs; "
            "use git commands in the terminal instead)"
        )
    if folded[0] == LICH_DIR and (len(folded) < 3 or folded[1] not in LICH_WRITABLE_SUBDIRS):
        raise ToolError(
            f"forbidden_path: {rel} (only .lich/skills/ and .lich/plugins/ are writable)"
        )


def _is_root_memory(base_dir: str | os.PathLike[str], path: Path, name: str) -> bool:
    """`name` (a file right under the root) is the root's MEMORY.md.

    The name is compared case-sensitively; another spelling (`memory.md`) counts only when it is
    the same file, as on a case-insensitive file system.
    """
    if name == MEMORY_FILE:
        return True
    if name.lower() != MEMORY_FILE.lower():
        return False
    try:
        return os.path.samefile(path, os.path.join(base_dir, MEMORY_FILE))
    except OSError:  # either one missing: not the same file
        return False


def resolve_file_for(ctx: ToolContext, target: str, *, write: bool) -> Path:
    """resolve_safe_path plus the deny list: the one call file tools make."""
    return resolve_file_in(ctx.work_dir, target, write=write)


def resolve_file_in(work_dir: str | os.PathLike[str], target: str, *, write: bool) -> Path:
    """resolve_file_for with the root given alone (what may reach a model's prompt is decided
    with it: lich_core.tools.secrets.prompt_refusal)."""
    path = resolve_safe_path(work_dir, target, for_write=write)
    check_file_access(work_dir, path, write=write)
    # A symlink inside the root (`cfg -> .lich/config.json`, `d -> .lich`) must not launder a
    # denied path, so the deny list also applies to where the path really leads.
    real = Path(_realpath(path, target))
    if real != path:
        check_file_access(_realpath(work_dir, target), real, write=write)
    return path


async def with_timeout(
    factory: Callable[[CancelToken], Awaitable[T]],
    timeout_ms: int,
    label: str,
    *,
    cancel: CancelToken | None = None,
    grace_ms: int | None = None,
) -> T:
    """Run `factory(token)` for at most `timeout_ms`: the deadline race every timed call uses.

    `token` is cancelled at the deadline and whenever `cancel` (the caller's token) is, so the
    work can stop what it started (kill a process group) as soon as either fires. The work then
    gets `grace_ms` (default CANCEL_GRACE_MS, read at the call) to finish cleaning up before it
    is abandoned. Raises ToolTimeoutError
    (`timeout: <label> exceeded <n>ms`) past the deadline and ToolCancelledError (`cancelled`)
    when `cancel` fired first. Cancelling the awaiting task cancels the token and the work too.
    Nothing outlives the call: the deadline timer and the link to `cancel` are always released.

    The work is a task of its own (its own context, its own `current_task()`, abandoned after
    the grace if it will not stop). On Python 3.12+ the task starts eagerly: work that never
    waits, as most tool calls do, is done before the race is set up.
    """
    grace_ms = CANCEL_GRACE_MS if grace_ms is None else grace_ms
    token = CancelToken()
    unlink = _follow(token, cancel) if cancel is not None else None
    try:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_ms / 1000
        woken: asyncio.Future[None] = loop.create_future()
        work = _start_task(_waking(factory(token), woken))
        if not work.done():
            await _race(work, woken, token, deadline, timeout_ms, label, grace_ms)
        if work.cancelled():  # the work cancelled itself; the caller was not cancelled
            raise ToolCancelledError()
        return work.result()
    finally:
        if unlink is not None:
            unlink()


def _start_task(work: Coroutine[Any, Any, T]) -> asyncio.Future[T]:
    """`work` as a task of its own: eagerly started where asyncio can (3.12+), else scheduled."""
    loop = asyncio.get_running_loop()
    if eager_task_factory is not None:
        return eager_task_factory(loop, work)
    return loop.create_task(work)


async def _waking(work: Awaitable[T], woken: asyncio.Future[None]) -> T:
    """`work`, setting `woken` as it ends: the waiting caller is woken in the step the work
    ends in, a turn of the loop sooner than by a done callback of the work's task."""
    try:
        return await work
    finally:
        _wake(woken)


def _wake(woken: asyncio.Future[None], _: object = None) -> None:
    if not woken.done():
        woken.set_result(None)


def _follow(token: CancelToken, parent: CancelToken) -> Callable[[], None]:
    """Cancel `token` whenever `parent` is (at once if it already is); returns the unlink."""
    return parent.on_cancel(lambda: token.cancel(parent.reason))


async def _race(
    work: asyncio.Future[Any],
    woken: asyncio.Future[None],
    token: CancelToken,
    deadline: float,
    timeout_ms: int,
    label: str,
    grace_ms: int,
) -> None:
    """Wait until `woken` is set, by the work's end, the token or the deadline, whichever is
    first. Returns when the work is done; past the deadline or on the token, the work is
    abandoned (after its grace) and ToolTimeoutError or ToolCancelledError is raised."""
    loop = asyncio.get_running_loop()
    # Woken by _waking as the work ends; a task cancelled before its first step (by whoever
    # holds it through all_tasks()) never runs _waking and is seen done at the deadline.
    wake = partial(_wake, woken)

    def wake_soon() -> None:
        # A step of the work already scheduled runs first, so work that finishes in it wins
        # over a token that was cancelled before it started, as with an eager start.
        loop.call_soon(wake)

    unlink = token.on_cancel(wake_soon)
    timer = loop.call_at(deadline, wake)
    try:
        await woken
    except asyncio.CancelledError:  # the caller itself is cancelled: the work stops too
        token.cancel("cancelled")
        await _abandon(work, grace_ms)
        raise
    finally:
        timer.cancel()
        unlink()
    if work.done():
        return
    timed_out = not token.cancelled
    token.cancel("timeout" if timed_out else token.reason)
    await _abandon(work, grace_ms)
    if timed_out:
        raise ToolTimeoutError(label, timeout_ms)
    raise ToolCancelledError()


async def _abandon(work: asyncio.Future[Any], grace_ms: int) -> None:
    """Cancel `work` and wait up to `grace_ms` for it to finish cleaning up.

    Its outcome no longer matters, only that it had the chance to clean up. A cancel of the
    caller itself during the grace (the task's hard stop) is not swallowed: it propagates.
    """
    work.cancel()
    work.add_done_callback(_forget_outcome)
    await asyncio.wait({work}, timeout=grace_ms / 1000)


def _forget_outcome(work: asyncio.Future[Any]) -> None:
    if not work.cancelled():
        work.exception()  # retrieved: an abandoned call's error is not worth a warning


def truncation_marker(omitted: int) -> str:
    return f"[... truncated, {omitted} chars omitted ...]"


def clamp_output(text: str, max_chars: int = DEFAULT_MAX_OUTPUT_CHARS) -> str:
    if len(text) <= max_chars:
        return text
    return text[:max_chars] + "\n" + truncation_marker(len(text) - max_chars)


# --- argument coercion: models send wrong types; be lenient where the meaning is clear ---


def require_string_arg(args: dict[str, Any], key: str) -> str:
    value = args.get(key)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        value = str(value)
    if not isinstance(value, str) or value == "":
        raise ToolError(f"missing_arg: {key}")
    return value


def require_raw_string_arg(args: dict[str, Any], key: str) -> str:
    """Like require_string_arg, but the empty string is a valid value (file content, new text)."""
    value = args.get(key)
    if not isinstance(value, str):
        raise ToolError(f"missing_arg: {key}")
    return value


def optional_string_arg(args: dict[str, Any], key: str, default: str | None = None) -> str | None:
    value = args.get(key)
    if isinstance(value, str) and value != "":
        return value
    return default


def optional_int_arg(
    args: dict[str, Any],
    key: str,
    default: int | None = None,
    *,
    low: int | None = None,
    high: int | None = None,
) -> int | None:
    value = args.get(key)
    if isinstance(value, bool):
        value = None
    if isinstance(value, str):
        try:
            value = float(value.strip())
        except ValueError:
            value = None
    if isinstance(value, float):
        value = int(value) if value == value and abs(value) != float("inf") else None
    if not isinstance(value, int):
        return default
    if low is not None:
        value = max(low, value)
    if high is not None:
        value = min(high, value)
    return value


def optional_bool_arg(args: dict[str, Any], key: str, default: bool = False) -> bool:
    value = args.get(key)
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    return default


# --- failure shaping ---


def error_message(err: BaseException) -> str:
    if isinstance(err, ToolError):
        return str(err)
    if isinstance(err, FileNotFoundError):
        return f"not_found: {err.filename or err}"
    if isinstance(err, IsADirectoryError):
        return f"is_directory: {err.filename or err}"
    if isinstance(err, PermissionError):
        return f"permission_denied: {err.filename or err}"
    text = str(err)
    return f"{type(err).__name__}: {text}" if text else type(err).__name__


def error_result(err: BaseException | str) -> ToolResult:
    message = err if isinstance(err, str) else error_message(err)
    return ToolResult(ok=False, output="", error=message)


def capture_errors(
    fn: Callable[[dict[str, Any], ToolContext], Awaitable[ToolResult]],
) -> Callable[[dict[str, Any], ToolContext], Awaitable[ToolResult]]:
    """Wrap a tool body so any raised exception becomes an error result (never-throw contract)."""

    @functools.wraps(fn)
    async def wrapper(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        try:
            return await fn(args, ctx)
        except asyncio.CancelledError:
            raise
        except Exception as err:  # noqa: BLE001 - the contract is to never throw
            return error_result(err)

    return wrapper
