"""terminal: exit codes, stdin, directory confinement, process-group kills, output caps, refusals, env."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from lich_core.config import KEYS
from lich_core.runtime import build_tool_runtime
from lich_core.tools.builtin import terminal
from lich_core.tools.builtin.terminal import (
    MAX_COMMAND_TIMEOUT_MS,
    TERMINAL_MAX_OUTPUT_CHARS,
    TOOL,
    default_command_timeout_ms,
    interactive_refusal,
)
from lich_core.tools.capabilities import CapabilityGate
from lich_core.tools.executor import TERMINAL_TOOL_TIMEOUT_MS, ToolExecutor
from lich_core.tools.registry import ToolRegistry
from lich_core.tools.types import DEFAULT_TERMINAL_TIMEOUT_MS, ToolContext
from tests.support.processes import pid_alive as is_alive

# The capped text plus the truncation note and the `[exit N]` line.
MAX_RESULT_CHARS = TERMINAL_MAX_OUTPUT_CHARS + 200


def make_ctx(work_dir: Path, **kwargs) -> ToolContext:
    env = kwargs.pop(
        "env", {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(work_dir)}
    )
    return ToolContext(work_dir=work_dir, env=env, **kwargs)


def make_executor(work_dir: Path, gate: CapabilityGate | None = None) -> ToolExecutor:
    registry = ToolRegistry()
    registry.register(TOOL)
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(work_dir)}
    return ToolExecutor(registry, gate=gate, work_dir=work_dir, env=env)


async def wait_dead(pid: int, timeout_s: float = 3.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if not is_alive(pid):
            return True
        await asyncio.sleep(0.02)
    return not is_alive(pid)


async def wait_for_pids(path: Path, count: int, timeout_s: float = 5.0) -> list[int]:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if path.exists():
            words = path.read_text().split()
            if len(words) >= count:
                return [int(word) for word in words[:count]]
        await asyncio.sleep(0.02)
    raise AssertionError(f"{path} never listed {count} pids")


# A command whose shell and a background child both record their pids, then wait a long time.
SPAWNING_COMMAND = "sleep 30 & echo $! > pids; echo $$ >> pids; echo started; sleep 30"
# Far below the 30 s the commands above would run if nothing stopped them, and far above what the
# stop takes even on two busy cores: a hang guard, not a speed target (bench/ measures speed).
STOPPED_LONG_BEFORE_S = 15.0
# How long a killed process may take to be gone (reaped) on a loaded machine.
DEATH_WAIT_S = 10.0


# --- running commands ---


async def test_success_reports_output_and_exit_zero(tmp_path: Path) -> None:
    result = await TOOL.execute({"command": "echo hello"}, make_ctx(tmp_path))
    assert result.ok, result.error
    assert result.output == "hello\n[exit 0]"
    assert result.details["exit_code"] == 0


async def test_nonzero_exit_is_an_error_with_merged_output(tmp_path: Path) -> None:
    result = await TOOL.execute({"command": "echo out; echo err >&2; exit 3"}, make_ctx(tmp_path))
    assert not result.ok
    assert result.error == "exit_code: 3"
    assert "out\n" in result.output and "err\n" in result.output
    assert result.output.endswith("[exit 3]")


async def test_input_is_fed_to_stdin(tmp_path: Path) -> None:
    result = await TOOL.execute(
        {"command": "tr a-z A-Z", "input": "hello\nworld\n"}, make_ctx(tmp_path)
    )
    assert result.ok
    assert result.output == "HELLO\nWORLD\n[exit 0]"


async def test_stdin_is_empty_without_input(tmp_path: Path) -> None:
    # `cat` would wait forever on an inherited terminal; it must see EOF at once.
    result = await TOOL.execute(
        {"command": "cat; wc -c < /dev/stdin", "timeout_ms": 5000}, make_ctx(tmp_path)
    )
    assert result.ok, result.error
    assert result.output.strip().endswith("[exit 0]")


async def test_runs_in_work_dir_by_default(tmp_path: Path) -> None:
    result = await TOOL.execute({"command": "pwd -P"}, make_ctx(tmp_path))
    assert result.output.splitlines()[0] == str(tmp_path.resolve())


async def test_directory_inside_work_dir(tmp_path: Path) -> None:
    (tmp_path / "sub" / "deeper").mkdir(parents=True)
    result = await TOOL.execute(
        {"command": "pwd -P", "directory": "sub/deeper"}, make_ctx(tmp_path)
    )
    assert result.ok
    assert result.output.splitlines()[0] == str((tmp_path / "sub" / "deeper").resolve())


@pytest.mark.parametrize("directory", ["..", "../..", "/", "sub/../../x", "link_out"])
async def test_directory_outside_work_dir_is_refused(tmp_path: Path, directory: str) -> None:
    work = tmp_path / "work"
    (work / "sub").mkdir(parents=True)
    (work / "link_out").symlink_to(tmp_path)
    marker = tmp_path / "ran"
    result = await TOOL.execute(
        {"command": f"touch {marker}", "directory": directory}, make_ctx(work)
    )
    assert not result.ok
    assert result.error.startswith("path_escape:")
    assert not marker.exists()


async def test_missing_directory_and_missing_command(tmp_path: Path) -> None:
    result = await TOOL.execute({"command": "true", "directory": "nope"}, make_ctx(tmp_path))
    assert result.error.startswith("not_found:")
    (tmp_path / "file").write_text("x")
    result = await TOOL.execute({"command": "true", "directory": "file"}, make_ctx(tmp_path))
    assert result.error.startswith("not_a_directory:")
    result = await TOOL.execute({}, make_ctx(tmp_path))
    assert result.error == "missing_arg: command"


# --- timeouts, cancellation, orphans ---


async def test_timeout_kills_the_whole_group_and_keeps_partial_output(tmp_path: Path) -> None:
    started = time.monotonic()
    result = await TOOL.execute(
        {"command": SPAWNING_COMMAND, "timeout_ms": 700}, make_ctx(tmp_path)
    )
    assert time.monotonic() - started < STOPPED_LONG_BEFORE_S
    assert not result.ok
    assert result.error == "timeout: command exceeded 700 ms"
    assert "started" in result.output
    assert result.details["timed_out"] is True
    for pid in [int(word) for word in (tmp_path / "pids").read_text().split()]:
        assert await wait_dead(pid), f"pid {pid} survived the timeout"


async def test_default_timeout_comes_from_the_context(tmp_path: Path) -> None:
    result = await TOOL.execute(
        {"command": "sleep 20"}, make_ctx(tmp_path, terminal_timeout_ms=400)
    )
    assert result.error == "timeout: command exceeded 400 ms"


def test_the_runtime_passes_the_configured_timeout_as_data(tmp_path: Path) -> None:
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}
    runtime = build_tool_runtime(
        {"work_dir": str(tmp_path), "terminal_timeout_ms": 450}, env=env, load_plugins=False
    )
    ctx = runtime.context()
    assert ctx.terminal_timeout_ms == 450
    # The child's environment carries the value for the commands' own use (lich's seed does,
    # issue 33); the terminal itself takes it from the context, never from an environment.
    assert ctx.env == {**env, "LICH_TERMINAL_TIMEOUT_MS": "450"}
    assert default_command_timeout_ms(ctx) == 450
    tampered = make_ctx(tmp_path, terminal_timeout_ms=450)
    tampered.env["LICH_TERMINAL_TIMEOUT_MS"] = "1"
    assert default_command_timeout_ms(tampered) == 450
    default = build_tool_runtime({"work_dir": str(tmp_path)}, env=env, load_plugins=False).context()
    assert (
        default.terminal_timeout_ms
        == DEFAULT_TERMINAL_TIMEOUT_MS
        == KEYS["terminal_timeout_ms"].default
    )


def test_timeouts_are_clamped(tmp_path: Path) -> None:
    assert default_command_timeout_ms(make_ctx(tmp_path)) == 60_000
    assert (
        default_command_timeout_ms(make_ctx(tmp_path, terminal_timeout_ms=999_999_999))
        == MAX_COMMAND_TIMEOUT_MS
    )
    assert default_command_timeout_ms(make_ctx(tmp_path, terminal_timeout_ms=0)) == 1
    assert TOOL.timeout_ms == TERMINAL_TOOL_TIMEOUT_MS == 300_000


async def test_timeout_argument_is_clamped_to_the_maximum(tmp_path: Path) -> None:
    result = await TOOL.execute({"command": "true", "timeout_ms": 10**9}, make_ctx(tmp_path))
    assert result.ok
    assert result.details["timeout_ms"] == MAX_COMMAND_TIMEOUT_MS


async def test_ctx_cancel_kills_the_group_quickly(tmp_path: Path) -> None:
    ctx = make_ctx(tmp_path)
    task = asyncio.ensure_future(TOOL.execute({"command": SPAWNING_COMMAND}, ctx))
    pids = await wait_for_pids(tmp_path / "pids", 2)
    cancelled_at = time.monotonic()
    ctx.cancel.cancel()
    result = await asyncio.wait_for(task, 3)
    assert time.monotonic() - cancelled_at < 1.5
    assert not result.ok and result.error == "cancelled"
    assert "started" in result.output
    for pid in pids:
        assert await wait_dead(pid, DEATH_WAIT_S), f"pid {pid} survived cancellation"


async def test_cancel_through_the_executor_kills_the_group(tmp_path: Path) -> None:
    executor = make_executor(tmp_path)
    ctx = executor.default_context()
    task = asyncio.ensure_future(executor.execute("terminal", {"command": SPAWNING_COMMAND}, ctx))
    pids = await wait_for_pids(tmp_path / "pids", 2)
    ctx.cancel.cancel()
    result = await asyncio.wait_for(task, 3)
    assert result.error == "cancelled"
    for pid in pids:
        assert await wait_dead(pid, DEATH_WAIT_S)


async def test_executor_deadline_kills_the_group(tmp_path: Path) -> None:
    """The per-tool deadline reaches the command through the merged token, not only ctx.cancel."""
    deadline_ms = 3_000  # well under the command's own 60 s timeout
    registry = ToolRegistry([dataclasses.replace(TOOL, timeout_ms=deadline_ms)])
    executor = ToolExecutor(
        registry, work_dir=tmp_path, env={"PATH": os.environ.get("PATH", "/usr/bin:/bin")}
    )
    task = asyncio.ensure_future(executor.execute("terminal", {"command": SPAWNING_COMMAND}))
    pids = await wait_for_pids(tmp_path / "pids", 2, timeout_s=10)
    result = await asyncio.wait_for(task, 30)
    assert result.error == f"timeout: terminal exceeded {deadline_ms}ms"
    for pid in pids:
        assert await wait_dead(pid, DEATH_WAIT_S), f"pid {pid} survived the executor deadline"


async def test_a_cancellation_while_the_command_starts_kills_what_it_started(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Cancelled before loop.subprocess_exec returns, asyncio kills the shell alone (the tool has
    no process group yet): the shell's children, already running, are the reaper's to kill. Two
    busy cores widen that window enough for the test above to land in it."""
    loop = asyncio.get_running_loop()
    real_exec = loop.subprocess_exec

    async def exec_then_cancelled(*args: Any, **kwargs: Any) -> Any:
        transport, _ = await real_exec(*args, **kwargs)
        await wait_for_pids(tmp_path / "pids", 2)
        transport.close()  # what asyncio does when the start is cancelled: SIGKILL to the shell only
        raise asyncio.CancelledError

    monkeypatch.setattr(loop, "subprocess_exec", exec_then_cancelled)
    with pytest.raises(asyncio.CancelledError):
        await TOOL.execute({"command": SPAWNING_COMMAND}, make_ctx(tmp_path))
    for pid in await wait_for_pids(tmp_path / "pids", 2):
        assert await wait_dead(pid, DEATH_WAIT_S), (
            f"pid {pid} survived a cancellation during the start"
        )


async def test_asyncio_task_cancellation_kills_the_group(tmp_path: Path) -> None:
    task = asyncio.ensure_future(TOOL.execute({"command": SPAWNING_COMMAND}, make_ctx(tmp_path)))
    pids = await wait_for_pids(tmp_path / "pids", 2)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    for pid in pids:
        assert await wait_dead(pid, DEATH_WAIT_S), f"pid {pid} survived task cancellation"


async def test_background_jobs_do_not_outlive_a_finished_command(tmp_path: Path) -> None:
    started = time.monotonic()
    result = await TOOL.execute({"command": "sleep 30 & echo $!"}, make_ctx(tmp_path))
    assert time.monotonic() - started < STOPPED_LONG_BEFORE_S
    assert result.ok
    assert await wait_dead(int(result.output.split()[0]))


# --- output caps ---


async def test_flood_is_capped_and_counted(tmp_path: Path) -> None:
    size = 20_000_000
    result = await TOOL.execute({"command": f"yes | head -c {size}"}, make_ctx(tmp_path))
    assert result.ok
    assert len(result.output) < MAX_RESULT_CHARS
    assert f"[... truncated, {size - TERMINAL_MAX_OUTPUT_CHARS} chars omitted ...]" in result.output
    assert result.output.endswith("[exit 0]")
    assert result.details["truncated_chars"] == size - TERMINAL_MAX_OUTPUT_CHARS


FLOOD_CHILD = """
import asyncio, json, os, resource, sys
from pathlib import Path
from lich_core.tools.builtin.terminal import TOOL
from lich_core.tools.types import ToolContext

work = Path(sys.argv[1])
ctx = ToolContext(work_dir=work, env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(work)})
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
result = asyncio.run(TOOL.execute({"command": "yes | head -c 100000000"}, ctx))
growth = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
print(json.dumps({"ok": result.ok, "chars": len(result.output), "growth_kib": growth}))
"""


def test_huge_flood_keeps_memory_bounded(tmp_path: Path) -> None:
    """Measured in a fresh process: in a test worker whose peak RSS is already higher, the peak
    would not move whatever the tool buffered."""
    done = subprocess.run(
        [sys.executable, "-c", FLOOD_CHILD, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=110,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])},
    )
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout)
    assert seen["ok"] and seen["chars"] < MAX_RESULT_CHARS
    # Buffering the output would cost 100 MB or more (a str of it, more): past the bound below.
    assert seen["growth_kib"] < 64 * 1024, f"peak RSS grew by {seen['growth_kib']} KiB"


async def test_endless_flood_times_out_with_capped_output(tmp_path: Path) -> None:
    result = await TOOL.execute({"command": "yes", "timeout_ms": 800}, make_ctx(tmp_path))
    assert result.error == "timeout: command exceeded 800 ms"
    assert len(result.output) < MAX_RESULT_CHARS
    assert "truncated" in result.output


async def test_executor_keeps_the_terminal_cap_and_exit_line(tmp_path: Path) -> None:
    result = await make_executor(tmp_path).execute(
        "terminal", {"command": "head -c 40000 /dev/zero | tr '\\0' x"}
    )
    assert result.ok
    assert result.output == "x" * 40_000 + "\n[exit 0]"


# --- interactive programs ---


REFUSED_FORMS = [
    ("vim notes.txt", "vim"),
    ("/usr/bin/vi notes.txt", "vi"),
    ("nvim", "nvim"),
    ("nano x", "nano"),
    ("emacs -nw x", "emacs"),
    ("less log.txt", "less"),
    ("more log.txt", "more"),
    ("man ls", "man"),
    ("top", "top"),
    ("htop", "htop"),
    ("watch -n 1 ls", "watch"),
    ("ssh host", "ssh"),
    ("mosh host", "mosh"),
    ("tmux new", "tmux"),
    ("screen -S x", "screen"),
    ("sudo -u x vim f", "vim"),
    ("sudo -E -u root -- nano f", "nano"),
    ("doas -u root htop", "htop"),
    ("env A=1 less f", "less"),
    ("env -u HOME -i B=2 more f", "more"),
    ("FOO=1 time -p top", "top"),
    ("FOO=1 BAR='a b' vim", "vim"),
    ("command -p man ls", "man"),
    ("exec -a name vim", "vim"),
    ("time sudo env X=1 nvim", "nvim"),
    ("cat x | less", "less"),
    ("make && vim out", "vim"),
    ("echo a; man ls", "man"),
    ("false || ssh host", "ssh"),
    ("(cd sub && vim f)", "vim"),
    ("echo $(less f)", "less"),
    ("echo hi\ntop", "top"),
    # wrappers that run their arguments as a command
    ("nice vim", "vim"),
    ("nice -n 10 vim f", "vim"),
    ("nohup vim &", "vim"),
    ("setsid vim", "vim"),
    ("setsid -f top", "top"),
    ("timeout 5 vim", "vim"),
    ("timeout -s KILL 5s top", "top"),
    ("timeout --foreground 10 htop", "htop"),
    ("xargs vim", "vim"),
    ("find . -name '*.py' | xargs -0 -n1 less", "less"),
    ("xargs -I {} vim {}", "vim"),
    ("stdbuf -oL less f", "less"),
    ("stdbuf -o L less f", "less"),
    ("ionice -c 3 vim", "vim"),
    ("ionice -c2 -n7 nice -n19 vim", "vim"),
    ("chrt -f 10 vim", "vim"),
    ("taskset -c 0 htop", "htop"),
    ("flock /tmp/l vim", "vim"),
    ("busybox vi f", "vi"),
    ("unbuffer top", "top"),
    ("runuser -u bob -- vim", "vim"),
    ("sudo vim", "vim"),
    ("command vim", "vim"),
    ("exec vim", "vim"),
    ("time vim", "vim"),
    ("nohup nice -n 5 timeout 10 vim", "vim"),
    # command strings: shells' -c, eval, wrapper options that take a command line
    ("bash -c vim", "vim"),
    ("bash -lc 'vim notes.txt'", "vim"),
    ('sh -c "less x"', "less"),
    ("sh -c 'cd sub && less f'", "less"),
    ("bash -o pipefail -c 'cat f | less'", "less"),
    ("bash --norc -c vim", "vim"),
    ("bash -c -- vim", "vim"),
    ("zsh -c top", "top"),
    ("dash -ec 'watch ls'", "watch"),
    ("exec -a x bash -c vim", "vim"),
    ("eval vim", "vim"),
    ('eval "less f"', "less"),
    ("env -S 'less f'", "less"),
    ("env --split-string='less f'", "less"),
    ("su -c vim bob", "vim"),
    ("su bob -c 'man ls'", "man"),
    ("flock /tmp/l -c 'less f'", "less"),
    ("script -qc 'vim f' /dev/null", "vim"),
    ("bash -c \"sudo -u x bash -c 'nice vim'\"", "vim"),
]


@pytest.mark.parametrize(("form", "program"), REFUSED_FORMS)
async def test_interactive_programs_are_refused_before_running(
    tmp_path: Path, form: str, program: str
) -> None:
    marker = tmp_path / "ran"
    result = await TOOL.execute({"command": f"touch {marker}; {form}"}, make_ctx(tmp_path))
    assert not result.ok
    assert result.error.startswith(f"interactive_command: {program} ")
    assert "(nothing was run); instead, " in result.error
    assert not marker.exists()


@pytest.mark.parametrize(
    "command",
    [
        "echo vim",
        "grep -c less /dev/null",
        'echo "a | less"',
        "cat more.txt",
        "git --version",
        "vimdiff --version",
        "env A=1 printenv A",
        "sudo_like=1 echo top",
        "cat <<EOF\nless\nEOF",
        "bash -c 'echo vim'",
        "bash -c 'echo \"vim\"'",
        "bash -c 'vimdiff --version'",
        "bash script.sh",
        "sh -x script.sh vim",
        "bash",
        "eval echo less",
        "timeout 5 make",
        "timeout 5 sleep 1",
        "nice make",
        "nohup ./vim-server",
        "xargs echo vim",
        "xargs",
        "command -v vim",
        "command -V less",
        "sh -c 'grep less f'",
        "su -c ls bob",
        "chrt -p 10 1234",
        "ionice -p 1234",
        "env -S 'echo less'",
        "flock /tmp/l make",
        "script -c ls /dev/null",
    ],
)
def test_non_interactive_commands_are_not_refused(command: str) -> None:
    assert interactive_refusal(command) is None


def test_the_vetting_looks_past_wrappers_to_the_program() -> None:
    for command in (
        "sudo -u bob -g staff vim",
        "env -u X A=1 /usr/bin/vim",
        "timeout -k 1 5 vim -n",
        "chrt -f 10 vim x.py",
        "xargs -0 -P 4 -n 1 vim",
    ):
        refusal = interactive_refusal(command)
        assert refusal is not None and refusal.startswith("interactive_command: vim "), (
            command,
            refusal,
        )
    assert interactive_refusal("A=1 B=2") is None  # assignments only: no program
    assert interactive_refusal("command -v vim") is None  # a lookup, runs nothing


async def test_wrapped_interactive_program_is_refused_instead_of_hanging(tmp_path: Path) -> None:
    # Without the refusal `timeout 5 vim` would sit until its own timeout; refused, it returns at once.
    started = time.monotonic()
    result = await TOOL.execute(
        {"command": "timeout 20 vim x", "timeout_ms": 30_000}, make_ctx(tmp_path)
    )
    assert result.error.startswith("interactive_command: vim ")
    assert time.monotonic() - started < STOPPED_LONG_BEFORE_S


async def test_refusal_through_executor_runs_nothing(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    result = await make_executor(tmp_path).execute(
        "terminal", {"command": f"touch {marker} && env X=1 less f"}
    )
    assert result.error.startswith("interactive_command: less")
    assert not marker.exists()


# --- environment and gating ---


async def test_provider_keys_never_reach_the_child(tmp_path: Path) -> None:
    ctx = make_ctx(tmp_path)
    ctx.env.update(
        {
            "OPENAI_API_KEY": "sk-openai",
            "ANTHROPIC_API_KEY": "sk-ant",
            "ACME_API_KEY": "sk-acme",
            "KEEP_ME": "yes",
        }
    )
    result = await TOOL.execute({"command": "env"}, ctx)
    assert result.ok
    assert "KEEP_ME=yes" in result.output
    for secret in ("sk-openai", "sk-ant", "sk-acme", "OPENAI_API_KEY", "ANTHROPIC_API_KEY"):
        assert secret not in result.output


async def test_inherited_environment_is_scrubbed_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # An empty ctx.env means "not configured": the server's environment is used, minus the keys.
    monkeypatch.setenv("OPENAI_API_KEY", "sk-leak")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-leak2")
    monkeypatch.setenv("LICH_TERMINAL_TEST_VAR", "visible")
    ctx = ToolContext(work_dir=tmp_path)
    result = await TOOL.execute({"command": "env"}, ctx)
    assert "LICH_TERMINAL_TEST_VAR=visible" in result.output
    assert "sk-leak" not in result.output


async def test_executor_env_is_scrubbed(tmp_path: Path) -> None:
    executor = make_executor(tmp_path)
    executor.env["OPENAI_API_KEY"] = "sk-exec"
    result = await executor.execute("terminal", {"command": 'echo "key=${OPENAI_API_KEY:-none}"'})
    assert result.output.startswith("key=none\n")


async def test_configured_key_variables_never_reach_the_child(tmp_path: Path) -> None:
    """A provider's api_key_env need not end in _API_KEY (`OPENROUTER_KEY`): it is scrubbed anyway."""
    config = {
        "work_dir": str(tmp_path),
        "providers": [
            {
                "name": "or",
                "kind": "openai_compat",
                "base_url": "http://127.0.0.1:9/v1",
                "model": "m",
                "api_key_env": "OPENROUTER_KEY",
            },
            {
                "name": "gh",
                "kind": "openai_compat",
                "base_url": "http://127.0.0.1:9/v1",
                "model": "m",
                "api_key_env": "MY_LLM_SECRET_VAR",
            },
        ],
    }
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(tmp_path),
        "OPENROUTER_KEY": "or-key-value",
        "MY_LLM_SECRET_VAR": "llm-secret-value",
        "KEEP_ME": "kept",
    }
    runtime = build_tool_runtime(config, env=env, load_plugins=False)
    result = await runtime.executor.execute("terminal", {"command": "env"})
    assert result.ok, result.error
    assert "KEEP_ME=kept" in result.output
    for leaked in ("OPENROUTER_KEY", "or-key-value", "MY_LLM_SECRET_VAR", "llm-secret-value"):
        assert leaked not in result.output


async def test_configured_key_variables_are_scrubbed_on_a_direct_call(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # No runtime: the settings (the config) still name the key variable, in ctx.env or inherited.
    monkeypatch.setenv("INHERITED_LLM_KEY", "inherited-value")
    settings = {
        "providers": [
            {"api_key_env": "OPENROUTER_KEY"},
            {"api_key_env": "INHERITED_LLM_KEY"},
            "junk",
            {},
        ]
    }
    ctx = make_ctx(tmp_path, settings=settings)
    ctx.env["OPENROUTER_KEY"] = "or-key-value"
    result = await TOOL.execute({"command": 'echo "a=${OPENROUTER_KEY:-none}"'}, ctx)
    assert result.output.startswith("a=none\n")
    unconfigured = ToolContext(work_dir=tmp_path, settings=settings)  # empty env: the server's own
    result = await TOOL.execute({"command": 'echo "b=${INHERITED_LLM_KEY:-none}"'}, unconfigured)
    assert result.output.startswith("b=none\n")


async def test_capability_denied_runs_nothing(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    executor = make_executor(tmp_path, gate=CapabilityGate(["file/read"]))
    result = await executor.execute("terminal", {"command": f"touch {marker}"})
    assert result.error == "capability_denied: process/exec"
    assert not marker.exists()


def test_tool_declaration() -> None:
    assert TOOL.name == "terminal"
    assert TOOL.capability == "process/exec"
    assert TOOL.parameters["required"] == ["command"]
    assert set(TOOL.parameters["properties"]) == {
        "command", "timeout_ms", "timeout", "shell", "separate_streams", "input", "directory",
    }  # fmt: skip
    assert terminal.TOOL is TOOL
