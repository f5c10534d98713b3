"""git_commit end to end: `lich run` (a real `python -m lich_cli` process, self-commit allowed)
plays a replay model that writes one file, proves it with run_tests and then names the user's own
uncommitted edit in its commit (issue #31). The user's edit is refused with
`not_written_by_agent:` and stays uncommitted; the file the task wrote can be committed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.gatekeeper import commit_count, git, make_repo, unstaged
from tests.support.cli_runner import run_lich_subprocess


def replay_config(tmp_path: Path, *turns: list[dict[str, object]]) -> Path:
    lines = [
        {"message": {"role": "assistant", "content": "", "tool_calls": calls}} for calls in turns
    ]
    lines.append({"message": {"role": "assistant", "content": "Finished."}})
    replay = tmp_path / "model.jsonl"
    replay.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    config = tmp_path / "replay.json"
    config.write_text(
        json.dumps(
            {
                "providers": [{"name": "replay", "kind": "replay", "path": str(replay)}],
                "test_command": "exit 0",
            }
        ),
        encoding="utf-8",
    )
    return config


def call(name: str, arguments: dict[str, object], call_id: str) -> dict[str, object]:
    return {"id": call_id, "name": name, "arguments": arguments}


def test_the_users_uncommitted_edit_is_never_committed_by_the_agent(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    work = make_repo(tmp_path / "work", {"user.txt": "v1\n", "feature.py": "v = 1\n"})
    (work / "user.txt").write_text("the user's edit, not committed yet\n", encoding="utf-8")
    before = commit_count(work)
    config = replay_config(
        tmp_path,
        [call("write_file", {"path": "feature.py", "content": "v = 2\n"}, "w")],
        [call("run_tests", {}, "t")],
        [call("git_commit", {"message": "Bump v", "paths": ["feature.py", "user.txt"]}, "both")],
        [call("git_commit", {"message": "Bump v", "paths": ["feature.py"]}, "mine")],
    )
    monkeypatch.setenv("LICH_ALLOW_SELF_COMMIT", "1")
    done = run_lich_subprocess(
        "run", "bump v and commit", "--config", str(config), "--work-dir", str(work), cwd=work
    )
    assert done.returncode == 0, done.stderr
    failed = [line.strip() for line in done.stderr.splitlines() if "failed git_commit" in line]
    assert len(failed) == 1, done.stderr
    assert "not_written_by_agent: user.txt has changes this task did not make" in failed[0]
    assert commit_count(work) == before + 1
    assert git(work, "show", "--name-only", "--format=", "HEAD").split() == ["feature.py"]
    assert git(work, "log", "-1", "--format=%an").strip() == "lich"
    assert unstaged(work) == {"user.txt"}
    assert (work / "user.txt").read_text(encoding="utf-8") == "the user's edit, not committed yet\n"
