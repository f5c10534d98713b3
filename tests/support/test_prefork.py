"""The test zygote (tests/support/prefork.py) stands in for `python -m MODULE` faithfully: the
fork gets the launcher's arguments, environment, working directory and stdio; its exit status,
a signal sent to the launcher and the launcher's death all carry over."""

from __future__ import annotations

import array
import json
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import prefork
from tests.support.processes import pid_alive
from tests.support.provider_helpers import wait_until

WAIT_S = 60.0  # bound on every wait for an event: a hang fails here
GONE_LAUNCHERS = 5
PROBE = """
import json, os, sys
print(json.dumps({"argv": sys.argv[1:], "cwd": os.getcwd(), "marker": os.environ.get("PREFORK_MARKER"),
                  "pid": os.getpid(), "name": __name__}), flush=True)
if sys.argv[1:2] == ["wait"]:
    sys.stdin.read()  # until stdin ends
    print("stdin ended", flush=True)
raise SystemExit(int(sys.argv[2]) if sys.argv[1:2] == ["exit"] else 0)
"""


@pytest.fixture
def probe_env(tmp_path: Path) -> dict[str, str]:
    modules = tmp_path / "modules"
    modules.mkdir()
    (modules / "prefork_probe.py").write_text(PROBE)
    return {**os.environ, "PYTHONPATH": str(modules), "PREFORK_MARKER": "from-the-test"}


def test_a_fork_runs_the_module_with_the_launchers_arguments_environment_and_directory(
    tmp_path: Path, probe_env: dict[str, str]
) -> None:
    done = subprocess.run(
        prefork.command("prefork_probe", "exit", "7"),
        cwd=tmp_path,
        env=probe_env,
        capture_output=True,
        text=True,
        timeout=WAIT_S,
    )
    assert done.returncode == 7, done.stderr
    seen = json.loads(done.stdout)
    assert (
        seen["argv"] == ["exit", "7"]
        and seen["marker"] == "from-the-test"
        and seen["name"] == "__main__"
    )
    assert seen["cwd"] == str(tmp_path)
    assert seen["pid"] != os.getpid()


def test_stdin_ending_ends_the_fork_and_its_output(
    tmp_path: Path, probe_env: dict[str, str]
) -> None:
    process = subprocess.Popen(
        prefork.command("prefork_probe", "wait"),
        cwd=tmp_path,
        env=probe_env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    out, _ = process.communicate("", timeout=WAIT_S)  # closes stdin, reads stdout to its end
    assert out.splitlines()[-1] == "stdin ended" and process.returncode == 0


async def test_sigterm_to_the_launcher_reaches_the_fork_and_comes_back_as_its_status(
    tmp_path: Path, probe_env: dict[str, str]
) -> None:
    process = subprocess.Popen(
        prefork.command("prefork_probe", "wait"),
        cwd=tmp_path,
        env=probe_env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    fork_pid = json.loads(process.stdout.readline())["pid"]  # the fork runs: the signal finds it
    process.terminate()
    assert process.wait(timeout=WAIT_S) == -signal.SIGTERM
    await wait_until(lambda: not pid_alive(fork_pid), WAIT_S)


async def test_a_killed_launcher_takes_its_fork_with_it(
    tmp_path: Path, probe_env: dict[str, str]
) -> None:
    process = subprocess.Popen(
        prefork.command("prefork_probe", "wait"),
        cwd=tmp_path,
        env=probe_env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    fork_pid = json.loads(process.stdout.readline())["pid"]
    process.kill()
    assert process.wait(timeout=WAIT_S) == -signal.SIGKILL
    await wait_until(lambda: not pid_alive(fork_pid), WAIT_S)  # the zygote kills and reaps it


def test_a_launcher_gone_before_its_answer_leaves_the_zygote_serving(
    tmp_path: Path, probe_env: dict[str, str]
) -> None:
    """A launcher that sends its request and dies before the zygote answers: the zygote's
    answer meets a closed socket. Once the zygote died of that, and every later start was
    refused."""
    socket_path = prefork.command("prefork_probe")[4]
    with open(os.devnull, "rb") as devnull:
        for _ in range(GONE_LAUNCHERS):
            conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            conn.connect(socket_path)
            request = {
                "module": "prefork_probe",
                "args": ["exit", "0"],
                "env": probe_env,
                "cwd": str(tmp_path),
            }
            fds = array.array("i", [devnull.fileno()] * 3)
            conn.sendmsg(
                [json.dumps(request).encode() + b"\n"],
                [(socket.SOL_SOCKET, socket.SCM_RIGHTS, fds.tobytes())],
            )
            conn.close()
    done = subprocess.run(
        prefork.command("prefork_probe", "exit", "3"),
        cwd=tmp_path,
        env=probe_env,
        capture_output=True,
        text=True,
        timeout=WAIT_S,
    )
    assert done.returncode == 3, done.stderr
    assert json.loads(done.stdout)["argv"] == ["exit", "3"]


def test_the_fork_is_not_the_real_start_up() -> None:
    """The launcher is the stdlib-only script, not `python -m`: the real start-up stays with the
    tests that run lsp_harness.SERVER_COMMAND (raw stdio, --tcp, --ws) and the editor tests."""
    line = prefork.command("lich_lsp")
    assert (
        line[:4] == [sys.executable, "-I", "-S", str(prefork.LAUNCHER)] and line[-1] == "lich_lsp"
    )
