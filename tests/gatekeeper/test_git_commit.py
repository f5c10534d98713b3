"""git_commit itself, against real git repositories in temp dirs: path rules, repository states,
what is staged and committed, hooks, identity, config isolation, no push, agent-only.

The tool runs only for a call the gatekeeper's hooks allowed, so most tests drive the hooks as the
agent loop does (a green run_tests, then before_tool_call) before calling the tool; the loop
itself is in test_gatekeeper_agent.py.
"""

from __future__ import annotations

import asyncio
import os
import re
from pathlib import Path
from typing import Any

import pytest

from lich_core.gatekeeper import (
    AGENT_ONLY_ERROR,
    ALLOW_SELF_COMMIT_ENV,
    GATEKEEPER_NAME,
    IDENTITY_EMAIL,
    IDENTITY_NAME,
    Gatekeeper,
    build_gatekeeper,
    is_agent_only,
    self_commit_allowed,
)
from lich_core.gatekeeper.commit import check_path, git_env
from lich_core.plugins.types import PluginContext, PluginModels, ToolCallInfo, ToolResultInfo
from lich_core.runtime import build_tool_runtime
from lich_core.tools.types import ToolContext
from lich_core.vocabulary import ToolResult
from tests.gatekeeper import (
    commit_count,
    files_in_commit,
    git,
    head,
    make_repo,
    staged,
    unstaged,
    untracked,
    write_hook,
)


def plugin_context(work_dir: Path) -> PluginContext:
    return PluginContext(
        name=GATEKEEPER_NAME,
        work_dir=work_dir,
        state={},
        settings={},
        models=PluginModels(GATEKEEPER_NAME, frozenset()),
    )


def called(tool_name: str, args: dict[str, Any]) -> ToolCallInfo:
    """The before_tool_call payload the agent loop builds for this call."""
    return ToolCallInfo(tool_name=tool_name, args=args)


def ran(tool_name: str, args: dict[str, Any], ok: bool) -> ToolResultInfo:
    """The after_tool_call payload for this call (the gatekeeper reads only the name and ok)."""
    return ToolResultInfo(
        tool_name=tool_name, args=args, result_summary="", ok=ok, error=None if ok else "failed"
    )


def changed_files(repo: Path) -> set[Path]:
    """Every file with changes in the repository holding `repo` (as if this task wrote them all)."""
    if not (repo / ".git").exists() and not (repo.parent / ".git").exists():
        return set()  # not a repository: nothing can be committed anyway
    top = Path(git(repo, "rev-parse", "--show-toplevel").strip())
    entries = git(repo, "status", "--porcelain", "-z", "-uall").split("\0")
    return {top / entry[3:] for entry in entries if entry}


async def commit(
    repo: Path,
    args: dict[str, Any],
    *,
    env: dict[str, str] | None = None,
    written: set[Path] | None = None,
) -> ToolResult:
    """One git_commit call the way the agent loop makes it: green tests, hooks, the tool, hooks.
    `written`: what the task wrote with its write tools (default: every changed file)."""
    gatekeeper = Gatekeeper(allow_self_commit=True)
    ctx = plugin_context(repo)
    gatekeeper.after_tool_call(ran("run_tests", {}, True), ctx)
    assert gatekeeper.before_tool_call(called("git_commit", args), ctx) is None
    tool_ctx = ToolContext(work_dir=repo, env=env or {})
    tool_ctx.written.paths.update(changed_files(repo) if written is None else written)
    result = await gatekeeper.tool.execute(args, tool_ctx)
    gatekeeper.after_tool_call(ran("git_commit", args, result.ok), ctx)
    return result


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(
        tmp_path / "repo", {"README.md": "hello\n", "src/app.py": "x = 1\n", "b.txt": "b\n"}
    )


# --- the happy path and what exactly gets committed ---


async def test_commits_only_the_named_paths_and_reports_sha_subject_paths(repo: Path) -> None:
    before = head(repo)
    (repo / "src" / "app.py").write_text("x = 2\n", encoding="utf-8")
    (repo / "new.txt").write_text("new\n", encoding="utf-8")
    (repo / "b.txt").write_text("b changed and staged\n", encoding="utf-8")
    git(repo, "add", "b.txt")
    (repo / "README.md").write_text("hello, unstaged\n", encoding="utf-8")
    (repo / "other.txt").write_text("untracked, not named\n", encoding="utf-8")

    result = await commit(
        repo, {"message": "Add new.txt, bump x\n\nLonger body.", "paths": ["src/app.py", "new.txt"]}
    )

    assert result.ok, result.error
    assert git(repo, "rev-parse", "HEAD~1").strip() == before
    assert files_in_commit(repo) == {"src/app.py", "new.txt"}
    short = git(repo, "rev-parse", "--short", "HEAD").strip()
    first = result.output.splitlines()[0]
    assert first == f"committed {short}: Add new.txt, bump x"
    assert "  src/app.py" in result.output and "  new.txt" in result.output
    assert git(repo, "log", "-1", "--format=%B").strip() == "Add new.txt, bump x\n\nLonger body."
    # Everything else is as it was: b.txt still staged, README.md still modified, other.txt untracked.
    assert staged(repo) == {"b.txt"}
    assert unstaged(repo) == {"README.md"}
    assert untracked(repo) == {"other.txt"}
    assert git(repo, "show", "HEAD:b.txt") == "b\n"


async def test_deletions_and_directories_are_staged(repo: Path) -> None:
    (repo / "b.txt").unlink()
    (repo / "src" / "extra.py").write_text("y = 1\n", encoding="utf-8")
    result = await commit(repo, {"message": "remove b, add extra", "paths": ["b.txt", "src/"]})
    assert result.ok, result.error
    assert files_in_commit(repo) == {"b.txt", "src/extra.py"}
    assert "b.txt" not in git(repo, "ls-tree", "-r", "--name-only", "HEAD").split()
    assert git(repo, "status", "--porcelain") == ""


async def test_a_change_this_task_did_not_write_is_never_committed(repo: Path) -> None:
    """The user's own uncommitted edit stays theirs, even when the model names it: only files the
    task wrote with its write tools can be committed (in a directory path too)."""
    before = head(repo)
    (repo / "src" / "app.py").write_text("x = 2\n", encoding="utf-8")  # the agent's write
    (repo / "b.txt").write_text("the user's edit\n", encoding="utf-8")  # the user's
    (repo / "src" / "notes.txt").write_text("the user's new file\n", encoding="utf-8")
    agent_wrote = {repo / "src" / "app.py"}
    named = await commit(
        repo, {"message": "m", "paths": ["src/app.py", "b.txt"]}, written=agent_wrote
    )
    assert not named.ok and named.error.startswith("not_written_by_agent: b.txt "), named.error
    folder = await commit(repo, {"message": "m", "paths": ["src"]}, written=agent_wrote)
    assert not folder.ok and folder.error.startswith("not_written_by_agent: src/notes.txt "), (
        folder.error
    )
    assert head(repo) == before and staged(repo) == set()
    only_mine = await commit(repo, {"message": "m", "paths": ["src/app.py"]}, written=agent_wrote)
    assert only_mine.ok, only_mine.error
    assert files_in_commit(repo) == {"src/app.py"}
    assert unstaged(repo) == {"b.txt"}


async def test_work_dir_below_the_repository_root(repo: Path) -> None:
    (repo / "src" / "app.py").write_text("x = 3\n", encoding="utf-8")
    (repo / "README.md").write_text("outside the work dir\n", encoding="utf-8")
    result = await commit(repo / "src", {"message": "sub", "paths": ["app.py"]})
    assert result.ok, result.error
    assert files_in_commit(repo) == {"src/app.py"}
    assert "  app.py" in result.output
    assert unstaged(repo) == {"README.md"}


async def test_one_string_is_one_path_and_duplicates_collapse(repo: Path) -> None:
    (repo / "b.txt").write_text("b2\n", encoding="utf-8")
    result = await commit(repo, {"message": "b", "paths": "b.txt"})
    assert result.ok, result.error
    (repo / "b.txt").write_text("b3\n", encoding="utf-8")
    result = await commit(
        repo, {"message": "b again", "paths": ["b.txt", "./b.txt", "src/../b.txt"]}
    )
    assert result.ok, result.error
    assert files_in_commit(repo) == {"b.txt"}


async def test_hooks_do_not_run_and_nothing_is_pushed(repo: Path, tmp_path: Path) -> None:
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    git(repo, "remote", "add", "origin", str(remote))
    marker = tmp_path / "hook-ran"
    for name in ("pre-commit", "commit-msg", "prepare-commit-msg"):
        write_hook(repo, name, f"echo {name} >> '{marker}'; exit 1")
    # A post-commit hook that would push: neither it nor anything else may reach the remote.
    write_hook(
        repo,
        "post-commit",
        f"echo post-commit >> '{marker}'; git push -q origin HEAD:refs/heads/main",
    )
    git(repo, "config", "push.default", "current")
    (repo / "b.txt").write_text("hooked\n", encoding="utf-8")

    result = await commit(repo, {"message": "no hooks", "paths": ["b.txt"]})

    assert result.ok, result.error
    assert not marker.exists()
    assert git(remote, "for-each-ref") == ""
    assert git(remote, "count-objects").startswith("0 objects")
    # Control: the hooks are live for a plain `git commit`.
    git(repo, "commit", "--allow-empty", "-q", "-m", "control", check=False)
    assert marker.read_text(encoding="utf-8").startswith("pre-commit")


async def test_identity_is_fixed_and_user_config_and_git_env_are_ignored(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    hooks = home / "global-hooks"
    hooks.mkdir(parents=True)
    (hooks / "pre-commit").write_text("#!/bin/sh\nexit 1\n", encoding="utf-8")
    (hooks / "pre-commit").chmod(0o755)
    (home / ".gitconfig").write_text(
        f"[user]\n\tname = Global\n\temail = global@example.com\n\tsigningkey = NOPE\n"
        f"[commit]\n\tgpgsign = true\n[core]\n\thooksPath = {hooks}\n",
        encoding="utf-8",
    )
    monkeypatch.setenv("HOME", str(home))
    git(repo, "config", "user.name", "Local")
    git(repo, "config", "author.name", "Local Author")
    git(repo, "config", "committer.email", "local-committer@example.com")
    git(repo, "config", "commit.gpgsign", "true")
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "Env Author",
        "GIT_COMMITTER_NAME": "Env Committer",
        "GIT_DIR": str(tmp_path / "no-such-git-dir"),
        "GIT_INDEX_FILE": str(tmp_path / "no-such-index"),
    }
    (repo / "b.txt").write_text("identity\n", encoding="utf-8")

    result = await commit(repo, {"message": "who", "paths": ["b.txt"]}, env=env)

    assert result.ok, result.error
    identity = f"{IDENTITY_NAME} <{IDENTITY_EMAIL}>"
    assert (
        git(repo, "log", "-1", "--format=%an <%ae>|%cn <%ce>").strip() == f"{identity}|{identity}"
    )
    assert git(repo, "log", "-1", "--format=%G?").strip() == "N"  # not signed
    # Control: a plain `git commit` with that config fails (global hook, signing with no key).
    before = head(repo)
    git(repo, "commit", "--allow-empty", "-q", "-m", "control", check=False)
    assert head(repo) == before


def test_git_env_drops_git_variables_and_ignores_user_config() -> None:
    env = git_env({"PATH": "/bin", "GIT_DIR": "/x", "git_work_tree": "/y", "HOME": "/h"})
    assert env["PATH"] == "/bin" and env["HOME"] == "/h"
    assert "GIT_DIR" not in env and "git_work_tree" not in env
    assert env["GIT_CONFIG_GLOBAL"] == os.devnull and env["GIT_CONFIG_NOSYSTEM"] == "1"
    assert env["GIT_LITERAL_PATHSPECS"] == "1"


# --- refusals: arguments, path rules, repository states ---


@pytest.mark.parametrize(
    ("args", "prefix"),
    [
        ({"message": "", "paths": ["b.txt"]}, "empty_message:"),
        ({"message": "  \n ", "paths": ["b.txt"]}, "empty_message:"),
        ({"paths": ["b.txt"]}, "empty_message:"),
        ({"message": "m"}, "bad_paths:"),
        ({"message": "m", "paths": []}, "bad_paths:"),
        ({"message": "m", "paths": [1]}, "bad_paths:"),
        ({"message": "m", "paths": [f"f{i}.txt" for i in range(51)]}, "too_many_paths:"),
        ({"message": "m", "paths": [""]}, "empty_path:"),
        ({"message": "m", "paths": ["."]}, "path_is_root:"),
        ({"message": "m", "paths": ["./"]}, "path_is_root:"),
        ({"message": "m", "paths": ["src/.."]}, "path_is_root:"),
        ({"message": "m", "paths": ["/etc/passwd"]}, "absolute_path:"),
        ({"message": "m", "paths": ["../outside.txt"]}, "path_escape:"),
        ({"message": "m", "paths": ["src/../../outside.txt"]}, "path_escape:"),
        ({"message": "m", "paths": [":(glob)*.txt"]}, "pathspec_magic:"),
        ({"message": "m", "paths": [":/b.txt"]}, "pathspec_magic:"),
        ({"message": "m", "paths": ["*.txt"]}, "pathspec_magic:"),
        ({"message": "m", "paths": ["b.tx?"]}, "pathspec_magic:"),
        ({"message": "m", "paths": ["[ab].txt"]}, "pathspec_magic:"),
        ({"message": "m", "paths": ["b\n.txt"]}, "bad_path:"),
        ({"message": "m", "paths": [".env"]}, "secret_path:"),
        ({"message": "m", "paths": [".env.local"]}, "secret_path:"),
        ({"message": "m", "paths": ["config/.env.production"]}, "secret_path:"),
        ({"message": "m", "paths": ["certs/server.pem"]}, "secret_path:"),
        ({"message": "m", "paths": ["bundle.P12"]}, "secret_path:"),
        ({"message": "m", "paths": ["tls.key"]}, "secret_path:"),
        ({"message": "m", "paths": ["id_rsa"]}, "secret_path:"),
        ({"message": "m", "paths": ["keys/id_rsa.pub"]}, "secret_path:"),
        ({"message": "m", "paths": ["id_ed25519"]}, "secret_path:"),
        ({"message": "m", "paths": ["b.txt", ".env"]}, "secret_path:"),
        ({"message": "m", "paths": [".git/config"]}, "forbidden_path:"),
        ({"message": "m", "paths": [".lich/config.json"]}, "forbidden_path:"),
        # Case-insensitive file systems (macOS, Windows) see these as .git/ and .lich/.
        ({"message": "m", "paths": [".GIT/config"]}, "forbidden_path:"),
        ({"message": "m", "paths": [".Lich/Config.json"]}, "forbidden_path:"),
        ({"message": "m", "paths": ["missing.txt"]}, "not_found:"),
        ({"message": "m", "paths": ["README.md"]}, "nothing_to_commit:"),
    ],
)
async def test_refusals_leave_the_repository_alone(
    repo: Path, args: dict[str, Any], prefix: str
) -> None:
    for name in (
        ".env",
        ".env.local",
        "config/.env.production",
        "certs/server.pem",
        "bundle.P12",
        "tls.key",
        "id_rsa",
        "keys/id_rsa.pub",
        "id_ed25519",
    ):
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text("SECRET=1\n", encoding="utf-8")
    (repo / "b.txt").write_text("changed\n", encoding="utf-8")
    before = head(repo)
    result = await commit(repo, args)
    assert not result.ok
    assert result.error is not None and result.error.startswith(prefix), result.error
    assert head(repo) == before
    assert staged(repo) == set()


async def test_a_directory_holding_a_secret_is_refused(repo: Path) -> None:
    (repo / "conf").mkdir()
    (repo / "conf" / "settings.toml").write_text("a = 1\n", encoding="utf-8")
    (repo / "conf" / ".env").write_text("TOKEN=x\n", encoding="utf-8")
    result = await commit(repo, {"message": "conf", "paths": ["conf"]})
    assert not result.ok and result.error is not None
    assert result.error.startswith("secret_path: conf/.env"), result.error
    assert staged(repo) == set() and commit_count(repo) == 1


async def test_ignored_paths_are_refused(repo: Path) -> None:
    (repo / ".gitignore").write_text("build/\n", encoding="utf-8")
    git(repo, "add", ".gitignore")
    git(repo, "commit", "-q", "-m", "ignore build")
    (repo / "build").mkdir()
    (repo / "build" / "out.bin").write_text("x", encoding="utf-8")
    result = await commit(repo, {"message": "m", "paths": ["build/out.bin"]})
    assert (
        not result.ok and result.error is not None and result.error.startswith("ignored_path:")
    ), result.error


async def test_symlinks_are_resolved(repo: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "data.txt").write_text("outside\n", encoding="utf-8")
    (repo / "out").symlink_to(outside, target_is_directory=True)
    (repo / "here").symlink_to(".", target_is_directory=True)
    (repo / ".env").write_text("TOKEN=1\n", encoding="utf-8")
    (repo / "notes.txt").symlink_to(".env")
    cases = {
        "out/data.txt": "path_escape:",
        "out": "path_escape:",
        "here": "path_is_root:",
        "notes.txt": "secret_path:",
    }
    for path, prefix in cases.items():
        result = await commit(repo, {"message": "m", "paths": [path]})
        assert result.error is not None and result.error.startswith(prefix), (path, result.error)
    assert commit_count(repo) == 1


def test_check_path_normalises(tmp_path: Path) -> None:
    assert check_path(tmp_path, "./a//b/../c.txt") == "a/c.txt"
    assert check_path(tmp_path, "dir/") == "dir"


async def test_not_a_git_repository(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "a.txt").write_text("a\n", encoding="utf-8")
    result = await commit(plain, {"message": "m", "paths": ["a.txt"]})
    assert result.error is not None and result.error.startswith("not_a_git_repo:"), result.error


async def test_unborn_head_is_refused(tmp_path: Path) -> None:
    fresh = make_repo(tmp_path / "fresh", {"a.txt": "a\n"}, commit=False)
    result = await commit(fresh, {"message": "first", "paths": ["a.txt"]})
    assert result.error is not None and result.error.startswith("unborn_head:"), result.error
    assert git(fresh, "rev-parse", "--verify", "-q", "HEAD", check=False) == ""
    assert staged(fresh) == set()


# --- agent-only ---


async def test_a_direct_call_is_refused(repo: Path) -> None:
    (repo / "b.txt").write_text("direct\n", encoding="utf-8")
    gatekeeper = Gatekeeper(allow_self_commit=True)
    args = {"message": "m", "paths": ["b.txt"]}
    result = await gatekeeper.tool.execute(args, ToolContext(work_dir=repo))
    assert result.error == AGENT_ONLY_ERROR
    # Through the executor, as `lich tool git_commit` runs it.
    runtime = build_tool_runtime({"work_dir": str(repo)})
    result = await runtime.executor.execute("git_commit", args, runtime.context())
    assert result.error == AGENT_ONLY_ERROR
    assert commit_count(repo) == 1 and staged(repo) == set()


async def test_an_allowed_call_arms_exactly_that_call(repo: Path) -> None:
    gatekeeper = Gatekeeper(allow_self_commit=True)
    ctx = plugin_context(repo)
    gatekeeper.after_tool_call(ran("run_tests", {}, True), ctx)
    allowed = {"message": "m", "paths": ["b.txt"]}
    assert gatekeeper.before_tool_call(called("git_commit", allowed), ctx) is None
    other = {"message": "m", "paths": ["README.md"]}
    assert (
        await gatekeeper.tool.execute(other, ToolContext(work_dir=repo))
    ).error == AGENT_ONLY_ERROR
    # The call was answered without running (another plugin vetoed it): the arming is gone.
    gatekeeper.after_tool_call(ran("git_commit", allowed, False), ctx)
    assert (
        await gatekeeper.tool.execute(allowed, ToolContext(work_dir=repo))
    ).error == AGENT_ONLY_ERROR


def test_is_agent_only(tmp_path: Path) -> None:
    runtime = build_tool_runtime({"work_dir": str(tmp_path)})
    assert is_agent_only(runtime.registry.get("git_commit"))
    assert is_agent_only(Gatekeeper(allow_self_commit=False).tool)
    assert not is_agent_only(runtime.registry.get("terminal"))
    assert not is_agent_only(None)
    tool = runtime.registry.get("git_commit")
    assert tool is not None and getattr(tool, "capability", None) == "process/exec"


# --- LICH_ALLOW_SELF_COMMIT ---


@pytest.mark.parametrize(
    ("value", "allowed"),
    [
        ("1", True),
        ("0", False),
        ("true", False),
        ("yes", False),
        (" 1", False),
        ("", False),
        (None, False),
    ],
)
def test_allow_self_commit_is_exactly_1(
    monkeypatch: pytest.MonkeyPatch, value: str | None, allowed: bool
) -> None:
    if value is None:
        monkeypatch.delenv(ALLOW_SELF_COMMIT_ENV, raising=False)
    else:
        monkeypatch.setenv(ALLOW_SELF_COMMIT_ENV, value)
    assert self_commit_allowed() is allowed
    gatekeeper = build_gatekeeper()
    assert gatekeeper.allow_self_commit is allowed
    # Read when built: changing the variable afterwards changes nothing for this gatekeeper.
    monkeypatch.setenv(ALLOW_SELF_COMMIT_ENV, "0" if allowed else "1")
    assert gatekeeper.allow_self_commit is allowed


async def test_cancelled_call_reports_cancelled(repo: Path) -> None:
    gatekeeper = Gatekeeper(allow_self_commit=True)
    ctx = plugin_context(repo)
    gatekeeper.after_tool_call(ran("run_tests", {}, True), ctx)
    args = {"message": "m", "paths": ["b.txt"]}
    (repo / "b.txt").write_text("cancel\n", encoding="utf-8")
    assert gatekeeper.before_tool_call(called("git_commit", args), ctx) is None
    tool_ctx = ToolContext(work_dir=repo)
    tool_ctx.cancel.cancel()
    result = await asyncio.wait_for(gatekeeper.tool.execute(args, tool_ctx), 60)
    assert result.error == "cancelled"
    assert commit_count(repo) == 1


def test_output_names_short_sha_format() -> None:
    from lich_core.gatekeeper.commit import Commit

    text = Commit(sha="abc1234", subject="Subject", paths=("a.py",)).render()
    assert re.match(r"^committed abc1234: Subject\n", text)
    assert "nothing was pushed" in text
