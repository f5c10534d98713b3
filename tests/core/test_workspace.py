"""DiskWorkspace: atomic writes that keep the file mode, create parents, and apply a change set
all-or-nothing (stale checks, staging failures and a failing rename part-way all leave no trace)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from lich_core import workspace as workspace_module
from lich_core.errors import EditRejected, ToolError
from lich_core.workspace import DiskWorkspace, FileChange, LineReplacement, Workspace


def write(path: Path, new_text: str, base_text: str | None) -> FileChange:
    return FileChange.write(path, new_text, base_text)


def temp_leftovers(root: Path) -> list[Path]:
    return [p for p in root.rglob("*") if p.name.endswith(".lich-tmp")]


@pytest.fixture
def ws(tmp_path: Path) -> DiskWorkspace:
    return DiskWorkspace(tmp_path)


def test_disk_workspace_is_a_workspace(ws: DiskWorkspace, tmp_path: Path) -> None:
    assert isinstance(ws, Workspace)
    assert ws.root == tmp_path.resolve()
    assert list(ws.overlay_paths()) == []


def test_reads_keep_line_endings_and_undecodable_bytes(ws: DiskWorkspace, tmp_path: Path) -> None:
    path = tmp_path / "crlf.txt"
    path.write_bytes(b"one\r\ntwo\r\n\xff\xfe end")
    text = ws.read_text(path)
    assert text.startswith("one\r\ntwo\r\n")
    assert ws.read_bytes(path) == b"one\r\ntwo\r\n\xff\xfe end"
    assert ws.exists(path) and not ws.exists(tmp_path / "missing")
    with pytest.raises(FileNotFoundError):
        ws.read_text(tmp_path / "missing")


async def test_round_trip_preserves_undecodable_bytes(ws: DiskWorkspace, tmp_path: Path) -> None:
    path = tmp_path / "latin1.txt"
    path.write_bytes(b"caf\xe9\n")
    text = ws.read_text(path)
    await ws.apply([write(path, text + "more\n", text)], "t")
    assert path.read_bytes() == b"caf\xe9\nmore\n"


async def test_write_creates_parents(ws: DiskWorkspace, tmp_path: Path) -> None:
    path = tmp_path / "a" / "b" / "c.txt"
    await ws.apply([write(path, "hello\n", None)], "t")
    assert path.read_text() == "hello\n"
    assert temp_leftovers(tmp_path) == []


async def test_write_keeps_existing_file_mode(ws: DiskWorkspace, tmp_path: Path) -> None:
    path = tmp_path / "script.sh"
    path.write_text("echo 1\n")
    os.chmod(path, 0o751)
    await ws.apply([write(path, "echo 2\n", "echo 1\n")], "t")
    assert path.read_text() == "echo 2\n"
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o751


async def test_new_file_gets_umask_mode_not_temp_file_mode(
    ws: DiskWorkspace, tmp_path: Path
) -> None:
    old_umask = os.umask(0o022)
    try:
        path = tmp_path / "new.txt"
        await ws.apply([write(path, "x", None)], "t")
    finally:
        os.umask(old_umask)
    # mkstemp creates 0600 files; the result must look like an ordinarily created file.
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o644


async def test_write_replaces_inode_atomically(ws: DiskWorkspace, tmp_path: Path) -> None:
    path = tmp_path / "f.txt"
    path.write_text("old")
    before = os.stat(path).st_ino
    await ws.apply([write(path, "new", "old")], "t")
    # A rename swaps in a new inode: a reader never sees a half-written file.
    assert os.stat(path).st_ino != before
    assert path.read_text() == "new"


async def test_delete(ws: DiskWorkspace, tmp_path: Path) -> None:
    path = tmp_path / "gone.txt"
    path.write_text("bye")
    await ws.apply([FileChange.delete(path, "bye")], "t")
    assert not path.exists()


async def test_stale_single_file_is_rejected(ws: DiskWorkspace, tmp_path: Path) -> None:
    path = tmp_path / "f.txt"
    path.write_text("someone else's edit")
    with pytest.raises(EditRejected) as info:
        await ws.apply([write(path, "mine", "what I read")], "t")
    assert str(info.value).startswith("edit_rejected: stale_file:")
    assert path.read_text() == "someone else's edit"


async def test_creating_a_file_that_appeared_meanwhile_is_stale(
    ws: DiskWorkspace, tmp_path: Path
) -> None:
    path = tmp_path / "f.txt"
    path.write_text("appeared")
    with pytest.raises(EditRejected):
        await ws.apply([write(path, "mine", None)], "t")
    assert path.read_text() == "appeared"


async def test_stale_second_file_rejects_whole_set(ws: DiskWorkspace, tmp_path: Path) -> None:
    first, second = tmp_path / "one.txt", tmp_path / "two.txt"
    first.write_text("1\n")
    second.write_text("changed behind our back\n")
    with pytest.raises(EditRejected, match="stale_file"):
        await ws.apply([write(first, "1 edited\n", "1\n"), write(second, "2 edited\n", "2\n")], "t")
    assert first.read_text() == "1\n"
    assert second.read_text() == "changed behind our back\n"
    assert temp_leftovers(tmp_path) == []


async def test_staging_failure_writes_nothing(ws: DiskWorkspace, tmp_path: Path) -> None:
    first = tmp_path / "one.txt"
    first.write_text("1\n")
    (tmp_path / "blocker").write_text("a file where a directory is needed")
    second = tmp_path / "blocker" / "two.txt"
    with pytest.raises(EditRejected, match="write_failed"):
        await ws.apply([write(first, "1 edited\n", "1\n"), write(second, "2\n", None)], "t")
    assert first.read_text() == "1\n"
    assert temp_leftovers(tmp_path) == []


async def test_change_to_a_directory_is_rejected_not_raised_raw(
    ws: DiskWorkspace, tmp_path: Path
) -> None:
    first = tmp_path / "one.txt"
    first.write_text("1\n")
    (tmp_path / "adir").mkdir()
    (tmp_path / "adir" / "inside.txt").write_text("keep")
    with pytest.raises(EditRejected, match=r"^edit_rejected: unreadable: .*adir"):
        await ws.apply(
            [write(first, "1 edited\n", "1\n"), write(tmp_path / "adir", "x", None)], "t"
        )
    assert first.read_text() == "1\n"
    assert (tmp_path / "adir" / "inside.txt").read_text() == "keep"
    assert temp_leftovers(tmp_path) == []


async def test_failing_rename_part_way_restores_earlier_files(
    ws: DiskWorkspace, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    existing, created, third = (
        tmp_path / "existing.txt",
        tmp_path / "created.txt",
        tmp_path / "third.txt",
    )
    existing.write_text("original\n")
    third.write_text("third\n")
    os.chmod(existing, 0o640)
    real_replace = os.replace
    calls: list[str] = []

    def flaky_replace(src, dst, **dir_fds) -> None:
        calls.append(str(dst))
        if len(calls) == 3:  # the third swap (third.txt) fails after two succeeded
            raise OSError(5, "simulated I/O error")
        real_replace(src, dst, **dir_fds)

    monkeypatch.setattr(workspace_module.os, "replace", flaky_replace)
    changes = [
        write(existing, "edited\n", "original\n"),
        write(created, "brand new\n", None),
        write(third, "third edited\n", "third\n"),
    ]
    with pytest.raises(EditRejected, match="write_failed"):
        await ws.apply(changes, "t")
    monkeypatch.undo()
    assert existing.read_text() == "original\n"
    assert stat.S_IMODE(os.stat(existing).st_mode) == 0o640
    assert not created.exists()
    assert third.read_text() == "third\n"
    assert temp_leftovers(tmp_path) == []


async def test_successful_multi_file_set_applies_everything(
    ws: DiskWorkspace, tmp_path: Path
) -> None:
    a, b, c = tmp_path / "a.txt", tmp_path / "sub" / "b.txt", tmp_path / "c.txt"
    a.write_text("a")
    c.write_text("c")
    await ws.apply(
        [
            write(a, "A", "a"),
            write(b, "B", None),
            FileChange.delete(c, "c"),
        ],
        "t",
    )
    assert a.read_text() == "A" and b.read_text() == "B" and not c.exists()
    assert temp_leftovers(tmp_path) == []


def test_current_umask_reads_without_changing_it() -> None:
    from lich_core.workspace import current_umask

    previous = os.umask(0o027)
    try:
        assert current_umask() == 0o027
        assert current_umask() == 0o027  # reading did not reset it
    finally:
        os.umask(previous)


@pytest.mark.parametrize(
    "disk",
    [b"caf\xc3\xa9 \xf0\x9f\x99\x82\r\nline\n", b"raw \xff\xfe bytes\n", b"", b"\x00nul\n"],
)
async def test_the_stale_check_compares_exact_bytes(
    ws: DiskWorkspace, tmp_path: Path, disk: bytes
) -> None:
    """Unchanged bytes pass, whatever they are; one changed byte anywhere is stale."""
    path = tmp_path / "f.txt"
    path.write_bytes(disk)
    base = ws.read_text(path)
    await ws.apply([write(path, base + "more\n", base)], "t")
    assert path.read_bytes() == disk + b"more\n"
    changed = bytearray(path.read_bytes())
    changed[-2] ^= 0x01
    path.write_bytes(bytes(changed))
    with pytest.raises(EditRejected, match="stale_file"):
        await ws.apply([write(path, "x\n", base + "more\n")], "t")
    assert path.read_bytes() == bytes(changed)


async def test_a_base_no_file_can_hold_is_stale(ws: DiskWorkspace, tmp_path: Path) -> None:
    path = tmp_path / "f.txt"
    path.write_bytes(b"a\n")
    # A lone high surrogate: no bytes decode to it, so the file cannot be what it was read as.
    with pytest.raises(EditRejected, match="stale_file"):
        await ws.apply([write(path, "b\n", "a\ud800\n")], "t")
    assert path.read_bytes() == b"a\n"


async def test_a_read_base_is_checked_against_the_bytes_it_was_read_from(
    ws: DiskWorkspace, tmp_path: Path
) -> None:
    """The stale check compares every chunk of a large file, not only its size or its start."""
    from lich_core.confined import COMPARE_CHUNK_BYTES

    path = tmp_path / "big.txt"
    disk = ("x" * 99 + "\n").encode() * (3 * COMPARE_CHUNK_BYTES // 100) + "café\n".encode()
    path.write_bytes(disk)
    base = ws.read_text(path)
    # Same size, one byte changed past the first chunks: stale.
    changed = bytearray(disk)
    changed[-3] = ord("x")
    path.write_bytes(bytes(changed))
    with pytest.raises(EditRejected, match="stale_file"):
        await ws.apply([write(path, "mine\n", base)], "t")
    assert path.read_bytes() == bytes(changed)
    # A prefix of what was read (shorter): stale.
    path.write_bytes(disk[:-1])
    with pytest.raises(EditRejected, match="stale_file"):
        await ws.apply([write(path, "mine\n", base)], "t")
    # Changed and changed back: the same bytes again, so not stale.
    path.write_bytes(disk)
    await ws.apply([write(path, "mine\n", base)], "t")
    assert path.read_bytes() == b"mine\n"


async def test_a_base_equal_to_a_read_but_not_from_it_is_compared_too(
    ws: DiskWorkspace, tmp_path: Path
) -> None:
    path = tmp_path / "f.txt"
    path.write_bytes("naïve \xf0\x9f\x99\x82\n".encode("latin-1") + b"\xff raw\n")
    read = ws.read_text(path)
    rebuilt = "".join(list(read))  # equal text, another object
    assert rebuilt == read and rebuilt is not read
    await ws.apply([write(path, rebuilt + "more\n", rebuilt)], "t")
    assert path.read_bytes().endswith(b"\xff raw\nmore\n")
    with pytest.raises(EditRejected, match="stale_file"):
        await ws.apply([write(path, "x\n", rebuilt)], "t")  # the file holds more now


async def test_an_unencodable_character_is_reported_and_nothing_is_left(
    ws: DiskWorkspace, tmp_path: Path
) -> None:
    path = tmp_path / "f.txt"
    path.write_text("keep\n")
    with pytest.raises(UnicodeEncodeError):
        await ws.apply([write(path, "x" * 70_000 + "\ud800\n", "keep\n")], "t")
    assert path.read_text() == "keep\n"
    assert temp_leftovers(tmp_path) == []


# --- DiskTextMemo: the bytes behind a read spare the stale check an encode ---


def test_the_memo_gives_the_bytes_only_for_the_very_text_it_read(tmp_path: Path) -> None:
    memo = workspace_module.DiskTextMemo()
    path = tmp_path / "f.txt"
    path.write_bytes(b"caf\xc3\xa9 \xff\n")
    text = memo.read(path, tmp_path)
    assert text == "café \udcff\n"
    assert memo.bytes_of(path, text) == b"caf\xc3\xa9 \xff\n"
    assert memo.bytes_of(path, "".join(list(text))) is None  # equal, but not what was read
    assert memo.bytes_of(tmp_path / "other.txt", text) is None


def test_the_memo_gives_lines_from_bytes_once_per_read_and_only_for_that_text(
    tmp_path: Path,
) -> None:
    memo = workspace_module.DiskTextMemo()
    path = tmp_path / "f.txt"
    path.write_bytes(b"caf\xc3\xa9\n\xff raw\nlast")
    text = memo.read(path, tmp_path)
    lines = memo.lines_of(path, text)
    assert lines is not None and list(lines) == ["café", "\udcff raw", "last"]
    assert memo.lines_of(path, text) is lines  # the tool's read and the write's splice share it
    assert memo.lines_of(path, "".join(list(text))) is None
    again = memo.read(path, tmp_path)
    assert memo.lines_of(path, again) is not lines


def test_the_memo_keeps_the_last_few_small_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(workspace_module, "MEMO_MAX_FILE_BYTES", 10)
    memo = workspace_module.DiskTextMemo()
    texts = {}
    for index in range(workspace_module.MEMO_KEPT_FILES + 1):
        path = tmp_path / f"f{index}.txt"
        path.write_text(f"{index}\n")
        texts[path] = memo.read(path, tmp_path)
    kept = [path for path, text in texts.items() if memo.bytes_of(path, text) is not None]
    assert kept == list(texts)[1:]  # the oldest read went first
    big = tmp_path / "big.txt"
    big.write_text("x" * 11)
    assert memo.bytes_of(big, memo.read(big, tmp_path)) is None


async def test_a_base_read_through_the_workspace_is_not_encoded_again(
    ws: DiskWorkspace, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "f.txt"
    path.write_bytes("naïve\n".encode())
    base = ws.read_text(path)
    encoded: list[str] = []
    real_encode = workspace_module.encode_text
    monkeypatch.setattr(
        workspace_module, "encode_text", lambda text: encoded.append(text) or real_encode(text)
    )
    await ws.apply([write(path, base + "more\n", base)], "t")
    assert encoded == [base + "more\n"]  # the new text only
    # The next change's base is the text just written, not read: it is encoded for its check.
    path.write_bytes(b"changed\n")
    with pytest.raises(EditRejected, match="stale_file"):
        await ws.apply([write(path, "x\n", base + "more\n")], "t")
    assert path.read_bytes() == b"changed\n"


def test_a_root_swapped_for_a_symlink_after_its_first_read_reads_nothing_outside(
    tmp_path: Path,
) -> None:
    from lich_core.confined import read_bytes_within

    root = tmp_path / "proj"
    root.mkdir()
    (root / "a.txt").write_text("mine\n")
    assert read_bytes_within(root, root / "a.txt") == b"mine\n"
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("secret\n")
    root.rename(tmp_path / "proj-moved")
    root.symlink_to(outside, target_is_directory=True)
    with pytest.raises(ToolError, match="path_escape"):
        read_bytes_within(root, root / "secret.txt")


# --- FileChange.deferred: a write whose text is built on first use; a disk write splices ---


def test_a_deferred_change_builds_its_text_once_on_first_read(tmp_path: Path) -> None:
    built: list[str] = []

    def build() -> str:
        built.append("x")
        return "a\nB\n"

    path = tmp_path / "f.txt"
    change = FileChange.deferred(path, build, "a\nb\n", ((LineReplacement(1, 2, "B\n")),))
    assert not change.text_is_built and "<deferred>" in repr(change)
    assert built == []
    assert change.new_text == "a\nB\n" and change.new_text == "a\nB\n"
    assert built == ["x"] and change.text_is_built
    assert change == write(path, "a\nB\n", "a\nb\n")
    with pytest.raises(AttributeError, match="immutable"):
        change.base_text = "other"  # type: ignore[misc]


async def test_a_deferred_write_on_a_base_read_from_disk_is_spliced_not_built(
    ws: DiskWorkspace, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "f.txt"
    path.write_bytes(b"one\r\n\xff raw\r\nthree\r\nfour")
    base = ws.read_text(path)
    new_text = base.replace("three", "THREE") + "\n"
    replacements = FileChange.write(path, new_text, base).replacements
    encoded: list[str] = []
    real_encode = workspace_module.encode_text
    monkeypatch.setattr(
        workspace_module, "encode_text", lambda text: encoded.append(text) or real_encode(text)
    )

    def build() -> str:
        raise AssertionError("a disk write does not need the joined text")

    await ws.apply([FileChange.deferred(path, build, base, replacements)], "t")
    assert path.read_bytes() == b"one\r\n\xff raw\r\nTHREE\r\nfour\n"
    assert encoded == [item.text for item in replacements]  # only the changed lines


async def test_a_deferred_write_on_a_base_not_read_through_the_workspace_builds_its_text(
    ws: DiskWorkspace, tmp_path: Path
) -> None:
    path = tmp_path / "f.txt"
    path.write_text("a\nb\n")
    built: list[str] = []
    replacements = (LineReplacement(1, 2, "B\n"),)
    change = FileChange.deferred(
        path, lambda: built.append("x") or "a\nB\n", "a\nb\n", replacements
    )
    await ws.apply([change], "t")
    assert path.read_text() == "a\nB\n" and built == ["x"]


def test_write_all_writes_every_piece_in_order_through_short_writes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from lich_core import confined

    pieces = [b"", memoryview(b"0123456789")[2:7], b"x" * 5000] + [
        bytes([65 + n % 26]) for n in range(3000)
    ]
    real_writev = os.writev
    calls: list[int] = []

    def short_writev(fd: int, buffers: list[memoryview]) -> int:
        calls.append(len(buffers))
        assert len(buffers) <= confined.WRITEV_MAX_BUFFERS
        return real_writev(fd, [memoryview(b"".join(buffers))[:997]])  # never more than 997 bytes

    monkeypatch.setattr(confined.os, "writev", short_writev)
    path = tmp_path / "out.bin"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT)
    try:
        confined.write_all(fd, pieces)
    finally:
        os.close(fd)
    assert path.read_bytes() == b"".join(bytes(piece) for piece in pieces)
    assert len(calls) > 1
