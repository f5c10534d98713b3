"""Guards: confinement (lexical and through symlinks), the deny list, clamping, arg coercion."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from lich_core.errors import ToolCancelledError, ToolError, ToolTimeoutError
from lich_core.tools.guard import (
    capture_errors,
    check_file_access,
    clamp_output,
    error_result,
    optional_bool_arg,
    optional_int_arg,
    optional_string_arg,
    require_raw_string_arg,
    require_string_arg,
    resolve_file_for,
    resolve_safe_path,
    with_timeout,
)
from lich_core.tools.types import CancelToken, ToolContext, ToolResult

WAIT_S = 10  # generous upper bound for anything that should happen "soon"


@pytest.fixture
def root(tmp_path: Path) -> Path:
    work = tmp_path / "work"
    (work / "src").mkdir(parents=True)
    (work / "src" / "a.py").write_text("a\n")
    return work.resolve()


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    other = tmp_path / "outside"
    other.mkdir()
    (other / "secret.txt").write_text("s3cret\n")
    return other.resolve()


def escape_message(fn, *args, **kwargs) -> str:
    with pytest.raises(ToolError) as info:
        fn(*args, **kwargs)
    return str(info.value)


# --- lexical confinement ---


def test_relative_path_inside_resolves_under_root(root: Path) -> None:
    assert resolve_safe_path(root, "src/a.py") == root / "src" / "a.py"
    assert resolve_safe_path(root, "src/../src/a.py") == root / "src" / "a.py"
    assert resolve_safe_path(root, ".") == root


def test_dotdot_escape_is_refused(root: Path) -> None:
    assert escape_message(resolve_safe_path, root, "../x").startswith("path_escape:")
    assert escape_message(resolve_safe_path, root, "src/../../x").startswith("path_escape:")
    assert escape_message(resolve_safe_path, root, "..").startswith("path_escape:")


def test_sibling_with_root_name_prefix_is_refused(root: Path) -> None:
    # "/tmp/work-other" starts with "/tmp/work" as a string but is not inside it.
    sibling = Path(str(root) + "-other")
    sibling.mkdir()
    assert escape_message(resolve_safe_path, root, str(sibling / "f")).startswith("path_escape:")


def test_absolute_inside_is_accepted_and_outside_refused(root: Path, outside: Path) -> None:
    assert resolve_safe_path(root, str(root / "src" / "a.py")) == root / "src" / "a.py"
    message = escape_message(resolve_safe_path, root, str(outside / "secret.txt"))
    assert message.startswith("path_escape:")
    assert escape_message(resolve_safe_path, root, "/etc/passwd").startswith("path_escape:")


# --- real-path confinement ---


def test_symlinked_directory_pointing_outside_is_refused(root: Path, outside: Path) -> None:
    os.symlink(outside, root / "linkdir")
    for write in (False, True):
        message = escape_message(resolve_safe_path, root, "linkdir/secret.txt", for_write=write)
        assert message.startswith("path_escape:")
    # Even a file that does not exist yet below the link.
    assert escape_message(resolve_safe_path, root, "linkdir/new.txt", for_write=True).startswith(
        "path_escape:"
    )


def test_symlinked_file_pointing_outside_is_refused(root: Path, outside: Path) -> None:
    os.symlink(outside / "secret.txt", root / "leak.txt")
    assert escape_message(resolve_safe_path, root, "leak.txt").startswith("path_escape:")
    assert escape_message(resolve_safe_path, root, "leak.txt", for_write=True).startswith(
        "path_escape:"
    )


def test_symlink_inside_root_readable_but_leaf_never_written(root: Path) -> None:
    os.symlink(root / "src" / "a.py", root / "alias.py")
    assert resolve_safe_path(root, "alias.py") == root / "alias.py"
    message = escape_message(resolve_safe_path, root, "alias.py", for_write=True)
    assert message.startswith("path_escape:") and "symbolic link" in message


def test_writes_never_go_through_a_symlink_even_inside_the_root(root: Path) -> None:
    os.symlink(root / "src", root / "srclink")
    message = escape_message(resolve_safe_path, root, "srclink/new.py", for_write=True)
    assert message.startswith(
        "path_escape: srclink/new.py goes through the symbolic link srclink; writes never follow"
    )
    # Reading through it is fine: it stays inside the root.
    assert resolve_safe_path(root, "srclink/a.py") == root / "srclink" / "a.py"


def test_root_that_is_itself_a_symlink_still_works(tmp_path: Path, root: Path) -> None:
    link_root = tmp_path / "rootlink"
    os.symlink(root, link_root)
    assert resolve_safe_path(link_root, "src/a.py") == link_root / "src" / "a.py"


# --- deny list ---


def ctx_for(root: Path) -> ToolContext:
    return ToolContext(work_dir=root)


@pytest.mark.parametrize("write", [False, True])
def test_lich_config_is_neither_readable_nor_writable(root: Path, write: bool) -> None:
    (root / ".lich").mkdir()
    (root / ".lich" / "config.json").write_text("{}")
    message = escape_message(resolve_file_for, ctx_for(root), ".lich/config.json", write=write)
    assert message.startswith("forbidden_path:")


@pytest.mark.parametrize("name", [".env", ".env.local", "sub/.env.production"])
def test_env_files_are_readable_but_never_writable(root: Path, name: str) -> None:
    assert resolve_file_for(ctx_for(root), name, write=False) == root / name
    assert escape_message(resolve_file_for, ctx_for(root), name, write=True).startswith(
        "forbidden_path:"
    )


def test_lich_dir_writable_only_under_skills_and_plugins(root: Path) -> None:
    ctx = ctx_for(root)
    assert (
        resolve_file_for(ctx, ".lich/skills/notes.md", write=True) == root / ".lich/skills/notes.md"
    )
    assert (
        resolve_file_for(ctx, ".lich/plugins/p/mod.py", write=True)
        == root / ".lich/plugins/p/mod.py"
    )
    for target in (".lich/approvals.json", ".lich/sessions/x.jsonl", ".lich/skills", ".lich"):
        message = escape_message(resolve_file_for, ctx, target, write=True)
        assert message.startswith("forbidden_path:"), target
    # Reading elsewhere in .lich is fine.
    assert (
        resolve_file_for(ctx, ".lich/sessions/x.jsonl", write=False)
        == root / ".lich/sessions/x.jsonl"
    )


def test_deny_list_applies_through_symlinks_inside_the_root(root: Path) -> None:
    (root / ".lich").mkdir()
    (root / ".lich" / "config.json").write_text("{}")
    os.symlink(root / ".lich" / "config.json", root / "cfg")
    os.symlink(root / ".lich", root / "dotlich")
    ctx = ctx_for(root)
    assert escape_message(resolve_file_for, ctx, "cfg", write=False).startswith("forbidden_path:")
    assert escape_message(resolve_file_for, ctx, "dotlich/config.json", write=False).startswith(
        "forbidden_path:"
    )
    # Writes refuse the link itself, before the deny list is even asked.
    assert escape_message(resolve_file_for, ctx, "dotlich/approvals.json", write=True).startswith(
        "path_escape:"
    )
    assert escape_message(resolve_file_for, ctx, "dotlich/skills/s.md", write=True).startswith(
        "path_escape:"
    )


def test_check_file_access_ignores_ordinary_files(root: Path) -> None:
    check_file_access(root, root / "src" / "a.py", write=True)
    check_file_access(root, root / "environment.txt", write=True)
    check_file_access(root, root / "lich" / "config.json", write=True)


# --- clamping ---


def test_clamp_output_keeps_short_text_and_marks_truncation() -> None:
    assert clamp_output("short") == "short"
    exact = "x" * 20_000
    assert clamp_output(exact) == exact
    clamped = clamp_output("y" * 20_005)
    assert clamped.startswith("y" * 20_000)
    assert clamped.endswith("[... truncated, 5 chars omitted ...]")
    assert clamp_output("abcdef", 4) == "abcd\n[... truncated, 2 chars omitted ...]"


# --- argument coercion ---


def test_require_string_arg() -> None:
    assert require_string_arg({"k": "v"}, "k") == "v"
    assert require_string_arg({"k": 12}, "k") == "12"
    for args in ({}, {"k": ""}, {"k": None}, {"k": ["v"]}, {"k": True}):
        with pytest.raises(ToolError, match=r"^missing_arg: k$"):
            require_string_arg(args, "k")


def test_require_raw_string_arg_accepts_empty() -> None:
    assert require_raw_string_arg({"k": ""}, "k") == ""
    with pytest.raises(ToolError, match=r"^missing_arg: k$"):
        require_raw_string_arg({"k": 5}, "k")
    with pytest.raises(ToolError, match=r"^missing_arg: k$"):
        require_raw_string_arg({}, "k")


def test_optional_args_fall_back_on_wrong_types() -> None:
    assert optional_string_arg({"k": ""}, "k", "d") == "d"
    assert optional_string_arg({"k": 3}, "k", "d") == "d"
    assert optional_int_arg({"k": "7"}, "k", 1) == 7
    assert optional_int_arg({"k": 7.9}, "k", 1) == 7
    assert optional_int_arg({"k": "nope"}, "k", 1) == 1
    assert optional_int_arg({"k": True}, "k", 1) == 1
    assert optional_int_arg({"k": float("nan")}, "k", 1) == 1
    assert optional_int_arg({"k": 99}, "k", 1, low=1, high=4) == 4
    assert optional_int_arg({"k": -3}, "k", 1, low=1, high=4) == 1
    assert optional_bool_arg({"k": "true"}, "k") is True
    assert optional_bool_arg({"k": "FALSE"}, "k", True) is False
    assert optional_bool_arg({"k": 1}, "k") is False


# --- failure shaping and deadlines ---


async def test_capture_errors_turns_raises_into_results() -> None:
    @capture_errors
    async def body(args: dict, ctx: ToolContext) -> ToolResult:
        kind = args["kind"]
        if kind == "tool":
            raise ToolError("not_found: x.py")
        if kind == "enoent":
            raise FileNotFoundError(2, "No such file", "y.py")
        raise ValueError("boom")

    ctx = ToolContext(work_dir=Path.cwd())
    assert (await body({"kind": "tool"}, ctx)).error == "not_found: x.py"
    assert (await body({"kind": "enoent"}, ctx)).error == "not_found: y.py"
    result = await body({"kind": "other"}, ctx)
    assert result.ok is False and result.output == "" and result.error == "ValueError: boom"


def test_error_result_from_string() -> None:
    assert error_result("cancelled") == ToolResult(ok=False, output="", error="cancelled")


async def test_with_timeout_raises_timeout_error_and_cancels_the_token() -> None:
    seen: list[CancelToken] = []

    async def slow(token: CancelToken) -> None:
        seen.append(token)
        await asyncio.sleep(WAIT_S)

    with pytest.raises(ToolTimeoutError, match=r"^timeout: slow thing exceeded 20ms$"):
        await with_timeout(slow, 20, "slow thing")
    assert seen[0].cancelled and seen[0].reason == "timeout"

    async def fast(token: CancelToken) -> int:
        return 3

    assert await with_timeout(fast, 1000, "fast") == 3


async def test_with_timeout_lets_late_work_clean_up_after_the_deadline() -> None:
    cleaned = asyncio.Event()

    async def stubborn(token: CancelToken) -> None:
        try:
            await asyncio.sleep(WAIT_S)
        finally:
            await asyncio.sleep(0.05)  # e.g. waiting for a killed child to be reaped
            cleaned.set()

    with pytest.raises(ToolTimeoutError):
        await with_timeout(stubborn, 20, "stubborn")
    assert cleaned.is_set()


async def test_a_cancel_of_the_caller_during_the_grace_is_not_swallowed() -> None:
    """The task's hard stop lands while an abandoned call is in its grace: the caller is
    cancelled then and there (the grace does not eat the cancel and let the run go on)."""
    caller = CancelToken()
    ignoring = asyncio.Event()
    release = asyncio.Event()

    async def ignores_everything(token: CancelToken) -> None:
        while not release.is_set():
            try:
                await release.wait()
            except asyncio.CancelledError:
                ignoring.set()  # swallowed: this work never stops by itself

    task = asyncio.ensure_future(
        with_timeout(
            ignores_everything,
            WAIT_S * 1000,
            "stubborn",
            cancel=caller,
            grace_ms=int(WAIT_S * 1000),
        )
    )
    await asyncio.sleep(0)
    caller.cancel()
    await asyncio.wait_for(ignoring.wait(), WAIT_S)  # the work got its cancel; the grace runs
    task.cancel()  # the hard stop
    try:
        with pytest.raises(asyncio.CancelledError):
            await asyncio.wait_for(task, WAIT_S)
        assert task.cancelled()
    finally:
        release.set()


async def test_with_timeout_follows_the_callers_token() -> None:
    caller = CancelToken()
    started = asyncio.Event()
    seen: list[CancelToken] = []

    async def waits(token: CancelToken) -> None:
        seen.append(token)
        started.set()
        await asyncio.sleep(WAIT_S)

    task = asyncio.ensure_future(with_timeout(waits, WAIT_S * 1000, "waits", cancel=caller))
    await asyncio.wait_for(started.wait(), WAIT_S)
    caller.cancel()
    with pytest.raises(ToolCancelledError, match=r"^cancelled$"):
        await asyncio.wait_for(task, WAIT_S)
    assert seen[0].cancelled


async def test_with_timeout_unlinks_from_the_callers_token_when_done() -> None:
    caller = CancelToken()
    seen: list[CancelToken] = []

    async def quick(token: CancelToken) -> str:
        seen.append(token)
        return "done"

    for _ in range(3):
        assert await with_timeout(quick, 1000, "quick", cancel=caller) == "done"
    caller.cancel()
    # Finished calls no longer listen to the caller: no callbacks pile up on a long-lived token.
    assert not any(token.cancelled for token in seen)


async def test_with_timeout_propagates_task_cancellation_to_the_work() -> None:
    started = asyncio.Event()
    seen: list[CancelToken] = []

    async def waits(token: CancelToken) -> None:
        seen.append(token)
        started.set()
        await asyncio.sleep(WAIT_S)

    task = asyncio.ensure_future(with_timeout(waits, WAIT_S * 1000, "waits"))
    await asyncio.wait_for(started.wait(), WAIT_S)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert seen[0].cancelled


async def test_capture_errors_maps_os_errors_to_prefixes(tmp_path: Path) -> None:
    @capture_errors
    async def body(args: dict, ctx: ToolContext) -> ToolResult:
        if args["kind"] == "perm":
            raise PermissionError(13, "Permission denied", "locked.txt")
        raise IsADirectoryError(21, "Is a directory", "src")

    ctx = ToolContext(work_dir=tmp_path)
    assert (await body({"kind": "perm"}, ctx)).error == "permission_denied: locked.txt"
    assert (await body({"kind": "dir"}, ctx)).error == "is_directory: src"


async def test_capture_errors_lets_task_cancellation_through(tmp_path: Path) -> None:
    @capture_errors
    async def body(args: dict, ctx: ToolContext) -> ToolResult:
        raise asyncio.CancelledError()

    with pytest.raises(asyncio.CancelledError):
        await body({}, ToolContext(work_dir=tmp_path))
