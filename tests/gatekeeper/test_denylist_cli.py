"""The terminal git denylist end to end: `lich run` (a real `python -m lich_cli` process) plays a
replay model whose turn calls `terminal` with `git send-pack ../bare.git master`, the form that
pushed to a bare repository in an agent run (issue #31). The bare repository must not receive the
ref and the tool result must carry the denylist reason; in the same turn a program named by a
variable (`x=vim; $x`) is refused at once instead of waiting for a terminal, and routine git
(`git status`) runs.
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.gatekeeper import git, make_repo
from tests.support.cli_runner import run_lich_subprocess

SEND_PACK = "git send-pack ../bare.git master"


def replay_config(tmp_path: Path, commands: list[str]) -> Path:
    """A replay provider whose first turn calls terminal with each command, then answers."""
    calls = [
        {"id": f"call_{index}", "name": "terminal", "arguments": {"command": command}}
        for index, command in enumerate(commands)
    ]
    turns = [
        {"message": {"role": "assistant", "content": "", "tool_calls": calls}},
        {"message": {"role": "assistant", "content": "Finished."}},
    ]
    replay = tmp_path / "model.jsonl"
    replay.write_text("".join(json.dumps(turn) + "\n" for turn in turns), encoding="utf-8")
    config = tmp_path / "replay.json"
    config.write_text(
        json.dumps({"providers": [{"name": "replay", "kind": "replay", "path": str(replay)}]})
    )
    return config


def refs(repo: Path) -> str:
    return git(repo, "for-each-ref", "--format=%(refname)")


def test_send_pack_to_a_bare_repository_is_vetoed_in_an_agent_run(tmp_path: Path) -> None:
    work = make_repo(tmp_path / "work")
    git(work, "branch", "-m", "master")
    git(tmp_path, "init", "-q", "--bare", "bare.git")
    # The command itself works: run directly, it publishes master to a bare repository.
    git(tmp_path, "init", "-q", "--bare", "control.git")
    git(work, "send-pack", "../control.git", "master")
    assert refs(tmp_path / "control.git").split() == ["refs/heads/master"]

    config = replay_config(tmp_path, [SEND_PACK, "x=vim; $x notes.txt", "git status --short"])
    done = run_lich_subprocess(
        "run", "publish master", "--config", str(config), "--work-dir", str(work), cwd=work
    )

    assert done.returncode == 0, done.stderr
    assert refs(tmp_path / "bare.git") == ""
    lines = done.stderr.splitlines()
    failed = [line.strip() for line in lines if "failed terminal" in line]
    assert len(failed) == 2, done.stderr
    assert failed[0].endswith("blocked_by_plugin: git_denylist: send-pack")
    assert failed[1].endswith(
        "blocked_by_plugin: git_denylist: cannot tell which program runs ($x); "
        "name the program directly (git ..., not a variable or a substitution)"
    )
    assert sum("ok terminal" in line for line in lines) == 1, done.stderr  # git status ran
    assert done.stdout == "Finished.\n"
