"""read_file, grep_files and apply_patch on real files, through the Workspace seam."""

from __future__ import annotations

import asyncio
import json
import os
import tempfile
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lich_core.hashline.anchors import line_hash, render_rows, split_lines
from lich_core.read_state_file import load_read_state, save_read_state
from lich_core.tools.builtin.apply_patch import TOOL as APPLY_PATCH
from lich_core.tools.builtin.grep_files import TOOL as GREP_FILES
from lich_core.tools.builtin.grep_files import find_rg
from lich_core.tools.builtin.read_file import TOOL as READ_FILE
from lich_core.tools.types import ToolContext
from lich_core.workspace import DiskWorkspace
from tests.support.workspaces import BufferWorkspace


def make_ctx(root: Path, workspace: DiskWorkspace | None = None) -> ToolContext:
    return ToolContext(work_dir=root, workspace=workspace)


def write(root: Path, rel: str, text: str | bytes) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8", newline="")
    return path


def rows_of(output: str) -> dict[int, str]:
    """{line: "LINE:HH"} from rendered rows (read or grep output)."""
    found: dict[int, str] = {}
    for row in output.splitlines():
        head, sep, _ = row.lstrip("* ").partition("|")
        number, colon, digest = head.partition(":")
        if sep and colon and number.isdigit() and len(digest) == 2:
            found[int(number)] = head
    return found


async def read(ctx: ToolContext, path: str, **args) -> str:
    result = await READ_FILE.execute({"path": path, **args}, ctx)
    assert result.ok, result.error
    return result.output


# --- read_file ---


async def test_read_file_rows_ranges_and_read_state(tmp_path):
    path = write(tmp_path, "a.txt", "one\ntwo\nthree\n")
    ctx = make_ctx(tmp_path)
    assert await read(ctx, "a.txt") == render_rows(["one", "two", "three"])
    assert (
        await read(ctx, "a.txt", start=2, end=99)
        == f"2:{line_hash('two')}|two\n3:{line_hash('three')}|three"
    )
    assert await read(ctx, "a.txt", start=2, end=2, raw=True) == "two"
    assert ctx.read_state.has_read(path)


async def test_read_file_errors(tmp_path):
    write(tmp_path, "a.txt", "one\ntwo\n")
    write(tmp_path, "bin.dat", b"abc\0def")
    write(tmp_path, "big.txt", "x" * (2 * 1024 * 1024 + 1))
    write(tmp_path, ".lich/config.json", "{}")
    (tmp_path / "dir").mkdir()
    ctx = make_ctx(tmp_path)

    async def error(**args) -> str:
        result = await READ_FILE.execute(args, ctx)
        assert not result.ok
        return result.error

    assert (await error(path="a.txt", start=3)).startswith(
        "out_of_range:"
    ) and "2 lines" in await error(path="a.txt", start=3)
    assert (await error(path="missing.txt")) == "not_found: missing.txt"
    assert (await error(path="bin.dat")).startswith("binary_file: bin.dat")
    big = await error(path="big.txt")
    assert big.startswith("file_too_large: big.txt") and "grep_files" in big
    assert (await error(path=".lich/config.json")).startswith("forbidden_path:")
    assert (await error(path="../x")).startswith("path_escape:")
    assert (await error(path="dir")).startswith("is_directory:")
    assert (await error()).startswith("missing_arg: path")


async def test_read_file_empty_crlf_unicode_and_no_final_newline(tmp_path):
    write(tmp_path, "empty.txt", "")
    write(tmp_path, "crlf.txt", "a\r\nb\r\n")
    write(tmp_path, "uni.txt", "café\n数据\n🙂\nlone\rcr")
    ctx = make_ctx(tmp_path)
    assert await read(ctx, "empty.txt") == "(empty file)"
    assert ctx.read_state.has_read(tmp_path / "empty.txt")
    assert await read(ctx, "crlf.txt") == render_rows(
        ["a\r", "b\r"]
    )  # the "\r" is part of the line
    assert await read(ctx, "uni.txt") == render_rows(["café", "数据", "🙂", "lone\rcr"])


async def test_read_file_caps_lines_and_bytes_with_a_closing_line(tmp_path):
    write(tmp_path, "long.txt", "".join(f"line {n}\n" for n in range(1, 2501)))
    ctx = make_ctx(tmp_path)
    out = await read(ctx, "long.txt")
    assert out.splitlines()[-1] == "(lines 1-1000 of 2500 shown; read on with start=1001)"
    assert len(out.splitlines()) == 1001
    out = await read(ctx, "long.txt", start=2001)
    assert out.splitlines()[0].startswith("2001:") and out.splitlines()[-1].startswith("2500:")

    write(tmp_path, "wide.txt", ("w" * 999 + "\n") * 600)  # 600 KB
    out = await read(ctx, "wide.txt")
    assert len(out.encode()) <= 256 * 1024 + 200
    last = out.splitlines()[-1]
    assert last.startswith("(lines 1-") and "read on with start=" in last

    write(tmp_path, "oneline.txt", "z" * 400_000 + "\n")
    out = await read(ctx, "oneline.txt")
    assert out.startswith(f"1:{line_hash('z' * 400_000)}|zzz") and "more characters)" in out


async def test_read_file_sees_the_editor_buffer(tmp_path):
    path = write(tmp_path, "a.txt", "disk\n")
    unsaved = write(tmp_path, "b.txt", "x\n")
    (unsaved).unlink()
    workspace = BufferWorkspace(tmp_path, {path: "buffer\n", unsaved: "new buffer\n"})
    ctx = make_ctx(tmp_path, workspace)
    assert await read(ctx, "a.txt") == f"1:{line_hash('buffer')}|buffer"
    assert await read(ctx, "b.txt") == f"1:{line_hash('new buffer')}|new buffer"


# --- grep_files (both engines) ---

ENGINES = ["python"] + (["rg"] if find_rg() else [])


@pytest.fixture(params=ENGINES)
def engine(request, monkeypatch):
    monkeypatch.setenv("LICH_GREP_ENGINE", request.param)
    return request.param


def make_tree(root: Path) -> None:
    write(root, "src/app.py", "import os\n\ndef main():\n    return find_me()\n")
    write(root, "src/util.py", "def find_me():\n    return 1\n")
    write(root, "README.md", "call find_me to start\n")
    write(root, ".hidden/conf.txt", "find_me hidden\n")
    write(root, ".gitignore", "ignored/\n")
    write(root, "ignored/x.txt", "find_me ignored\n")
    write(root, "node_modules/pkg/index.js", "find_me()\n")
    write(root, ".git/config", "find_me\n")
    write(root, "__pycache__/m.pyc", "find_me\n")
    write(root, "dist/bundle.js", "find_me\n")
    write(root, "sub/.cursor/rules.txt", "find_me\n")
    write(root, "sub/.venv/lib/site.py", "find_me\n")
    write(root, ".lich/config.json", '{"find_me": 1}\n')
    write(root, "data.bin", b"find_me\0\1\2")
    write(root, "huge.log", "find_me\n" + "y" * (2 * 1024 * 1024))
    os.symlink(root / "src" / "util.py", root / "link.py")
    os.symlink(root / "src", root / "linkdir")


async def grep(ctx: ToolContext, **args):
    result = await GREP_FILES.execute(args, ctx)
    assert result.ok, result.error
    return result


async def test_grep_tree_semantics(tmp_path, engine):
    make_tree(tmp_path)
    ctx = make_ctx(tmp_path)
    result = await grep(ctx, pattern=r"find_me\b")
    assert result.output == "\n".join(
        [
            ".hidden/conf.txt",
            f"*1:{line_hash('find_me hidden')}|find_me hidden",
            "",
            "README.md",
            f"*1:{line_hash('call find_me to start')}|call find_me to start",
            "",
            "ignored/x.txt",
            f"*1:{line_hash('find_me ignored')}|find_me ignored",
            "",
            "src/app.py",
            f"*4:{line_hash('    return find_me()')}|    return find_me()",
            "",
            "src/util.py",
            f"*1:{line_hash('def find_me():')}|def find_me():",
            "",
            "5 matching lines in 5 files",
            "(skipped 1 file over 2 MiB)",
            "(skipped 1 binary file)",
        ]
    )
    assert result.details["engine"] == engine
    assert ctx.read_state.has_read(tmp_path / "src" / "util.py")
    assert not ctx.read_state.has_read(tmp_path / "link.py")


async def test_grep_context_and_separators(tmp_path, engine):
    write(
        tmp_path,
        "f.txt",
        "".join(f"{'hit' if n in (2, 3, 9) else 'line'} {n}\n" for n in range(1, 13)),
    )
    ctx = make_ctx(tmp_path)
    result = await grep(ctx, pattern="^hit", path="f.txt", context=1)
    lines = split_lines((tmp_path / "f.txt").read_text())

    def row(number: int, marker: str) -> str:
        return f"{marker}{number}:{line_hash(lines[number - 1])}|{lines[number - 1]}"

    assert result.output.splitlines()[:9] == [
        "f.txt",
        row(1, " "),
        row(2, "*"),
        row(3, "*"),
        row(4, " "),
        "--",
        row(8, " "),
        row(9, "*"),
        row(10, " "),
    ]
    assert ctx.read_state.has_read(tmp_path / "f.txt")


async def test_grep_globs(tmp_path, engine):
    make_tree(tmp_path)
    ctx = make_ctx(tmp_path)

    async def files(glob: str) -> list[str]:
        output = (await grep(ctx, pattern="find_me", glob=glob)).output
        return [
            line
            for line in output.splitlines()
            if line and line[0] not in "* (" and "matching" not in line
        ]

    assert await files("*.py") == ["src/app.py", "src/util.py"]
    assert await files("src/*.py") == ["src/app.py", "src/util.py"]
    assert await files("**/util.py") == ["src/util.py"]
    assert await files("!*.py") == [".hidden/conf.txt", "README.md", "ignored/x.txt"]
    assert await files("*.{md,txt}") == [".hidden/conf.txt", "README.md", "ignored/x.txt"]


async def test_grep_caps_files_and_rows_and_counts_the_overflow(tmp_path, engine):
    for index in range(105):
        write(tmp_path, f"d/f{index:03}.txt", "match\nmatch\n")
    ctx = make_ctx(tmp_path)
    result = await grep(ctx, pattern="match")
    assert result.details["files"] == 100 and result.details["hidden_files"] == 5
    assert "(not shown: 10 more matching lines in 5 more files;" in result.output
    result = await grep(ctx, pattern="match", max_results=3)
    assert result.details["matches"] == 3
    assert result.output.splitlines()[-1].startswith(
        "(not shown: 207 more matching lines in 103 more files"
    )


async def test_grep_caps_rows_at_one_thousand_by_default(tmp_path, engine):
    write(tmp_path, "many.txt", "hit\n" * 1_500)
    write(tmp_path, "z.txt", "hit\n")
    result = await grep(make_ctx(tmp_path), pattern="hit")
    assert result.details["matches"] == 1_000 and result.details["hidden_matches"] == 501
    assert result.output.splitlines()[-1] == (
        "(not shown: 501 more matching lines in 1 more file; narrow the pattern, path or glob)"
    )
    single = await grep(make_ctx(tmp_path), pattern="hit", path="many.txt")
    assert (
        single.output.splitlines()[-1]
        == "(not shown: 500 more matching lines; narrow the pattern, path or glob)"
    )


async def test_grep_never_shows_denied_files(tmp_path, engine):
    write(tmp_path, ".lich/config.json", '{"secret_key": 1}\n')
    write(tmp_path, ".lich/a.md", "secret_key mentioned\n")
    os.symlink(".lich", tmp_path / "d")
    ctx = make_ctx(tmp_path)
    for path in (".lich", "d", "d/"):
        # Through a symlinked directory too: the deny list sees where the files really are.
        result = await grep(ctx, pattern="secret_key", path=path)
        assert (
            result.output
            == f".lich/a.md\n*1:{line_hash('secret_key mentioned')}|secret_key mentioned\n\n1 matching line in 1 file"
        )
    # Not even counted as an overflow file.
    capped = await grep(ctx, pattern="secret_key", path=".lich", max_results=1)
    assert capped.details["hidden_files"] == 0 and "not shown" not in capped.output
    assert not ctx.read_state.has_read(tmp_path / ".lich" / "config.json")
    assert not ctx.read_state.has_read(tmp_path / "d" / "config.json")
    denied = await GREP_FILES.execute({"pattern": "x", "path": "./.lich//config.json"}, ctx)
    assert denied.error.startswith("forbidden_path:")


async def test_python_walk_stops_at_the_entry_limit_and_says_so(tmp_path, monkeypatch):
    from lich_core.tools.builtin import find_files, grep_files

    assert grep_files.MAX_WALK_ENTRIES == find_files.MAX_WALK_ENTRIES == 100_000  # kli's bound
    monkeypatch.setenv("LICH_GREP_ENGINE", "python")
    monkeypatch.setattr(grep_files, "MAX_WALK_ENTRIES", 30)
    for index in range(50):
        write(tmp_path, f"d/f{index:02}.txt", "hit\n")
    result = await grep(make_ctx(tmp_path), pattern="hit")
    # The root's one entry (d) and 29 files of d make 30 entries.
    assert result.details["stopped"] == "entry limit of 30 entries visited"
    assert result.details["files"] == 29
    assert result.output.splitlines()[-1] == (
        "(walk stopped early at the entry limit of 30 entries visited; results are partial, narrow the path or glob)"
    )
    monkeypatch.setattr(grep_files, "MAX_WALK_ENTRIES", 51)
    complete = await grep(make_ctx(tmp_path), pattern="hit")
    assert complete.details["stopped"] is None and complete.details["files"] == 50


async def test_grep_searches_editor_buffers_instead_of_disk(tmp_path, engine):
    disk = write(tmp_path, "a.txt", "old needle\n")
    write(tmp_path, "b.txt", "needle on disk\n")
    workspace = BufferWorkspace(
        tmp_path, {disk: "fresh text\nnew needle\n", tmp_path / "unsaved.txt": "needle\n"}
    )
    ctx = make_ctx(tmp_path, workspace)
    result = await grep(ctx, pattern="needle")
    assert result.output.splitlines()[:8] == [
        "a.txt", f"*2:{line_hash('new needle')}|new needle", "",
        "b.txt", f"*1:{line_hash('needle on disk')}|needle on disk", "",
        "unsaved.txt", f"*1:{line_hash('needle')}|needle",
    ]  # fmt: skip
    single = await grep(ctx, pattern="fresh", path="a.txt")
    assert single.output.splitlines()[:2] == ["a.txt", f"*1:{line_hash('fresh text')}|fresh text"]


async def test_grep_errors(tmp_path, engine):
    write(tmp_path, ".lich/config.json", "{}")
    ctx = make_ctx(tmp_path)
    result = await GREP_FILES.execute({"pattern": "(unclosed"}, ctx)
    assert result.error.startswith("invalid_pattern:")
    result = await GREP_FILES.execute({"pattern": "x", "path": ".lich/config.json"}, ctx)
    assert result.error.startswith("forbidden_path:")
    result = await GREP_FILES.execute({"pattern": "x", "path": "nope"}, ctx)
    assert result.error == "not_found: nope"
    assert (await grep(ctx, pattern="absent")).output == "No matches."


async def test_engines_agree(tmp_path, monkeypatch):
    if len(ENGINES) < 2:
        pytest.skip("rg is not installed")
    make_tree(tmp_path)
    outputs = []
    for name in ENGINES:
        monkeypatch.setenv("LICH_GREP_ENGINE", name)
        outputs.append((await grep(make_ctx(tmp_path), pattern=r"find|return", context=1)).output)
    assert outputs[0] == outputs[1]


async def test_lookaround_falls_back_to_python(tmp_path, monkeypatch):
    monkeypatch.setenv("LICH_GREP_ENGINE", "auto")
    write(tmp_path, "a.txt", "foo bar\nfoo baz\n")
    result = await grep(make_ctx(tmp_path), pattern=r"foo (?=baz)")
    assert result.details["matches"] == 1 and "*2:" in result.output


async def test_catastrophic_pattern_is_stopped_and_reported(tmp_path, monkeypatch):
    monkeypatch.setenv("LICH_GREP_ENGINE", "python")
    monkeypatch.setenv("LICH_GREP_TIME_BUDGET_MS", "1000")
    write(tmp_path, "a.txt", "ok line\n" + "a" * 60 + "b\n")
    started = time.monotonic()
    # Look-ahead keeps rg out, and (a|aa)+ backtracks exponentially in Python's re.
    result = await grep(make_ctx(tmp_path), pattern=r"(a|aa)+(?=c)")
    assert time.monotonic() - started < 15
    assert result.details["stopped"] and "search stopped after 1 s" in result.output


async def test_rg_search_is_bounded_by_the_time_budget_too(tmp_path, monkeypatch):
    if "rg" not in ENGINES:
        pytest.skip("rg is not installed")
    monkeypatch.setenv("LICH_GREP_ENGINE", "rg")
    # 1 ms cannot cover starting a process: the budget runs out and the search reports it.
    monkeypatch.setenv("LICH_GREP_TIME_BUDGET_MS", "1")
    write(tmp_path, "a.txt", "hit\n")
    result = await grep(make_ctx(tmp_path), pattern="hit")
    assert result.details["stopped"] == "time budget" and "results are partial" in result.output
    single = await grep(make_ctx(tmp_path), pattern="hit", path="a.txt")
    assert single.details["stopped"] == "time budget"


async def test_rg_handles_patterns_that_backtrack_in_python(tmp_path, monkeypatch):
    if "rg" not in ENGINES:
        pytest.skip("rg is not installed")
    monkeypatch.setenv("LICH_GREP_ENGINE", "rg")
    write(tmp_path, "a.txt", "a" * 60 + "b\n")
    result = await grep(make_ctx(tmp_path), pattern=r"(a+)+$")
    assert not result.details["stopped"] and result.output == "No matches."


# --- apply_patch ---


async def patch(ctx: ToolContext, text: str, **args):
    return await APPLY_PATCH.execute({"input": text, **args}, ctx)


async def test_patch_after_read_and_follow_up_edit_from_result_anchors(tmp_path):
    path = write(tmp_path, "a.py", "def f():\n    return 1\n")
    ctx = make_ctx(tmp_path)
    rows = rows_of(await read(ctx, "a.py"))
    result = await patch(ctx, f"@@ a.py\n= {rows[2]}..{rows[2]}\n~    x = 1\n~    return x\n")
    assert result.ok, result.error
    assert path.read_text() == "def f():\n    x = 1\n    return x\n"
    assert result.output == "Edited a.py (+2 -1)\n" + render_rows(
        ["def f():", "    x = 1", "    return x"]
    )
    fresh = rows_of(result.output)
    result = await patch(ctx, f"@@ a.py\n+ {fresh[3]}\n~# done\n")
    assert result.ok, result.error
    assert path.read_text().endswith("    return x\n# done\n")


async def test_a_result_that_cannot_be_rendered_leaves_the_file_as_it_was(tmp_path, monkeypatch):
    from lich_core.tools.builtin import apply_patch

    path = write(tmp_path, "a.py", "one\ntwo\n")
    ctx = make_ctx(tmp_path)
    rows = rows_of(await read(ctx, "a.py"))

    def broken(*args, **kwargs):
        raise RuntimeError("render broke")

    monkeypatch.setattr(apply_patch, "render_edit_result", broken)
    result = await patch(ctx, f"@@ a.py\n= {rows[2]}..{rows[2]}\n~TWO\n")
    assert not result.ok and "render broke" in result.error
    assert path.read_text() == "one\ntwo\n"  # the result is rendered before anything is written


@pytest.mark.parametrize("line_count", [3000, 9000])
async def test_a_patch_written_to_disk_never_joins_the_new_text(tmp_path, monkeypatch, line_count):
    """The file's new bytes are spliced from its old bytes: the edit's text is not built. A
    file past BYTE_LINES_MIN_BYTES is not split either: its lines come from its bytes."""
    from lich_core.hashline import edit as edit_module
    from lich_core.hashline.patch import parse_patch
    from lich_core.tools.builtin.apply_patch import BYTE_LINES_MIN_BYTES

    original = (
        "".join(f"line {n} caf\u00e9\r\n" for n in range(1, line_count + 1)).encode() + b"\xff tail"
    )
    big = len(original) >= BYTE_LINES_MIN_BYTES
    assert big == (line_count == 9000)
    path = write(tmp_path, "big.txt", original)
    ctx = make_ctx(tmp_path)
    rows = rows_of(await read(ctx, "big.txt", start=1500, end=1502))
    tail = rows_of(await read(ctx, "big.txt", start=line_count + 1))
    joined: list[str] = []
    real = edit_module.FileEdit.new_text

    def counted(edit) -> str:
        joined.append(edit.display)
        return real.fget(edit)

    split_sizes: list[int] = []
    real_split = edit_module.split_lines
    monkeypatch.setattr(edit_module.FileEdit, "new_text", property(counted, real.fset))
    monkeypatch.setattr(
        edit_module, "split_lines", lambda text: split_sizes.append(len(text)) or real_split(text)
    )
    body = f"= {rows[1501]}..{rows[1501]}\n~changed\n+ {tail[line_count + 1]}\n~end\n"
    result = await patch(ctx, f"@@ big.txt\n{body}")
    assert result.ok, result.error
    expected = original.replace(b"line 1501 caf\xc3\xa9\r\n", b"changed\r\n") + b"\r\nend\r\n"
    assert path.read_bytes() == expected
    assert joined == []
    text = original.decode("utf-8", "surrogateescape")
    assert (len(text) in split_sizes) is not big  # the whole text split, or not
    # The result shows the same rows as an edit planned from the split text.
    [section] = parse_patch(f"@@ big.txt\n{body}")
    [reference] = edit_module.plan_edits(
        [edit_module.FileTarget("big.txt", text, True, section.ops)]
    )
    assert result.output == edit_module.render_edit_result(reference)


async def test_grep_match_arms_the_file_for_editing(tmp_path):
    path = write(tmp_path, "a.txt", "alpha\nbeta\n")
    ctx = make_ctx(tmp_path)
    rows = rows_of((await grep(ctx, pattern="beta")).output)
    result = await patch(ctx, f"@@ a.txt\n= {rows[2]}..{rows[2]}\n~BETA\n")
    assert result.ok, result.error
    assert path.read_text() == "alpha\nBETA\n"


async def test_patch_is_whole_or_nothing_across_files(tmp_path):
    a = write(tmp_path, "a.txt", "a1\na2\n")
    b = write(tmp_path, "b.txt", "b1\nb2\n")
    ctx = make_ctx(tmp_path)
    rows_a = rows_of(await read(ctx, "a.txt"))
    rows_b = rows_of(await read(ctx, "b.txt"))
    b.write_text("b1\nchanged\n")  # someone edits b.txt after the read
    result = await patch(
        ctx, f"@@ a.txt\n+ {rows_a[1]}\n~new\n@@ b.txt\n= {rows_b[2]}..{rows_b[2]}\n~B2\n"
    )
    assert not result.ok
    assert (
        result.error.startswith("stale_anchor: b.txt line 2")
        and "Nothing was written" in result.error
    )
    assert a.read_bytes() == b"a1\na2\n" and b.read_bytes() == b"b1\nchanged\n"


async def test_one_change_set_with_minimal_replacements(tmp_path):
    write(tmp_path, "a.txt", "1\n2\n3\n")
    workspace = BufferWorkspace(tmp_path)
    ctx = make_ctx(tmp_path, workspace)
    rows = rows_of(await read(ctx, "a.txt"))
    result = await patch(ctx, f"@@ a.txt\n= {rows[2]}..{rows[2]}\n~two\n@@ new/b.txt\n+\n~hello\n")
    assert result.ok, result.error
    [(changes, _label)] = workspace.applied
    assert [(change.path.name, change.base_text, change.new_text) for change in changes] == [
        ("a.txt", "1\n2\n3\n", "1\ntwo\n3\n"),
        ("b.txt", None, "hello\n"),
    ]
    assert [(r.start, r.end, r.text) for r in changes[0].replacements] == [(1, 2, "two\n")]
    assert "Edited new/b.txt (+1 -0)" in result.output and result.details["files"][1]["created"]


async def test_rejected_edit_is_an_error_and_writes_nothing(tmp_path):
    path = write(tmp_path, "a.txt", "x\n")
    ctx = make_ctx(tmp_path, BufferWorkspace(tmp_path, reject="document version changed"))
    rows = rows_of(await read(ctx, "a.txt"))
    result = await patch(ctx, f"@@ a.txt\n+ {rows[1]}\n~y\n")
    assert result.error == "edit_rejected: document version changed"
    assert path.read_text() == "x\n"


async def test_patch_refusals(tmp_path):
    write(tmp_path, "a.txt", "x\n")
    ctx = make_ctx(tmp_path)
    assert (await patch(ctx, "@@ a.txt\n+ 1:00\n~y\n")).error.startswith("not_read: a.txt")
    assert (await patch(ctx, "@@ ../out.txt\n+\n~y\n")).error.startswith("path_escape:")
    assert (await patch(ctx, "@@ .lich/config.json\n+\n~y\n")).error.startswith("forbidden_path:")
    assert (await patch(ctx, "@@ a.txt\n  + 1:00\n")).error.startswith("patch_syntax: patch line 2")
    assert (await patch(ctx, "@@ new.txt\n+ 1:00\n~y\n")).error.startswith(
        "not_found: new.txt does not exist"
    )
    assert (await APPLY_PATCH.execute({}, ctx)).error == "missing_arg: input"
    assert not (tmp_path / "new.txt").exists() and (tmp_path / "a.txt").read_text() == "x\n"


async def test_patch_edits_the_editor_buffer_text(tmp_path):
    path = write(tmp_path, "a.txt", "disk\n")
    workspace = BufferWorkspace(tmp_path, {path: "buffer\n"})
    ctx = make_ctx(tmp_path, workspace)
    rows = rows_of(await read(ctx, "a.txt"))
    result = await patch(ctx, f"@@ a.txt\n+ {rows[1]}\n~more\n")
    assert result.ok, result.error
    assert workspace.buffers[path] == "buffer\nmore\n" and path.read_text() == "disk\n"


LISP = "(defun f (x)\n  (+ x 1))\n\n(defun g ()\n  2)\n"


async def test_lisp_safe_repair_is_written(tmp_path):
    path = write(tmp_path, "f.lisp", LISP)
    ctx = make_ctx(tmp_path)
    rows = rows_of(await read(ctx, "f.lisp"))
    result = await patch(ctx, f"@@ f.lisp\n= {rows[2]}..{rows[2]}\n~  (+ x 2)\n")
    assert result.ok, result.error
    assert path.read_text() == LISP.replace("(+ x 1))", "(+ x 2))")
    assert "repaired f.lisp: added `)` at the end of line 2" in result.output


async def test_lisp_preview_then_accept(tmp_path):
    path = write(tmp_path, "f.lisp", LISP)
    other = write(tmp_path, "notes.txt", "n\n")
    ctx = make_ctx(tmp_path)
    rows = rows_of(await read(ctx, "f.lisp"))
    notes = rows_of(await read(ctx, "notes.txt"))
    body = f"@@ f.lisp\n+ {rows[5]}\n~(defun h ()\n~  3\n@@ notes.txt\n+ {notes[1]}\n~added h\n"
    result = await patch(ctx, body)
    assert result.ok and result.details["written"] is False
    candidate = result.details["candidate"]
    assert f'apply_patch(accept_repair="{candidate}", path="f.lisp")' in result.output
    assert path.read_text() == LISP and other.read_text() == "n\n"

    wrong = await APPLY_PATCH.execute({"accept_repair": candidate, "path": "notes.txt"}, ctx)
    assert wrong.error.startswith("invalid_arg:")
    accepted = await APPLY_PATCH.execute({"accept_repair": candidate, "path": "f.lisp"}, ctx)
    assert accepted.ok, accepted.error
    assert path.read_text() == LISP + "(defun h ()\n  3)\n" and other.read_text() == "n\nadded h\n"
    again = await APPLY_PATCH.execute({"accept_repair": candidate, "path": "f.lisp"}, ctx)
    assert again.error.startswith("unknown_candidate:")


async def test_lisp_accept_refuses_a_changed_file(tmp_path):
    path = write(tmp_path, "f.lisp", LISP)
    ctx = make_ctx(tmp_path)
    rows = rows_of(await read(ctx, "f.lisp"))
    result = await patch(ctx, f"@@ f.lisp\n= {rows[2]}..{rows[2]}\n~  (+ x 2)\n", repair="preview")
    assert result.details["written"] is False
    path.write_text(LISP + ";; edited meanwhile\n")
    accepted = await APPLY_PATCH.execute(
        {"accept_repair": result.details["candidate"], "path": "f.lisp"}, ctx
    )
    assert accepted.error.startswith("stale_candidate: f.lisp")
    assert path.read_text() == LISP + ";; edited meanwhile\n"


async def test_lisp_reject_policy(tmp_path):
    path = write(tmp_path, "f.el", LISP)
    ctx = make_ctx(tmp_path)
    rows = rows_of(await read(ctx, "f.el"))
    result = await patch(ctx, f"@@ f.el\n= {rows[2]}..{rows[2]}\n~  (+ x 2)\n", repair="reject")
    assert (
        result.error.startswith("lisp_unbalanced: f.el:") and "Nothing was written" in result.error
    )
    assert path.read_text() == LISP
    balanced = await patch(ctx, f"@@ f.el\n= {rows[2]}..{rows[2]}\n~  (+ x 2))\n", repair="reject")
    assert balanced.ok, balanced.error


async def test_lisp_syntax_problem_is_reported_not_repaired(tmp_path):
    path = write(tmp_path, "f.scm", LISP)
    ctx = make_ctx(tmp_path)
    rows = rows_of(await read(ctx, "f.scm"))
    result = await patch(ctx, f'@@ f.scm\n= {rows[2]}..{rows[2]}\n~  (+ x "1))\n')
    assert result.ok, result.error
    assert path.read_text() == LISP.replace("(+ x 1))", '(+ x "1))')
    assert result.output.endswith(
        "\n\nnote: f.scm: unterminated string at line 2 column 8 (not repaired)"
    )


# --- properties through the tools ---

LINE = st.text(alphabet=st.sampled_from("ab é数🙂\t~|"), max_size=6)


def run(coro):
    return asyncio.run(coro)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    lines=st.lists(LINE, min_size=1, max_size=10),
    crlf=st.booleans(),
    data=st.data(),
)
def test_read_patch_read_round_trip(lines, crlf, data):
    ending = "\r\n" if crlf else "\n"
    text = "".join(line + ending for line in lines)
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        path = write(root, "f.txt", text)
        ctx = make_ctx(root)
        rows = rows_of(run(read(ctx, "f.txt")))
        start = data.draw(st.integers(1, len(lines)))
        end = data.draw(st.integers(start, len(lines)))
        payload = data.draw(st.lists(LINE, max_size=3))
        body = "".join("~" + line + "\n" for line in payload)
        result = run(patch(ctx, f"@@ f.txt\n= {rows[start]}..{rows[end]}\n{body}"))
        assert result.ok, result.error
        expected = lines[: start - 1] + payload + lines[end:]
        assert path.read_bytes() == "".join(line + ending for line in expected).encode()
        again = run(read(ctx, "f.txt"))
        assert again == (
            "(empty file)"
            if not expected
            else render_rows([line + ending[:-1] for line in expected])
        )
        # The result's fresh rows are exactly what a new read shows for those lines.
        fresh = rows_of(result.output)
        assert all(rows_of(again)[number] == anchor for number, anchor in fresh.items())


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(lines=st.lists(LINE, min_size=1, max_size=8), data=st.data())
def test_any_invalid_patch_leaves_every_file_byte_identical(lines, data):
    text = "".join(line + "\n" for line in lines)
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        first = write(root, "a.txt", text)
        second = write(root, "b.txt", "keep\n")
        unread = write(root, "unread.txt", "unread\n")
        ctx = make_ctx(root)
        rows = rows_of(run(read(ctx, "a.txt")))
        run(read(ctx, "b.txt"))
        good = f"@@ b.txt\n+ 1:{line_hash('keep')}\n~more\n"
        number = data.draw(st.integers(1, len(lines)))
        anchor = rows[number]
        wrong_digest = (
            f"{(int(anchor.split(':')[1], 16) + data.draw(st.integers(1, 255))) % 256:02x}"
        )
        breakages = [
            f"+ {number}:{wrong_digest}\n~x\n",  # stale
            f"+ {len(lines) + data.draw(st.integers(1, 5))}:aa\n~x\n",  # past the end
            f"- {anchor}..{anchor}\n~x\n",  # payload on a delete
            f"- {anchor}..{anchor}\n= {anchor}..{anchor}\n~x\n",  # overlap
            f" + {anchor}\n~x\n",  # not in column 1
            f"+ {anchor}\nno tilde\n",  # payload without ~
            f"- {number + 1}:00..{anchor}\n",  # reversed range
            f"* {anchor}\n~x\n",  # unknown op
            f"+ {number}:{wrong_digest}x\n~x\n",  # malformed anchor
        ]
        if len(lines) >= 2:
            breakages.append(f"- {rows[1]}..{rows[2]}\n+ {rows[1]}\n~x\n")  # insert inside a range
        breakage = data.draw(st.sampled_from(breakages))
        if data.draw(st.booleans()):
            section = "@@ a.txt\n" + breakage
        else:
            # A valid op on a file that was never read: read-before-edit rejects it.
            section = f"@@ a.txt\n+ {anchor}\n~x\n@@ unread.txt\n+ 1:{line_hash('unread')}\n~x\n"
        order = data.draw(st.booleans())
        patch_text = good + section if order else section + good
        result = run(patch(ctx, patch_text))
        assert not result.ok
        assert first.read_bytes() == text.encode() and second.read_bytes() == b"keep\n"
        assert unread.read_bytes() == b"unread\n"


async def test_read_state_survives_a_save_and_load_between_invocations(tmp_path):
    path = write(tmp_path, "f.lisp", LISP)
    state_file = tmp_path / "state" / "read_state.json"
    first = make_ctx(tmp_path)
    rows = rows_of(await read(first, "f.lisp"))
    save_read_state(first.read_state, state_file)

    second = ToolContext(work_dir=tmp_path, read_state=load_read_state(state_file))
    result = await patch(second, f"@@ f.lisp\n+ {rows[5]}\n~(defun h ()\n~  3\n")
    assert result.details["written"] is False
    save_read_state(second.read_state, state_file)

    third = ToolContext(work_dir=tmp_path, read_state=load_read_state(state_file))
    accepted = await APPLY_PATCH.execute(
        {"accept_repair": result.details["candidate"], "path": "f.lisp"}, third
    )
    assert accepted.ok, accepted.error
    assert path.read_text() == LISP + "(defun h ()\n  3)\n"
    assert not load_read_state(tmp_path / "missing.json").has_read(path)


def test_read_state_loads_the_older_file_format(tmp_path):
    # Files saved before the rows were dropped map each path to its {line: hash} rows.
    state_file = tmp_path / "read_state.json"
    state_file.write_text(
        json.dumps({"seen": {str(tmp_path / "a.txt"): {"1": "c5"}}, "repair_candidates": {"x": {}}})
    )
    loaded = load_read_state(state_file)
    assert loaded.has_read(tmp_path / "a.txt") and not loaded.has_read(tmp_path / "b.txt")
    assert loaded.repair_candidates == {"x": {}}
    save_read_state(loaded, state_file)
    assert load_read_state(state_file).has_read(tmp_path / "a.txt")


async def test_a_two_mib_file_reads_searches_and_patches(tmp_path, engine):
    lines: list[str] = []
    size = 0
    while True:
        n = len(lines) + 1
        line = f"row {n} {'数据' if n % 97 == 0 else 'text'} {'x' * (n % 50)}"
        size += len(line.encode()) + 1
        if size > 2 * 1024 * 1024:
            break
        lines.append(line)
    text = "".join(line + "\n" for line in lines)
    path = write(tmp_path, "big.txt", text)
    ctx = make_ctx(tmp_path)
    last = len(lines)
    out = await read(ctx, "big.txt", start=last - 1)
    assert out == render_rows(lines[-2:], last - 1)
    found = await grep(ctx, pattern=f"^row {last} ")
    assert rows_of(found.output) == {last: f"{last}:{line_hash(lines[-1])}"}
    middle = last // 2
    result = await patch(
        ctx,
        f"@@ big.txt\n- {middle}:{line_hash(lines[middle - 1])}..{middle}:{line_hash(lines[middle - 1])}\n",
    )
    # Only the grep match and the tail read were seen, but validation re-hashes the text itself.
    assert result.ok, result.error
    assert path.read_text() == "".join(
        line + "\n" for index, line in enumerate(lines, 1) if index != middle
    )
