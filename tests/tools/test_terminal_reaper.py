"""terminal on Linux: daemons and double forks a command leaves behind die with the call.

Each escape pattern has the leftover process write its own pid (atomically, after it detached) and
the command waits for that file, so the leftover is known to be running when the call ends. The
assertions then wait, bounded, for the event (the pid vanishing from /proc); they never sleep a
fixed time.
"""

from __future__ import annotations

import asyncio
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from lich_core.tools import reaper
from lich_core.tools.builtin.terminal import TOOL
from lich_core.tools.reaper import CALL_ID_ENV, SUBREAPER, CallReaper, read_stat, scan_processes
from lich_core.tools.types import ToolContext

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux") or not Path("/proc/self/stat").exists(),
    reason="the reaper needs Linux and /proc",
)

PATH = os.environ.get("PATH", "/usr/bin:/bin")
# Generous upper bounds: they return as soon as the event happens (2 cores, other test runs).
GONE_WAIT_S = 10.0
FILE_WAIT_S = 15.0
COMMAND_TIMEOUT_MS = 30_000

# The leftover records its pid once detached, then becomes a long sleep.
DAEMON = "sh -c 'echo $$ > pid.tmp && mv pid.tmp pid; exec sleep 300'"
WAIT_FOR_PID = "while [ ! -s pid ]; do sleep 0.01; done"
PY_DOUBLE_FORK = (
    "import os, time\n"
    "if os.fork():\n    os._exit(0)\n"
    "os.setsid()\n"
    "if os.fork():\n    os._exit(0)\n"
    "open('pid.tmp', 'w').write(str(os.getpid()))\n"
    "os.rename('pid.tmp', 'pid')\n"
    "time.sleep(300)\n"
)

ESCAPES = {
    "plain_background": f"{DAEMON} &\n{WAIT_FOR_PID}",
    "nohup_background": f"nohup {DAEMON} >/dev/null 2>&1 &\n{WAIT_FOR_PID}",
    "setsid_background": f"setsid {DAEMON} &\n{WAIT_FOR_PID}",
    "setsid_fork": f"setsid -f {DAEMON}\n{WAIT_FOR_PID}",
    "subshell_double_fork": f"( {DAEMON} & ) &\n{WAIT_FOR_PID}",
    "python_double_fork_setsid": f"{sys.executable} double_fork.py\n{WAIT_FOR_PID}",
    "disown": f"{DAEMON} &\ndisown\n{WAIT_FOR_PID}",
}


def make_ctx(work_dir: Path) -> ToolContext:
    return ToolContext(work_dir=work_dir, env={"PATH": PATH, "HOME": str(work_dir)})


def proc_exists(pid: int) -> bool:
    return Path(f"/proc/{pid}").exists()


def is_alive(pid: int) -> bool:
    info = read_stat(pid)
    return info is not None and info.alive


async def wait_until(predicate, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return True
        await asyncio.sleep(0.01)
    return predicate()


async def read_pid(path: Path, timeout_s: float = FILE_WAIT_S) -> int:
    assert await wait_until(
        lambda: path.exists() and path.read_text().strip().isdigit(), timeout_s
    ), f"{path} never written"
    return int(path.read_text())


@pytest.fixture
def leftovers() -> Iterator[list[int]]:
    """Pids a test expects to be killed; any still sleeping at teardown is killed (a failing run
    must not leave five-minute sleeps behind)."""
    pids: list[int] = []
    yield pids
    for pid in pids:
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
            if b"sleep" in cmdline or b"double_fork" in cmdline:
                os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


@pytest.mark.parametrize("pattern", list(ESCAPES))
async def test_escaped_process_is_gone_when_the_call_returns(
    tmp_path: Path, pattern: str, leftovers
) -> None:
    (tmp_path / "double_fork.py").write_text(PY_DOUBLE_FORK)
    result = await TOOL.execute(
        {"command": ESCAPES[pattern] + "\necho finished", "timeout_ms": COMMAND_TIMEOUT_MS},
        make_ctx(tmp_path),
    )
    assert result.ok, (result.error, result.output)
    assert "finished" in result.output
    pid = int((tmp_path / "pid").read_text())
    leftovers.append(pid)
    # Dead and reaped: no zombie either (it was re-parented to us, so we reap it).
    assert await wait_until(lambda: not proc_exists(pid), GONE_WAIT_S), (
        f"{pattern}: pid {pid} outlived the call"
    )


async def test_escape_is_killed_on_timeout(tmp_path: Path, leftovers) -> None:
    command = f"setsid -f {DAEMON}\n{WAIT_FOR_PID}\necho started\nsleep 60"
    result = await TOOL.execute({"command": command, "timeout_ms": 3_000}, make_ctx(tmp_path))
    assert result.error == "timeout: command exceeded 3000 ms"
    assert "started" in result.output, (
        "the daemon did not start within the timeout (machine overloaded?)"
    )
    pid = int((tmp_path / "pid").read_text())
    leftovers.append(pid)
    assert await wait_until(lambda: not is_alive(pid), GONE_WAIT_S), (
        f"pid {pid} survived the timeout"
    )


async def test_escape_is_killed_on_cancel(tmp_path: Path, leftovers) -> None:
    ctx = make_ctx(tmp_path)
    task = asyncio.ensure_future(
        TOOL.execute({"command": f"setsid -f {DAEMON}\n{WAIT_FOR_PID}\nsleep 60"}, ctx)
    )
    pid = await read_pid(tmp_path / "pid")
    leftovers.append(pid)
    assert is_alive(pid)
    ctx.cancel.cancel()
    result = await asyncio.wait_for(task, GONE_WAIT_S)
    assert result.error == "cancelled"
    assert await wait_until(lambda: not is_alive(pid), GONE_WAIT_S), (
        f"pid {pid} survived cancellation"
    )


async def test_escape_is_killed_on_task_cancellation(tmp_path: Path, leftovers) -> None:
    (tmp_path / "double_fork.py").write_text(PY_DOUBLE_FORK)
    task = asyncio.ensure_future(
        TOOL.execute({"command": f"{sys.executable} double_fork.py\nsleep 60"}, make_ctx(tmp_path))
    )
    pid = await read_pid(tmp_path / "pid")
    leftovers.append(pid)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await wait_until(lambda: not is_alive(pid), GONE_WAIT_S), (
        f"pid {pid} survived task cancellation"
    )


async def test_a_child_with_a_cleared_environment_is_found_through_its_session(
    tmp_path: Path, leftovers
) -> None:
    # `env -i` drops LICH_CALL_ID; the process is still in the call's session.
    command = (
        f"env -i /bin/sh -c 'echo $$ > pid.tmp && mv pid.tmp pid; exec sleep 300' &\n{WAIT_FOR_PID}"
    )
    result = await TOOL.execute(
        {"command": command, "timeout_ms": COMMAND_TIMEOUT_MS}, make_ctx(tmp_path)
    )
    pid = int((tmp_path / "pid").read_text())
    leftovers.append(pid)
    assert result.ok
    assert await wait_until(lambda: not proc_exists(pid), GONE_WAIT_S)


async def test_concurrent_call_keeps_its_processes_until_it_ends(tmp_path: Path, leftovers) -> None:
    """Call A's sweep must not touch call B's processes, escaped daemons included."""
    dir_a, dir_b = tmp_path / "a", tmp_path / "b"
    dir_a.mkdir()
    dir_b.mkdir()
    ctx_b = make_ctx(dir_b)
    task_b = asyncio.ensure_future(
        TOOL.execute(
            {"command": f"setsid -f {DAEMON}\n{WAIT_FOR_PID}\nsleep 120 & echo $! > job\nwait"},
            ctx_b,
        )
    )
    daemon_b = await read_pid(dir_b / "pid")
    job_b = await read_pid(dir_b / "job")
    leftovers.extend([daemon_b, job_b])

    result_a = await TOOL.execute(
        {"command": f"setsid -f {DAEMON}\n{WAIT_FOR_PID}", "timeout_ms": COMMAND_TIMEOUT_MS},
        make_ctx(dir_a),
    )
    daemon_a = int((dir_a / "pid").read_text())
    leftovers.append(daemon_a)
    assert result_a.ok
    assert await wait_until(lambda: not proc_exists(daemon_a), GONE_WAIT_S)
    assert is_alive(daemon_b) and is_alive(job_b), "call A's sweep killed call B's processes"
    assert not task_b.done()

    ctx_b.cancel.cancel()
    result_b = await asyncio.wait_for(task_b, GONE_WAIT_S)
    assert result_b.error == "cancelled"
    for pid in (daemon_b, job_b):
        assert await wait_until(lambda pid=pid: not is_alive(pid), GONE_WAIT_S)


async def test_unrelated_children_of_this_process_survive_and_keep_their_exit_status(
    tmp_path: Path, leftovers
) -> None:
    same_session = subprocess.Popen(["sleep", "300"])
    own_session = subprocess.Popen(["sleep", "300"], start_new_session=True)
    other_call = subprocess.Popen(["sleep", "300"], env={"PATH": PATH, CALL_ID_ENV: "someone-else"})
    exited = subprocess.Popen([sys.executable, "-c", "raise SystemExit(3)"])
    children = [same_session, own_session, other_call]
    leftovers.extend(child.pid for child in children)
    try:
        # The exited child stays an unreaped zombie of ours (we do not wait for it yet).
        assert await wait_until(
            lambda: read_stat(exited.pid) is not None and not read_stat(exited.pid).alive,
            FILE_WAIT_S,
        )
        result = await TOOL.execute(
            {"command": f"setsid -f {DAEMON}\n{WAIT_FOR_PID}", "timeout_ms": COMMAND_TIMEOUT_MS},
            make_ctx(tmp_path),
        )
        assert result.ok
        daemon = int((tmp_path / "pid").read_text())
        leftovers.append(daemon)
        assert await wait_until(lambda: not proc_exists(daemon), GONE_WAIT_S)
        assert [child.poll() for child in children] == [None, None, None]
        assert exited.wait(timeout=5) == 3  # its status was not taken by the reaper
    finally:
        for child in children:
            child.kill()
    assert [child.wait(timeout=5) for child in children] == [-signal.SIGKILL] * 3


async def test_each_call_is_marked_and_the_subreaper_is_released(tmp_path: Path) -> None:
    if SUBREAPER.is_set():
        pytest.skip("this process was a subreaper before the test")
    first = await TOOL.execute({"command": f'echo "${CALL_ID_ENV}"'}, make_ctx(tmp_path))
    second = await TOOL.execute({"command": f'echo "${CALL_ID_ENV}"'}, make_ctx(tmp_path))
    ids = [first.output.splitlines()[0], second.output.splitlines()[0]]
    assert all(re.fullmatch(r"[0-9a-f]{32}", call_id) for call_id in ids)
    assert ids[0] != ids[1]

    ctx = make_ctx(tmp_path)
    task = asyncio.ensure_future(TOOL.execute({"command": "echo up > ready; sleep 60"}, ctx))
    assert await wait_until(lambda: (tmp_path / "ready").exists(), FILE_WAIT_S)
    assert SUBREAPER.is_set(), "no subreaper while a call runs"
    ctx.cancel.cancel()
    await asyncio.wait_for(task, GONE_WAIT_S)
    assert not SUBREAPER.is_set(), "the subreaper stayed on after the last call"


async def test_an_orphan_that_exited_on_its_own_is_reaped_later(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`setsid -f true` leaves a zombie with nothing tying it to the call; the stale pass reaps it."""
    monkeypatch.setattr(reaper, "STALE_ZOMBIE_GRACE_S", 0.0)
    command = (
        "setsid -f sh -c 'echo $$ > pid.tmp && mv pid.tmp pid'\n"
        f"{WAIT_FOR_PID}\n"
        'p=$(cat pid); while [ -e /proc/$p ] && ! grep -q ") Z" /proc/$p/stat; do sleep 0.01; done'
    )
    result = await TOOL.execute(
        {"command": command, "timeout_ms": COMMAND_TIMEOUT_MS}, make_ctx(tmp_path)
    )
    assert result.ok, result.output
    pid = int((tmp_path / "pid").read_text())
    assert await wait_until(lambda: not proc_exists(pid), GONE_WAIT_S), (
        "the zombie was never reaped"
    )


def test_call_processes_follow_marker_session_and_descendants(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Pure selection over a fake process table."""
    own = os.getpid()
    reaper_ = CallReaper()
    reaper_.shell_pid, reaper_.shell_start, reaper_.subreaper = 1000, 5, True

    def info(pid: int, ppid: int, sid: int, state: str = "S", start: int = 9):
        return reaper.ProcInfo(pid, ppid, sid, sid, state, start)

    table = {
        own: info(own, 1, own),
        1000: info(1000, own, 1000, start=5),  # the shell
        1001: info(1001, 1000, 1000),  # its child
        1002: info(1002, own, 1002),  # an escaped daemon (setsid), adopted by us: marker only
        1003: info(1003, 1002, 1002),  # the daemon's child
        1004: info(1004, own, 1004),  # another call's shell
        1005: info(1005, own, own),  # a plain subprocess of ours
    }
    monkeypatch.setattr(
        reaper, "environ_has", lambda pid, entry: pid == 1002 and entry == reaper_.marker
    )
    assert reaper_.call_processes(table) == {1000, 1001, 1002, 1003}
    # The shell's pid now names a newer process: session, group and tree links are not trusted.
    table[1000] = info(1000, own, 1000, start=77)
    assert reaper_.call_processes(table) == {1002, 1003}


def test_scan_sees_this_process() -> None:
    table = scan_processes()
    assert os.getpid() in table
    assert table[os.getpid()].ppid == os.getppid()
