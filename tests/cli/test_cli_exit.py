"""How a `lich "task"` process ends (#44): it leaves through lich_cli.main.exit_now, without the
interpreter's teardown, and loses nothing on the way: stdout ends with the final answer line,
the exit code is the run's (an answer, a provider error, a tool the policy denies), the thread
file's last record is the run's end, complete; a reader gone from stdout (`| head -1`) ends the
run quietly; atexit work and buffered output still happen. Behaviour, not timing: the time is
`python -m bench cli_exit`'s."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

from lich_core.agent.sessions import SESSION_SUFFIX, SESSIONS_DIR_NAME
from lich_core.userstate import workspace_state_dir
from tests.support.cli_runner import SUBPROCESS_TIMEOUT_S, lich_command, run_lich_subprocess

PROJECT_ROOT = Path(__file__).resolve().parents[2]
ANSWER = "The last line of the answer."


def provider_flags(fake_provider: Any) -> list[str]:
    return [
        "--base-url",
        fake_provider.url + "/v1",
        "--model",
        "m",
        "--provider-kind",
        "openai_compat",
    ]


def thread_records(work: Path) -> list[dict[str, Any]]:
    """The records of the workspace's one thread file, each line whole and ending in a newline."""
    files = list((workspace_state_dir(work) / SESSIONS_DIR_NAME).glob(f"*{SESSION_SUFFIX}"))
    assert len(files) == 1, files
    text = files[0].read_text(encoding="utf-8")
    assert text.endswith("\n"), text[-200:]
    return [json.loads(line) for line in text.splitlines()]


def assert_ends_with_run_end(work: Path, stopped_reason: str) -> dict[str, Any]:
    last = thread_records(work)[-1]
    assert (last["type"], last["event"], last["stopped_reason"]) == ("run", "end", stopped_reason)
    return last


def test_an_answer_is_the_last_stdout_line_and_exits_0(tmp_path: Path, fake_provider) -> None:
    fake_provider.script({"text": f"First line.\n{ANSWER}"})
    result = run_lich_subprocess(
        "answer it", "--work-dir", str(tmp_path), *provider_flags(fake_provider), cwd=tmp_path
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == f"First line.\n{ANSWER}\n"
    # The lines printed after the answer reach stderr whole, the thread's last.
    assert result.stderr.splitlines()[-1].startswith("lich: thread "), result.stderr
    assert "Traceback" not in result.stderr
    end = assert_ends_with_run_end(tmp_path, "final")
    assert end["final"] == f"First line.\n{ANSWER}"


def test_a_provider_error_exits_1_with_the_run_end_recorded(tmp_path: Path, fake_provider) -> None:
    fake_provider.script({"status": 400, "body": '{"error": {"message": "bad request"}}'})
    result = run_lich_subprocess(
        "answer it", "--work-dir", str(tmp_path), *provider_flags(fake_provider), cwd=tmp_path
    )
    assert result.returncode == 1, result.stderr
    assert result.stdout == ""
    assert "lich: error:" in result.stderr
    assert "Traceback" not in result.stderr
    assert_ends_with_run_end(tmp_path, "error")


def test_a_denied_tool_run_exits_with_the_runs_code(tmp_path: Path, fake_provider) -> None:
    config = Path(os.environ["XDG_CONFIG_HOME"]) / "lich" / "config.json"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(json.dumps({"approval": {"terminal": "deny"}}))
    fake_provider.script(
        {"tool_calls": [{"name": "terminal", "arguments": {"command": "touch ran"}}]},
        {"text": ANSWER},
    )
    result = run_lich_subprocess(
        "run it", "--work-dir", str(tmp_path), *provider_flags(fake_provider), cwd=tmp_path
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.endswith(f"{ANSWER}\n")
    assert "failed terminal" in result.stderr and "approval_denied" in result.stderr
    assert not (tmp_path / "ran").exists()
    records = thread_records(tmp_path)
    tool_results = [
        r["message"]
        for r in records
        if r.get("type") == "message" and r["message"].get("role") == "tool"
    ]
    assert len(tool_results) == 1 and "approval_denied" in tool_results[0]["content"]
    assert_ends_with_run_end(tmp_path, "final")


def test_stdout_piped_to_head_ends_quietly(tmp_path: Path, fake_provider) -> None:
    # More than a pipe holds after the first line: the writes after `head` left fail.
    long_answer = "first line\n" + "\n".join(f"line {n} " + "x" * 100 for n in range(3000))
    fake_provider.script({"text": long_answer})
    command = " ".join(
        [
            *(f"'{part}'" for part in lich_command("answer it", "--work-dir", str(tmp_path))),
            *provider_flags(fake_provider),
        ]
    )
    done = subprocess.run(
        ["bash", "-c", f'{command} | head -1; echo "lich exit ${{PIPESTATUS[0]}}" >&2'],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=SUBPROCESS_TIMEOUT_S,
    )
    assert done.stdout == "first line\n"
    assert done.stderr.splitlines()[-1] == "lich exit 0", done.stderr
    assert "Traceback" not in done.stderr and "BrokenPipe" not in done.stderr, done.stderr
    assert_ends_with_run_end(tmp_path, "final")


EXIT_NOW_SCRIPT = textwrap.dedent(
    """
    import atexit, sys, threading
    from lich_cli.main import exit_now

    marker = sys.argv[1]
    atexit.register(lambda: open(marker, "w").write("atexit ran"))
    atexit.register(lambda: print("printed by atexit"))
    sys.stdout.write("buffered, never flushed by hand\\n")
    sys.stderr.write("stderr too\\n")
    if sys.argv[2] == "thread":
        release = threading.Event()
        threading.Thread(target=release.wait, args=(2,)).start()
        exit_now(5)
        print("exit_now returned: a non-daemon thread runs")
        release.set()
        raise SystemExit(4)
    exit_now(3)
    print("never printed")
    """
)


def run_exit_now(tmp_path: Path, mode: str) -> subprocess.CompletedProcess[str]:
    marker = tmp_path / "marker"
    return subprocess.run(
        [sys.executable, "-c", EXIT_NOW_SCRIPT, str(marker), mode],
        cwd=PROJECT_ROOT,
        capture_output=True,
        text=True,
        timeout=SUBPROCESS_TIMEOUT_S,
    )


def test_exit_now_runs_atexit_flushes_and_keeps_the_code(tmp_path: Path) -> None:
    done = run_exit_now(tmp_path, "plain")
    assert done.returncode == 3, done.stderr
    assert done.stdout == "buffered, never flushed by hand\nprinted by atexit\n"
    assert done.stderr == "stderr too\n"
    assert (tmp_path / "marker").read_text() == "atexit ran"


def test_exit_now_waits_as_a_normal_exit_would_for_a_non_daemon_thread(tmp_path: Path) -> None:
    done = run_exit_now(tmp_path, "thread")
    assert done.returncode == 4, done.stderr
    assert done.stdout.splitlines() == [
        "buffered, never flushed by hand",
        "exit_now returned: a non-daemon thread runs",
        "printed by atexit",
    ]
    assert (tmp_path / "marker").read_text() == "atexit ran"


def test_an_in_process_call_returns_its_code(tmp_path: Path, fake_provider) -> None:
    """main(argv) with its arguments (the tests' run_lich, an embedding program) returns."""
    from tests.support.cli_runner import run_lich

    fake_provider.script({"text": ANSWER})
    result = run_lich(
        "answer it", "--work-dir", str(tmp_path), *provider_flags(fake_provider), cwd=tmp_path
    )
    assert (result.returncode, result.stdout) == (0, f"{ANSWER}\n")
