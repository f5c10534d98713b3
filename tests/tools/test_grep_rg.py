"""grep_files' rg plumbing: the bulk parsers of rg's output and notes, the child runner, and odd
files end to end (binary, long lines, CRLF, names with spaces/colons/newlines, the caps)."""

from __future__ import annotations

import asyncio
import os
import sys
import time
from pathlib import Path

import pytest

from lich_core.hashline.anchors import line_hash
from lich_core.tools.builtin import grep_files
from lich_core.tools.builtin.grep_files import TOOL as GREP_FILES
from lich_core.tools.builtin.grep_files import (
    find_rg,
    parse_rg_binary,
    parse_rg_matches,
    rg_tree_command,
    run_captured,
)
from lich_core.tools.types import ToolContext
from lich_core.vocabulary import CancelToken
from tests.support.processes import pid_alive
from tests.support.provider_helpers import wait_until

needs_rg = pytest.mark.skipif(find_rg() is None, reason="rg is not installed")
OMITTED = b"[Omitted long matching line]"


# --- parse_rg_matches: rg's `--null --line-number --max-columns=1` records ---


def test_records_group_per_file_and_lose_the_dot_slash() -> None:
    out = b"./a.py\x001:" + OMITTED + b"\n./a.py\x007:" + OMITTED + b"\n./sub/b.txt\x0012:x\n"
    assert parse_rg_matches(out) == {"a.py": [1, 7], "sub/b.txt": [12]}


def test_names_with_spaces_colons_and_newlines() -> None:
    out = (
        b"./with space.txt\x003:" + OMITTED + b"\n"
        b"./c:o:l.txt\x004:" + OMITTED + b"\n"
        b"./new\nline.txt\x001:" + OMITTED + b"\n"
        b"./new\nline.txt\x002:" + OMITTED + b"\n"
        b"./ends with newline\n\x005:" + OMITTED + b"\n"
        b"./9:looks like a record\x006:" + OMITTED + b"\n"
    )
    assert parse_rg_matches(out) == {
        "with space.txt": [3],
        "c:o:l.txt": [4],
        "new\nline.txt": [1, 2],
        "ends with newline\n": [5],
        "9:looks like a record": [6],
    }


def test_short_lines_are_printed_whole_and_parse_the_same() -> None:
    # --max-columns=1 leaves a one-byte line as it is, a NUL or a colon included.
    out = b"./a\x001:x\n./a\x002::\n./a\x003:\x00\n./b\x001:\n"
    assert parse_rg_matches(out) == {"a": [1, 2, 3], "b": [1]}


def test_non_utf8_names_round_trip_and_a_file_seen_twice_keeps_every_line() -> None:
    name = b"caf\xe9.txt"  # Latin-1 bytes: not UTF-8
    out = b"./" + name + b"\x001:x\n./other\x002:y\n./" + name + b"\x009:z\n"
    files = parse_rg_matches(out)
    assert files == {os.fsdecode(name): [1, 9], "other": [2]}
    assert os.fsencode(next(iter(files))) == name


def test_warning_lines_between_records_are_no_part_of_a_path() -> None:
    out = (
        b"./late.bin\x001:" + OMITTED + b"\n"
        b"./late.bin: WARNING: stopped searching binary file after match "
        b'(found "\\0" byte around offset 130000)\n'
        b"./long.js\x001:" + OMITTED + b"\n"
        b"./odd\nname.bin: WARNING: stopped searching binary file after match (found ...)\n"
        b"./new\nline.txt\x002:" + OMITTED + b"\n"
    )
    assert parse_rg_matches(out) == {"late.bin": [1], "long.js": [1], "new\nline.txt": [2]}


def test_a_warning_line_without_names_holding_newlines() -> None:
    out = (
        b"./late.bin\x001:" + OMITTED + b"\n"
        b"./late.bin: WARNING: stopped searching binary file after match (found ...)\n"
        b"./long.js\x001:" + OMITTED + b"\n"
        b"./b\x007:\x00\n"  # a one-byte line, a NUL: two NULs, one line end, the counts even out
    )
    assert out.count(b"\0") == out.count(b"\n")
    assert parse_rg_matches(out) == {"late.bin": [1], "long.js": [1], "b": [7]}


def test_no_output_and_a_cut_last_record() -> None:
    assert parse_rg_matches(b"") == {}
    # A record without its line end (rg killed mid-write) is not taken.
    assert parse_rg_matches(b"./a\x001:x\n./a\x002:" + OMITTED[:5]) == {"a": [1]}


# --- parse_rg_binary: rg's --debug notes ---


def _note(module: str, text: bytes) -> bytes:
    return b"rg: DEBUG|" + module.encode() + b"|crates/x/src/y.rs:12: " + text + b"\n"


def test_binary_notes_name_the_files() -> None:
    err = b"".join(
        [
            _note("rg::flags::parse", b"not reading config files because --no-config is present"),
            _note("ignore::walk", b"ignoring ./big.log: 2097153 bytes"),
            _note("grep_printer::standard", b"ignoring ./img.png: found binary data at offset 3"),
            _note(
                "grep_printer::standard",
                b"ignoring ./odd\nname: x.bin: found binary data at offset 70000",
            ),
        ]
    )
    assert parse_rg_binary(err) == ["img.png", "odd\nname: x.bin"]


def test_binary_notes_without_notes() -> None:
    assert parse_rg_binary(b"") == []
    assert parse_rg_binary(_note("globset", b"built glob set; 0 literals, 7 basenames")) == []


# --- run_captured: the child runner ---


async def test_run_captured_returns_output_past_a_pipe_buffer_and_the_exit_code() -> None:
    code = "import sys; sys.stdout.write('x' * 1_000_000); sys.stderr.write('err'); sys.exit(3)"
    finished = await run_captured(
        [sys.executable, "-c", code], None, None, time.monotonic() + 60, CancelToken()
    )
    assert finished == (b"x" * 1_000_000, b"err", 3)


async def test_run_captured_feeds_stdin_from_a_file() -> None:
    code = "import sys; sys.stdout.write(sys.stdin.read().upper())"
    with grep_files._scratch_file() as stdin:
        stdin.write(b"hello")
        stdin.seek(0)
        finished = await run_captured(
            [sys.executable, "-c", code], None, stdin, time.monotonic() + 60, CancelToken()
        )
    assert finished is not None and finished[0] == b"HELLO"


def _blocking_child(pid_file: Path) -> list[str]:
    """A child that publishes its pid (whole, by a rename), then waits forever on a pipe nobody
    writes to."""
    code = (
        f"import os; path = {str(pid_file)!r}; open(path + '.tmp', 'w').write(str(os.getpid())); "
        "os.replace(path + '.tmp', path); os.read(os.pipe()[0], 1)"
    )
    return [sys.executable, "-c", code]


async def test_run_captured_kills_and_reaps_the_child_on_cancel_and_at_the_deadline(
    tmp_path: Path,
) -> None:
    pid_file = tmp_path / "pid"
    cancel = CancelToken()
    task = asyncio.ensure_future(
        run_captured(_blocking_child(pid_file), None, None, time.monotonic() + 3600, cancel)
    )
    await wait_until(pid_file.exists)
    pid = int(pid_file.read_text())
    cancel.cancel()
    finished = await task
    assert finished is not None and finished[2] < 0  # killed by a signal
    assert not pid_alive(pid)
    # A deadline already past: the child is killed at once and the run says it did not finish.
    assert (
        await run_captured(
            _blocking_child(tmp_path / "pid2"), None, None, time.monotonic() - 1, CancelToken()
        )
        is None
    )


async def test_run_captured_of_a_cancelled_task_kills_the_child(tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    task = asyncio.ensure_future(
        run_captured(_blocking_child(pid_file), None, None, time.monotonic() + 3600, CancelToken())
    )
    await wait_until(pid_file.exists)
    pid = int(pid_file.read_text())
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await wait_until(lambda: not pid_alive(pid))


# --- end to end, both engines ---


ENGINES = ["python"] + (["rg"] if find_rg() else [])


@pytest.fixture(params=ENGINES)
def engine(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("LICH_GREP_ENGINE", request.param)
    return request.param


def write(root: Path, rel: str, data: bytes) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def odd_tree(root: Path) -> None:
    write(root, "with space.txt", b"x\nneedle one\n")
    write(root, "c:o:l.txt", b"needle two\n")
    write(root, "new\nline.txt", b"needle three\n")
    write(root, "crlf.txt", b"first\r\nneedle four\r\nlast\r\n")
    # A line longer than rg's buffer; rg prints it omitted (--max-columns), the row has it whole.
    write(root, "long.js", b"a" * 70_000 + b" needle five " + b"b" * 70_000 + b"\nneedle six\n")
    write(root, "early.bin", b"needle\0binary\n")
    # The NUL comes past rg's first buffer: rg has printed matches by then, which must not count.
    write(root, "late.bin", b"needle early\n" * 10_000 + b"\0needle late\n")
    write(root, "big.txt", b"needle\n" + b"y" * (2 * 1024 * 1024))


LONG = "a" * 70_000 + " needle five " + "b" * 70_000


def ctx_for(root: Path) -> ToolContext:
    return ToolContext(work_dir=root)


async def test_odd_files_end_to_end(tmp_path: Path, engine: str) -> None:
    odd_tree(tmp_path)
    ctx = ctx_for(tmp_path)
    result = await GREP_FILES.execute({"pattern": "needle"}, ctx)
    assert result.ok, result.error
    lines = result.output.split("\n")
    assert lines == [
        "c:o:l.txt",
        f"*1:{line_hash('needle two')}|needle two",
        "",
        "crlf.txt",
        f"*2:{line_hash('needle four' + chr(13))}|needle four\r",
        "",
        "long.js",
        f"*1:{line_hash(LONG)}|{LONG}",
        f"*2:{line_hash('needle six')}|needle six",
        "",
        "new",
        "line.txt",
        f"*1:{line_hash('needle three')}|needle three",
        "",
        "with space.txt",
        f"*2:{line_hash('needle one')}|needle one",
        "",
        "6 matching lines in 5 files",
        "(skipped 1 file over 2 MiB)",
        "(skipped 2 binary files)",
    ]
    assert result.details["engine"] == engine
    assert ctx.read_state.has_read(tmp_path / "new\nline.txt")
    assert not ctx.read_state.has_read(tmp_path / "late.bin")


async def test_engines_agree_on_odd_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if len(ENGINES) < 2:
        pytest.skip("rg is not installed")
    odd_tree(tmp_path)
    outputs = []
    for name in ENGINES:
        monkeypatch.setenv("LICH_GREP_ENGINE", name)
        # The pattern matches big.txt too: a file over 2 MiB that does not match is counted by
        # the Python engine only (rg searches it; see the rg test above).
        result = await GREP_FILES.execute(
            {"pattern": r"needle( \w+)?", "context": 1}, ctx_for(tmp_path)
        )
        outputs.append(
            (result.output, {key: result.details[key] for key in result.details if key != "engine"})
        )
    assert outputs[0] == outputs[1]


async def test_the_caps_count_every_hidden_file_and_line_of_a_large_output(
    tmp_path: Path, engine: str
) -> None:
    # 600 files x 300 matching lines: rg's output (~6 MB) is far past a pipe's buffer.
    body = b"hit\n" * 300
    for index in range(600):
        write(tmp_path, f"d{index // 100}/f{index:03}.txt", body)
    result = await GREP_FILES.execute({"pattern": "hit"}, ctx_for(tmp_path))
    assert result.ok, result.error
    # 1,000 rows: three files whole and 100 rows of the fourth; the rest is counted, not shown.
    assert result.details["files"] == 4 and result.details["matches"] == 1_000
    assert (
        result.details["hidden_files"] == 596
        and result.details["hidden_matches"] == 600 * 300 - 1_000
    )
    assert result.output.splitlines()[-1] == (
        "(not shown: 179000 more matching lines in 596 more files; narrow the pattern, path or glob)"
    )
    capped = await GREP_FILES.execute({"pattern": "hit", "max_results": 5}, ctx_for(tmp_path))
    assert capped.details["matches"] == 5 and capped.details["hidden_matches"] == 600 * 300 - 5


@needs_rg
async def test_rg_searches_files_over_2_mib_and_counts_only_the_matching_ones_it_skips(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LICH_GREP_ENGINE", "rg")
    write(tmp_path, "a.txt", b"needle small\n")
    write(tmp_path, "big-hit.log", b"y" * (2 * 1024 * 1024) + b"\nneedle big\n")
    write(tmp_path, "big-miss.log", b"z\n" * (1024 * 1024 + 1))
    result = await GREP_FILES.execute({"pattern": "needle"}, ctx_for(tmp_path))
    assert result.ok, result.error
    assert result.output.splitlines() == [
        "a.txt",
        f"*1:{line_hash('needle small')}|needle small",
        "",
        "1 matching line in 1 file",
        "(skipped 1 file over 2 MiB)",
    ]
    assert result.details["too_large"] == 1
    assert not ctx_for(tmp_path).read_state.has_read(tmp_path / "big-hit.log")
    # The Python engine never reads them, so it counts both.
    monkeypatch.setenv("LICH_GREP_ENGINE", "python")
    python = await GREP_FILES.execute({"pattern": "needle"}, ctx_for(tmp_path))
    assert python.details["too_large"] == 2


@needs_rg
async def test_rg_stops_a_file_at_the_per_file_cap_and_the_counts_say_at_least(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LICH_GREP_ENGINE", "rg")
    monkeypatch.setattr(grep_files, "MAX_RG_MATCHES_PER_FILE", 100)
    for index in range(20):
        write(tmp_path, f"f{index:02}.txt", b"hit\n" * 300)
    result = await GREP_FILES.execute({"pattern": "hit"}, ctx_for(tmp_path))
    assert result.ok, result.error
    # rg reported 100 lines of each file: ten files fill the 1,000 rows.
    assert result.details["files"] == 10 and result.details["matches"] == 1_000
    assert result.output.splitlines()[-1] == (
        "(not shown: at least 1000 more matching lines in 10 more files; narrow the pattern, path or glob)"
    )
    # Under the cap the count is exact and says so by leaving "at least" out.
    monkeypatch.setattr(grep_files, "MAX_RG_MATCHES_PER_FILE", 301)
    exact = await GREP_FILES.execute({"pattern": "hit"}, ctx_for(tmp_path))
    assert exact.output.splitlines()[-1].startswith("(not shown: 5000 more matching lines in ")


@needs_rg
async def test_the_tree_search_runs_the_command_the_benchmark_times(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LICH_GREP_ENGINE", "rg")
    seen: list[list[str]] = []
    original = grep_files.run_captured

    async def spy(argv, cwd, stdin, deadline, cancel):  # type: ignore[no-untyped-def]
        seen.append(list(argv))
        return await original(argv, cwd, stdin, deadline, cancel)

    monkeypatch.setattr(grep_files, "run_captured", spy)
    write(tmp_path, "a.txt", b"hit\n")
    result = await GREP_FILES.execute({"pattern": "hit", "glob": "*.txt"}, ctx_for(tmp_path))
    assert result.ok and result.details["matches"] == 1
    assert seen == [rg_tree_command(find_rg() or "rg", "hit", "*.txt")]
