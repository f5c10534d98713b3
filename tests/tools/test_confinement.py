"""Race-free confinement and the file-system hardening: what an attacker tried, and what they get now."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from lich_core.tools.builtin.edit_file import TOOL as EDIT
from lich_core.tools.builtin.read_file import TOOL as READ
from lich_core.tools.builtin.write_file import TOOL as WRITE
from lich_core.tools.types import ToolContext, ToolResult
from lich_core.workspace import DiskWorkspace

# A tool call that blocks on a FIFO would hang the whole server: bound the wait so a regression fails.
BLOCKING_CALL_LIMIT_S = 20.0
RACE_OPERATIONS = 4_000
MAX_RACE_OPERATIONS = 40_000
MIN_FLIPS = 100
SECRET = "outside-secret\n"


@pytest.fixture
def root(tmp_path: Path) -> Path:
    work = tmp_path / "work"
    work.mkdir()
    return work.resolve()


def ctx_for(root: Path) -> ToolContext:
    return ToolContext(work_dir=root, workspace=DiskWorkspace(root), edit_label="lich: test")


async def call(tool: Any, args: dict[str, Any], root: Path) -> ToolResult:
    result = await asyncio.wait_for(tool.execute(args, ctx_for(root)), BLOCKING_CALL_LIMIT_S)
    assert isinstance(result, ToolResult)
    return result


# Runs in its own process, so the swaps really interleave with the tool calls (a thread would
# mostly wait for the GIL). Swaps `sub` between a real directory and a symlink to outside about
# every millisecond until the stop file appears, then prints how many swaps it made.
FLIPPER = """
import os, shutil, sys, time
root, outside, stop, count = sys.argv[1:5]
sub, parked = os.path.join(root, "sub"), os.path.join(root, ".sub-parked")
flips = 0
print("flipping", flush=True)


def settle():
    # Put the real directory back, whatever a write made at `sub` in the gap (inside the root).
    while True:
        try:
            os.rename(parked, sub)
            return
        except OSError:
            if os.path.islink(sub):
                os.unlink(sub)
            else:
                shutil.rmtree(sub, ignore_errors=True)


while not os.path.exists(stop):
    try:
        os.rename(sub, parked)
    except OSError:  # `sub` is briefly missing: a write is making it again
        continue
    try:
        os.symlink(outside, sub)
    except FileExistsError:  # a write made a fresh `sub` in the gap
        settle()
        continue
    time.sleep(0.0005)
    settle()
    flips += 1
    if flips % 20 == 0:
        with open(count + ".tmp", "w") as handle:
            handle.write(str(flips))
        os.replace(count + ".tmp", count)
    time.sleep(0.0005)
print(flips, flush=True)
"""


def flip_count(path: Path) -> int:
    try:
        return int(path.read_text())
    except (OSError, ValueError):
        return 0


async def test_a_directory_swapped_for_a_symlink_never_leaks_a_read_or_a_write(
    root: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "a.txt").write_text(SECRET)
    (root / "sub").mkdir()
    (root / "sub" / "a.txt").write_text("inside\n")
    before = {p.name: p.read_text() for p in outside.iterdir()}
    stop = tmp_path / "stop"
    count = tmp_path / "flips"
    flipper = subprocess.Popen(
        [sys.executable, "-c", FLIPPER, str(root), str(outside), str(stop), str(count)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert flipper.stdout is not None
    assert flipper.stdout.readline().strip() == "flipping"
    leaked_reads = 0
    ok_reads = ok_writes = 0
    try:
        index = 0
        # At least RACE_OPERATIONS calls, and on until the swapper really ran (a loaded machine
        # may starve it), within a hard bound.
        while index < RACE_OPERATIONS or (
            flip_count(count) < MIN_FLIPS and index < MAX_RACE_OPERATIONS
        ):
            index += 1
            if index % 2:
                result = await call(READ, {"path": "sub/a.txt"}, root)
                leaked_reads += SECRET.strip() in (result.output or "")
                ok_reads += result.ok
            else:
                result = await call(
                    WRITE, {"path": f"sub/w{index % 50}.txt", "content": f"{index}\n"}, root
                )
                ok_writes += result.ok
                if not result.ok:
                    assert result.error.split(":", 1)[0] in (
                        "path_escape",
                        "not_found",
                        "edit_rejected",
                        "is_directory",
                    ), result.error
    finally:
        stop.touch()
        out, err = flipper.communicate(timeout=60)
        flips = int(out.strip() or 0)
    assert flipper.returncode == 0, f"the swapper failed: {err}"
    after = {p.name: p.read_text() for p in outside.iterdir()}
    assert flips >= MIN_FLIPS, f"the race hardly ran ({flips} swaps)"
    assert leaked_reads == 0
    assert after == before, "a write landed outside the root"
    assert ok_reads > 0 and ok_writes > 0  # the in-root directory still works between flips
    assert not [p for p in root.rglob("*.lich-tmp")]


@pytest.mark.parametrize(
    "target",
    [
        ".git/config",
        ".git/hooks/pre-commit",
        "vendor/lib/.git/config",
        ".hg/hgrc",
        ".svn/entries",
        ".git",
    ],
)
async def test_version_control_folders_are_never_written(root: Path, target: str) -> None:
    (root / ".git").mkdir()
    (root / ".git" / "config").write_text("[core]\n")
    result = await call(WRITE, {"path": target, "content": "[core]\n\tfsmonitor = ./evil\n"}, root)
    assert result.ok is False and result.error.startswith(f"forbidden_path: {target} (")
    assert "is never written by tools" in result.error
    assert (root / ".git" / "config").read_text() == "[core]\n"
    edited = await call(
        EDIT, {"path": ".git/config", "old_string": "[core]", "new_string": "[evil]"}, root
    )
    assert edited.error.startswith("forbidden_path:")
    read = await call(READ, {"path": ".git/config"}, root)
    assert read.ok and "[core]" in read.output  # reading stays allowed


@pytest.mark.parametrize("tool", ["read", "edit", "write"])
async def test_a_fifo_is_refused_at_once(root: Path, tool: str) -> None:
    os.mkfifo(root / "pipe")
    args = {
        "read": (READ, {"path": "pipe"}),
        "edit": (EDIT, {"path": "pipe", "old_string": "a", "new_string": "b"}),
        "write": (WRITE, {"path": "pipe", "content": "x"}),
    }[tool]
    result = await call(*args, root)
    assert result.ok is False
    assert result.error.startswith("not_regular_file: ") and "FIFO" in result.error


async def test_a_read_only_file_is_not_rewritten(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = root / "locked.txt"
    target.write_text("keep\n")
    target.chmod(0o444)
    if os.geteuid() == 0:
        # root may write anything; make the check see what an ordinary user would.
        real_access = os.access
        monkeypatch.setattr(
            os,
            "access",
            lambda path, mode, **kw: False if mode & os.W_OK else real_access(path, mode, **kw),
        )
    for tool, args in (
        (WRITE, {"path": "locked.txt", "content": "changed\n"}),
        (EDIT, {"path": "locked.txt", "old_string": "keep", "new_string": "changed"}),
    ):
        result = await call(tool, args, root)
        assert (
            result.ok is False
            and result.error.startswith("permission_denied: ")
            and "read-only" in result.error
        )
    assert target.read_text() == "keep\n"


@pytest.mark.parametrize(
    ("path", "fragment"),
    [
        ("a\x00b.txt", "NUL byte"),
        ("x" * 5000, "bytes long"),
        ("d/" + "y" * 300 + "/f", "a name in the path is 300 bytes"),
    ],
)
async def test_impossible_paths_are_bad_path(root: Path, path: str, fragment: str) -> None:
    for tool, args in ((READ, {"path": path}), (WRITE, {"path": path, "content": "x"})):
        result = await call(tool, args, root)
        assert (
            result.ok is False
            and result.error.startswith("bad_path: ")
            and fragment in result.error
        ), result.error


async def test_writes_refuse_any_symlink_on_the_way(root: Path, tmp_path: Path) -> None:
    (root / "src").mkdir()
    (root / "src" / "a.py").write_text("x = 1\n")
    os.symlink(root / "src", root / "srclink")
    refused = await call(WRITE, {"path": "srclink/a.py", "content": "x = 2\n"}, root)
    assert refused.error.startswith(
        "path_escape: srclink/a.py goes through the symbolic link srclink"
    )
    assert (root / "src" / "a.py").read_text() == "x = 1\n"
    read = await call(READ, {"path": "srclink/a.py"}, root)
    assert read.ok and "x = 1" in read.output  # a link inside the root may be read through
