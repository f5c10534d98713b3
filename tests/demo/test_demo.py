"""`lich demo`: the recorded conversation through the real server, printed step by step.

Each run is a real `python -m lich_cli demo` (which starts `python -m lich_lsp` itself), with
TMPDIR pointing into the test's own folder so what the demo leaves behind can be checked.
"""

from __future__ import annotations

import io
import json
import os
import re
import select
import subprocess
import sys
from pathlib import Path

import pytest

from lich_cli.demo import render
from lich_cli.demo.sample_files import RECORDING, bundled, prepare, recorded_prompt
from tests.demo.demo_support import DEMO_TIMEOUT_S, repo_env, run_demo
from tests.support.cli_runner import run_lich

ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
PROMPT = recorded_prompt((bundled() / RECORDING).read_text(encoding="utf-8"))


def temp_env(tmp_path: Path, **extra: str) -> tuple[dict[str, str], Path]:
    temp = tmp_path / "tmp"
    temp.mkdir()
    return repo_env(TMPDIR=str(temp), **extra), temp


def labelled(output: str, label: str) -> list[str]:
    """The text of every line printed with `label` (labels are padded to one width)."""
    return [
        line[len(label) :].strip()
        for line in output.splitlines()
        if re.match(rf"{re.escape(label)}\s", line)
    ]


def test_the_demo_prints_every_step_and_leaves_nothing_behind(
    tmp_path: Path, elsewhere: Path
) -> None:
    env, temp = temp_env(tmp_path)
    done = run_demo(cwd=elsewhere, env=env)
    out = done.stdout
    assert done.returncode == 0, out + done.stderr
    assert not ANSI.search(out), "colour on a pipe"
    assert labelled(out, "prompt") == [PROMPT]
    assert labelled(out, "server")[0].startswith("lich-lsp ")
    tools = labelled(out, "tool")
    assert [t.split(" ", 1)[0] for t in tools] == [
        "read_file",
        "read_file",
        "edit_file",
        "edit_file",
        "terminal",
    ]
    assert labelled(out, "model")[0] == "Let me read the code and its checks first."
    # Each WorkspaceEdit the server sent, as a unified diff of the file it changed.
    edits = labelled(out, "edit")
    assert len(edits) == 2 and edits[0].startswith(
        'stats.py (workspace/applyEdit, label "lich: mean()'
    ), edits
    assert edits[1].startswith("check_stats.py (workspace/applyEdit"), edits
    assert "--- a/stats.py\n+++ b/stats.py\n@@ -2,7 +2,9 @@\n" in out
    assert (
        '\n-    """The arithmetic mean of `values`."""\n+    """The arithmetic mean of `values` (0.0 for an empty list)."""\n+    if not values:\n+        return 0.0\n'
        in out
    )
    assert "+++ b/check_stats.py" in out and "\n+assert mean([]) == 0.0\n" in out
    # The approval question the server asked, and the answer the headless editor gave.
    assert (
        labelled(out, "approval")[0]
        == 'lich wants to run terminal (process/exec): runs `python3 check_stats.py` with bash -lc in the workspace; runs check_stats.py from this repository. Arguments: {"command": "python3 check_stats.py"}'
    )
    assert labelled(out, "allowed")[0].startswith("Allow once")
    results = labelled(out, "result")
    assert results[-1].startswith("ok terminal") and "all checks passed" in results[-1], results
    assert all(r.startswith("ok ") for r in results), results
    assert labelled(out, "answer")[0].startswith("mean() now returns 0.0 for an empty list")
    assert labelled(out, "done") == [
        "final after 5 turn(s) (tokens in 13082, out 348, as recorded)"
    ]
    # The server's work-done progress: begun with the task's title, a line per turn, ended.
    progress = labelled(out, "progress")
    assert progress[0].startswith("began: lich: mean() crashes")
    assert [p for p in progress if p.startswith("turn")] == [f"turn {n}" for n in range(1, 6)]
    assert progress[-1] == "ended: final"
    order = [
        out.index(marker)
        for marker in (
            "prompt ",
            "tool      read_file",
            "--- a/stats.py",
            "approval ",
            "allowed ",
            "ok terminal",
            "answer ",
            "done ",
        )
    ]
    assert order == sorted(order), "steps out of order"
    assert "Next:" in out and "docs/providers.md" in out and "docs/getting-started.md" in out
    # Nothing written where it ran, its temp dir removed, nothing in the user's state dir.
    assert list(elsewhere.iterdir()) == []
    assert list(temp.iterdir()) == []
    state = Path(os.environ["XDG_STATE_HOME"])
    assert not state.exists() or list(state.iterdir()) == []


def test_keep_leaves_the_edited_workspace_where_it_says(
    tmp_path: Path, elsewhere: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # In-process (lich_cli.main.main), the server still a real child process.
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr("tempfile.tempdir", None)  # tempfile caches the dir it chose
    done = run_lich("demo", "--keep", cwd=elsewhere)
    assert done.returncode == 0, done.stdout + done.stderr
    kept = re.search(r"the workspace is kept in (\S+)", done.stderr)
    assert kept, done.stderr
    workspace = Path(kept.group(1))
    assert workspace.parent.parent == tmp_path.resolve()
    # The edits reached disk (lich/saveDocuments), and the sample's checks pass on them.
    stats = (workspace / "stats.py").read_text(encoding="utf-8")
    assert "    if not values:\n        return 0.0\n" in stats
    assert "assert mean([]) == 0.0\n" in (workspace / "check_stats.py").read_text(encoding="utf-8")
    checks = subprocess.run(
        [sys.executable, "check_stats.py"],
        cwd=workspace,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert checks.stdout.strip() == "all checks passed"
    # The server's transcript went to the demo's own state dir, not the user's.
    assert list((workspace.parent / "state").rglob("*.md"))


def test_the_bundled_sample_is_untouched_and_raises_before_the_fix(tmp_path: Path) -> None:
    setup = prepare(str(tmp_path))
    try:
        run = subprocess.run(
            [sys.executable, "-c", "import stats; stats.mean([])"],
            cwd=setup.workspace,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert "ZeroDivisionError" in run.stderr
        assert (bundled() / "sample" / "stats.py").read_text(encoding="utf-8") == (
            setup.workspace / "stats.py"
        ).read_text(encoding="utf-8")
        assert (
            json.loads(setup.recording.read_text(encoding="utf-8").splitlines()[0])["prompt"]
            == setup.prompt
        )
    finally:
        setup.remove()
    assert not setup.root.exists()


def test_colour_always_colours_the_diff(tmp_path: Path, elsewhere: Path) -> None:
    env, _ = temp_env(tmp_path)
    done = run_demo("--color", "always", cwd=elsewhere, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "\x1b[32m+    if not values:\x1b[0m" in done.stdout
    assert '\x1b[31m-    """The arithmetic mean of `values`."""\x1b[0m' in done.stdout
    assert "\x1b[36m@@ -2,7 +2,9 @@\x1b[0m" in done.stdout


def _read_pty(master: int, process: subprocess.Popen[bytes]) -> str:
    """Everything the child writes to the terminal, until it exits (each read bounded)."""
    chunks: list[bytes] = []
    while True:
        ready, _, _ = select.select([master], [], [], DEMO_TIMEOUT_S)
        if not ready:
            process.kill()
            raise AssertionError(
                "the demo wrote nothing for a long time:\n"
                + b"".join(chunks).decode(errors="replace")
            )
        try:
            data = os.read(master, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    process.wait(timeout=DEMO_TIMEOUT_S)
    return b"".join(chunks).decode("utf-8", errors="replace")


@pytest.mark.parametrize("no_color", [False, True], ids=["tty", "tty-NO_COLOR"])
def test_on_a_terminal_colour_unless_no_color_and_a_live_progress_line(
    tmp_path: Path, elsewhere: Path, no_color: bool
) -> None:
    import pty

    env, _ = temp_env(tmp_path, **({"NO_COLOR": "1"} if no_color else {}))
    master, slave = pty.openpty()
    try:
        process = subprocess.Popen(
            [sys.executable, "-m", "lich_cli", "demo"],
            cwd=elsewhere,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=slave,
            stderr=slave,
        )
        os.close(slave)
        slave = -1
        out = _read_pty(master, process)
    finally:
        os.close(master)
        if slave != -1:
            os.close(slave)
    assert process.returncode == 0, out
    colours = re.findall(r"\x1b\[3[1-6]m", out)
    assert bool(colours) is not no_color, out
    # The progress line is drawn and cleared in place (never printed as `progress` lines here).
    assert render.CLEAR_LINE in out and "... lich: mean() crashes" in out
    assert not re.search(r"^progress\s", ANSI.sub("", out), re.MULTILINE)


def test_use_colour_follows_the_terminal_and_no_color() -> None:
    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    assert render.use_colour(Terminal(), env={}) is True
    assert render.use_colour(Terminal(), env={"NO_COLOR": "1"}) is False
    assert (
        render.use_colour(Terminal(), env={"NO_COLOR": ""}) is True
    )  # no-color.org: set and not empty
    assert render.use_colour(io.StringIO(), env={}) is False
    assert render.use_colour(io.StringIO(), "always", env={"NO_COLOR": "1"}) is True
    assert render.use_colour(Terminal(), "never", env={}) is False


def test_unified_diff_marks_a_missing_final_newline_and_new_files() -> None:
    rows = render.unified_diff("a.txt", "x\n", "x\ny")
    assert rows[-2:] == ["+y", "\\ No newline at end of file"]
    created = render.unified_diff("new.txt", "", "hello\n", created=True)
    assert created[:2] == ["--- /dev/null", "+++ b/new.txt"]


def test_editor_nvim_without_nvim_says_what_to_do(
    tmp_path: Path, elsewhere: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    empty_path = tmp_path / "bin"
    empty_path.mkdir()
    monkeypatch.setenv("PATH", str(empty_path))
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr("tempfile.tempdir", None)
    done = run_lich("demo", "--editor", "nvim", cwd=elsewhere)
    assert done.returncode == 1
    assert (
        "needs Neovim" in done.stderr
        and "nvim` is not on PATH" in done.stderr
        and "apt install neovim" in done.stderr
    )
    assert "Traceback" not in done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bin", "cwd"]  # its temp dir is gone


def test_demo_help_and_lich_help_list_it(elsewhere: Path) -> None:
    demo_help = run_lich("demo", "--help", cwd=elsewhere)
    assert (
        demo_help.returncode == 0
        and "--editor" in demo_help.stdout
        and "--color" in demo_help.stdout
    )
    assert "lich demo" in run_lich("--help", cwd=elsewhere).stdout
