"""lich_core/userstate.py: the user state dir cannot be turned against lich (issue #31).

Directories under the state root are made 0700 and never followed if they are links; one not
owned by the user or writable by others is refused with a message naming it and the fix; state
files are read as regular files only, bounded, with deep JSON a skip; writes replace a planted
link instead of writing through it. The end-to-end probes are in tests/lsp/test_lsp_state_dir.py
and tests/cli/test_cli_state_dir.py.
"""

from __future__ import annotations

import json
import logging
import os
import stat
from pathlib import Path

import pytest

from lich_core import userstate
from lich_core.approvals import ApprovalStore
from lich_core.hashline.read_state import ReadState
from lich_core.read_state_file import load_read_state, save_read_state
from lich_core.userstate import (
    MAX_STATE_FILE_BYTES,
    StateFileError,
    UnsafeStateDir,
    load_json,
    read_json,
    user_state_dir,
    workspace_state_dir,
    write_json_atomic,
)

UNASSIGNED_ID = 48_611  # a uid/gid no account or group here has


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    return root.resolve()


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.lstat().st_mode)


def test_state_dirs_are_made_private(ws: Path) -> None:
    target = workspace_state_dir(ws) / "undo" / "t1.json"
    write_json_atomic(target, {"a": 1})
    for directory in (
        user_state_dir(),
        user_state_dir() / "workspaces",
        workspace_state_dir(ws),
        target.parent,
    ):
        assert _mode(directory) == 0o700, directory
    assert _mode(target) == 0o600
    assert load_json(target) == {"a": 1}
    assert [p.name for p in target.parent.iterdir()] == ["t1.json"]  # no temp file left


def test_an_other_writable_state_dir_is_refused_for_reads_and_writes(
    ws: Path, caplog: pytest.LogCaptureFixture
) -> None:
    directory = workspace_state_dir(ws)
    write_json_atomic(directory / "approvals.json", {"always": ["terminal"]})
    os.chmod(directory, 0o707)
    with pytest.raises(UnsafeStateDir) as refused:
        write_json_atomic(directory / "approvals.json", {"always": ["terminal", "write_file"]})
    message = str(refused.value)
    assert message.startswith("state_dir_refused: ") and str(directory) in message
    assert f"chmod 700 {directory}" in message and "mode 707" in message
    # Read: not even a valid file is taken from a dir others could have written it into.
    with caplog.at_level(logging.WARNING, logger="lich.state"):
        assert read_json(directory / "approvals.json") is None
        assert read_json(directory / "approvals.json") is None
    warned = [r.getMessage() for r in caplog.records if "state_dir_refused" in r.getMessage()]
    assert len(warned) == 1, warned  # once, not on every read
    # What reads through read_json goes on with nothing remembered rather than failing.
    assert not ApprovalStore(ws).is_always("terminal")
    os.chmod(directory, 0o700)
    assert ApprovalStore(ws).is_always("terminal")


@pytest.mark.skipif(os.getuid() != 0, reason="making a dir of another group or owner needs root")
def test_a_group_writable_dir_of_a_shared_group_or_another_owner_is_refused(ws: Path) -> None:
    directory = workspace_state_dir(ws)
    write_json_atomic(directory / "approvals.json", {})
    os.chown(directory, -1, UNASSIGNED_ID)
    os.chmod(directory, 0o770)
    with pytest.raises(UnsafeStateDir, match=r"writable by group or others \(mode 770\)"):
        write_json_atomic(directory / "approvals.json", {})
    os.chmod(directory, 0o700)
    write_json_atomic(directory / "approvals.json", {})  # not group-writable: the group is harmless
    os.chown(directory, UNASSIGNED_ID, -1)
    with pytest.raises(UnsafeStateDir, match=rf"owned by uid {UNASSIGNED_ID}, not by you"):
        write_json_atomic(directory / "approvals.json", {})


def test_a_group_writable_dir_of_the_users_own_group_passes(
    ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A user private group (umask 002 systems): writable by the group is writable by nobody else.
    assert not userstate._group_is_only(UNASSIGNED_ID, os.getuid())  # no such group: no exception
    directory = workspace_state_dir(ws)
    write_json_atomic(directory / "approvals.json", {})
    os.chmod(directory, 0o770)
    monkeypatch.setattr(userstate, "_group_is_only", lambda gid, uid: True)
    write_json_atomic(directory / "approvals.json", {"ok": True})
    monkeypatch.setattr(userstate, "_group_is_only", lambda gid, uid: False)
    with pytest.raises(UnsafeStateDir):
        write_json_atomic(directory / "approvals.json", {})


def test_a_linked_dir_below_the_root_is_never_followed(ws: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    directory = workspace_state_dir(ws)
    directory.mkdir(parents=True)
    (directory / "undo").symlink_to(outside)
    with pytest.raises(UnsafeStateDir, match="is a symbolic link") as refused:
        write_json_atomic(directory / "undo" / "t1.json", {})
    assert f"rm {directory / 'undo'}" in str(refused.value)
    with pytest.raises(StateFileError, match="is a symbolic link"):
        load_json(directory / "undo" / "t1.json")
    assert list(outside.iterdir()) == []


def test_a_linked_file_is_replaced_on_write_and_skipped_on_read(ws: Path, tmp_path: Path) -> None:
    victim = tmp_path / "victim.json"
    victim.write_text('{"mine": true}', encoding="utf-8")
    target = workspace_state_dir(ws) / "approvals.json"
    target.parent.mkdir(parents=True)
    target.symlink_to(victim)
    with pytest.raises(StateFileError, match="a symbolic link"):
        load_json(target)
    write_json_atomic(target, {"always": []})
    assert victim.read_text(encoding="utf-8") == '{"mine": true}'
    assert not target.is_symlink() and json.loads(target.read_text(encoding="utf-8")) == {
        "always": []
    }


def test_hostile_state_files_are_skipped(ws: Path) -> None:
    directory = workspace_state_dir(ws)
    directory.mkdir(parents=True)
    deep = directory / "deep.json"
    deep.write_text("[" * 200_000, encoding="utf-8")
    with pytest.raises(StateFileError, match="nested too deep"):
        load_json(deep)
    fifo = directory / "fifo.json"
    os.mkfifo(fifo)
    with pytest.raises(StateFileError, match="not a regular file \\(a FIFO\\)"):
        load_json(fifo)  # and returns at once: the open does not wait for a writer
    huge = directory / "huge.json"
    with open(huge, "wb") as handle:
        handle.truncate(MAX_STATE_FILE_BYTES + 1)  # sparse: nothing is written or read
    with pytest.raises(StateFileError, match=f"larger than {MAX_STATE_FILE_BYTES} bytes"):
        load_json(huge)
    zero = directory / "zero.json"
    zero.symlink_to("/dev/zero")
    with pytest.raises(StateFileError, match="a symbolic link"):
        load_json(zero)
    with pytest.raises(StateFileError) as missing:
        load_json(directory / "absent.json")
    assert missing.value.missing


def test_the_cli_read_state_is_not_saved_through_a_link(ws: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    directory = workspace_state_dir(ws)
    directory.parent.mkdir(parents=True)
    directory.symlink_to(outside)
    state = ReadState()
    state.record(ws / "a.py")
    with pytest.raises(OSError, match="state_dir_refused"):
        save_read_state(state, directory / "read_state.json")
    assert list(outside.iterdir()) == []
    assert not load_read_state(directory / "read_state.json").has_read(ws / "a.py")
