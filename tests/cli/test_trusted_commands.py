"""Trust covers everything a trusted command runs, and a task without process/exec never makes
code it wrote run (issue #31): each escalation attempt through the `lich` CLI.

A workspace config names an MCP server or a test command that runs repository code; the user
trusts it (`lich trust`); then a file that code consists of changes, by hand or by the agent.
The server's code writes a marker file when it runs, so "it ran" is a file on disk, not a guess.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from lich_core.tools.file_text import write_changes
from lich_core.tools.types import ToolContext, WriteLedger
from lich_core.workspace import FileChange
from tests.support.cli_runner import run_lich as lich

PYTHON = sys.executable


def server_code(marker: str) -> str:
    """A stand-in MCP server: it records that it ran (and which version ran), then exits."""
    return (
        "from pathlib import Path\n"
        f"Path(__file__).resolve().parents[{{depth}}].joinpath('ran.txt').write_text({marker!r})\n"
    )


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def script(path: Path, marker: str, depth: int) -> Path:
    return write(path, server_code(marker).replace("{depth}", str(depth)))


def replay(tmp_path: Path, name: str, *turns: dict[str, Any]) -> Path:
    lines = [json.dumps({"message": {"role": "assistant", **turn}}) for turn in turns]
    return write(tmp_path / f"{name}.jsonl", "\n".join(lines) + "\n")


def settings(tmp_path: Path, name: str, model: Path, **values: Any) -> Path:
    """A --config file (the user's, trusted): the scripted model and whatever else is given."""
    data = {"providers": [{"name": "replay", "kind": "replay", "path": str(model)}], **values}
    return write(tmp_path / f"{name}.json", json.dumps(data))


def writer_without_exec(tmp_path: Path, path: str, content: str) -> Path:
    """A --config whose scripted model writes `content` to `path`, with the file capabilities only."""
    call = {"id": "w", "name": "write_file", "arguments": {"path": path, "content": content}}
    model = replay(tmp_path, "writer", {"content": "", "tool_calls": [call]}, {"content": "Done."})
    return settings(
        tmp_path, "writer", model, capabilities=["file/read", "file/write", "file/edit"]
    )


@pytest.fixture
def work(tmp_path: Path) -> Path:
    folder = tmp_path / "repo"
    folder.mkdir()
    return folder.resolve()


def workspace_config(work: Path, **values: Any) -> None:
    write(work / ".lich" / "config.json", json.dumps(values))


def trust(work: Path) -> None:
    done = lich("trust", "--work-dir", str(work), cwd=work)
    assert done.returncode == 0 and "trusted" in done.stdout + done.stderr, done.stderr


def ask(work: Path, config: Path, prompt: str = "what is in this folder?") -> str:
    """One task; its stderr (the run's log). The marker of an earlier run is removed first."""
    (work / "ran.txt").unlink(missing_ok=True)
    done = lich(prompt, "--config", str(config), "--work-dir", str(work), cwd=work)
    assert done.returncode == 0, done.stderr
    return done.stderr


def ran(work: Path) -> str | None:
    marker = work / "ran.txt"
    return marker.read_text(encoding="utf-8") if marker.exists() else None


def answer_only(tmp_path: Path, name: str = "answer") -> Path:
    return settings(
        tmp_path, name, replay(tmp_path, name, {"content": "It holds a small project."})
    )


@pytest.mark.parametrize(
    ("entry", "code", "depth", "changed"),
    [
        # The script named relative to the entry's cwd, not the root.
        (
            {"command": PYTHON, "args": ["srv.py"], "cwd": "tools"},
            "tools/srv.py",
            1,
            "tools/srv.py",
        ),
        # A module run with -m: its file is the server's code.
        ({"command": PYTHON, "args": ["-m", "tools.srv2"]}, "tools/srv2.py", 1, "tools/srv2.py"),
        # A module the fingerprinted script imports from the repository.
        ({"command": PYTHON, "args": ["tools/srv3.py"]}, "tools/srv3.py", 1, "tools/helper.py"),
    ],
    ids=["cwd", "dash-m", "imported-helper"],
)
def test_changing_a_trusted_servers_code_revokes_the_trust(
    tmp_path: Path, work: Path, entry: dict[str, Any], code: str, depth: int, changed: str
) -> None:
    if changed.endswith("helper.py"):
        write(work / "tools" / "helper.py", "VALUE = 'trusted'\n")
        write(
            work / code,
            "import sys\nfrom pathlib import Path\nsys.path.insert(0, str(Path(__file__).parent))\nimport helper\n"
            "Path(__file__).resolve().parents[1].joinpath('ran.txt').write_text(helper.VALUE)\n",
        )
    else:
        script(work / code, "trusted", depth)
    workspace_config(work, mcp_servers={"srv": entry})
    trust(work)
    config = answer_only(tmp_path)
    ask(work, config)
    assert ran(work) == "trusted"  # the trusted code runs: the probe below could fail

    if changed.endswith("helper.py"):
        write(work / changed, "VALUE = 'changed'\n")
    else:
        script(work / changed, "changed", depth)
    log = ask(work, config)
    assert ran(work) is None, "changed code ran under the old trust"
    assert "changed since you trusted it" in log


def test_a_task_without_process_exec_cannot_make_a_server_run_what_it_wrote(
    tmp_path: Path, work: Path
) -> None:
    """The chain: task 1 (file tools only) writes code a trusted server runs; task 2 is a harmless
    question. The server must not start with the model's code: not with the code the fingerprint
    covers (tools/srv.py), nor with code only the server's own script knows about."""
    write(work / "tools" / "start.sh", f"exec {PYTHON} tools/impl/run.py\n")
    script(work / "tools" / "impl" / "run.py", "trusted", 2)
    workspace_config(work, mcp_servers={"srv": {"command": "sh", "args": ["tools/start.sh"]}})
    trust(work)
    question = answer_only(tmp_path)
    ask(work, question)
    assert ran(work) == "trusted"

    payload = server_code("the model's code").replace("{depth}", "2")
    writer = writer_without_exec(tmp_path, "tools/impl/run.py", payload)
    log = ask(work, writer, "improve the server")
    assert "ok write_file" in log
    (work / "ran.txt").unlink(missing_ok=True)  # the server task 1 started ran the old code

    log = ask(work, answer_only(tmp_path, "harmless"), "what does this project do?")
    assert ran(work) is None, "the model's code ran"
    assert "the agent wrote tools/impl/run.py" in log

    config = lich("config", "--work-dir", str(work), cwd=work)
    assert "untrusted" in config.stdout

    # The user's yes again: the server starts (with the code now there, which the user accepted).
    trust(work)
    ask(work, question)
    assert ran(work) == "the model's code"


def test_a_server_from_the_users_own_config_does_not_start_after_such_a_write(
    tmp_path: Path, work: Path
) -> None:
    """A server the user configured runs in the workspace too, so it can run what the agent wrote."""
    script(work / "srv.py", "trusted", 0)
    server = {"srv": {"command": PYTHON, "args": ["srv.py"]}}
    question = settings(tmp_path, "q", replay(tmp_path, "q", {"content": "ok"}), mcp_servers=server)
    ask(work, question)
    assert ran(work) == "trusted"
    payload = server_code("the model's code").replace("{depth}", "0")
    writer = writer_without_exec(tmp_path, "srv.py", payload)
    ask(work, writer, "edit srv.py")
    log = ask(work, question)
    assert ran(work) is None
    assert "workspace_changed: the agent wrote srv.py" in log
    done = lich("trust", "--work-dir", str(work), cwd=work)
    assert "MCP servers and test commands may start here again" in done.stdout + done.stderr
    ask(work, question)
    assert ran(work) == "the model's code"


@pytest.mark.parametrize(
    ("test_command", "files", "changed"),
    [
        ("sh<t5.sh", {"t5.sh": "echo trusted > ran.txt\n"}, ("t5.sh", "echo changed > ran.txt\n")),
        (
            "make test",
            {"Makefile": "test:\n\techo trusted > ran.txt\n"},
            ("Makefile", "test:\n\techo changed > ran.txt\n"),
        ),
    ],
    ids=["redirected-script", "makefile"],
)
def test_changing_what_a_trusted_test_command_runs_revokes_the_trust(
    tmp_path: Path, work: Path, test_command: str, files: dict[str, str], changed: tuple[str, str]
) -> None:
    for name, text in files.items():
        write(work / name, text)
    workspace_config(work, test_command=test_command)
    trust(work)
    tests = settings(
        tmp_path,
        "tests",
        replay(
            tmp_path,
            "tests",
            {"content": "", "tool_calls": [{"id": "t", "name": "run_tests", "arguments": {}}]},
            {"content": "Ran them."},
        ),
        approval={"run_tests": "allow"},
    )
    ask(work, tests, "run the tests")
    assert ran(work) == "trusted\n"

    write(work / changed[0], changed[1])
    log = ask(work, tests, "run the tests")
    assert ran(work) is None, "the changed file ran under the old trust"
    assert "changed since you trusted it" in log


def test_a_write_that_cannot_be_recorded_does_not_happen(tmp_path: Path, work: Path) -> None:
    """Fail closed: when the state dir is refused (others may write to it), a task without
    process/exec cannot record its write, so the write is refused and the file stays as it was;
    `lich trust` says why instead of a traceback."""
    import os

    state = Path(os.environ["XDG_STATE_HOME"]) / "lich"
    state.mkdir(parents=True, exist_ok=True)
    state.chmod(0o777)
    target = write(work / "notes.txt", "mine\n")
    writer = writer_without_exec(tmp_path, "notes.txt", "x\n")
    log = ask(work, writer, "edit notes")
    assert "write_not_recorded: " in log and "state_dir_refused" in log
    assert target.read_text(encoding="utf-8") == "mine\n"
    workspace_config(work, max_turns=3)
    done = lich("trust", "--work-dir", str(work), cwd=work)
    assert done.returncode == 1
    assert (
        done.stderr.startswith("lich: error: cannot change workspace trust: ")
        and "Traceback" not in done.stderr
    )


def test_a_run_notes_each_file_it_writes_once(tmp_path: Path, work: Path) -> None:
    """The trust store is read and written once per file a run writes, not once per write."""
    heard: list[list[Path]] = []
    ctx = ToolContext(work_dir=work, written=WriteLedger(before_write=heard.append))
    target = work / "a.txt"

    async def write_three_times() -> None:
        for text in ("1\n", "2\n", "3\n"):
            prior = target.read_text(encoding="utf-8") if target.exists() else None
            await write_changes(ctx, [FileChange.write(target, text, prior)])

    asyncio.run(write_three_times())
    assert target.read_text(encoding="utf-8") == "3\n"
    assert heard == [[target]] and ctx.written.paths == {target}
