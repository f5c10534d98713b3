"""Tests of the gatekeeper (git_commit, its vetoes, the terminal git denylist); helpers for them.

Every repository is a real git repository in a temp dir; the helpers run git with the test's own
environment minus GIT_* (tests/conftest.py already points HOME into a temp dir).
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping
from pathlib import Path


def git_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith("GIT_")}
    env["GIT_CONFIG_NOSYSTEM"] = "1"
    env.update(extra or {})
    return env


def git(repo: Path, *args: str, check: bool = True) -> str:
    """Run git in `repo` (the test's side, not the tool's) and return its stdout."""
    done = subprocess.run(
        ["git", *args],
        cwd=repo,
        env=git_env(),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    if check and done.returncode != 0:
        raise AssertionError(f"git {' '.join(args)} failed ({done.returncode}): {done.stderr}")
    return done.stdout


def make_repo(path: Path, files: Mapping[str, str] | None = None, *, commit: bool = True) -> Path:
    """A repository at `path` with `files` committed once by "Test <test@example.com>"."""
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q", "-b", "main")
    git(path, "config", "user.name", "Test")
    git(path, "config", "user.email", "test@example.com")
    git(path, "config", "commit.gpgsign", "false")
    for name, text in (files if files is not None else {"README.md": "hello\n"}).items():
        target = path / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    if commit:
        git(path, "add", "-A")
        git(path, "commit", "-q", "-m", "initial")
    return path


def head(repo: Path) -> str:
    return git(repo, "rev-parse", "HEAD").strip()


def commit_count(repo: Path) -> int:
    return int(git(repo, "rev-list", "--count", "HEAD").strip())


def files_in_commit(repo: Path, rev: str = "HEAD") -> set[str]:
    return set(git(repo, "diff-tree", "-r", "--no-commit-id", "--name-only", "--root", rev).split())


def staged(repo: Path) -> set[str]:
    return set(git(repo, "diff", "--cached", "--name-only").split())


def unstaged(repo: Path) -> set[str]:
    return set(git(repo, "diff", "--name-only").split())


def untracked(repo: Path) -> set[str]:
    return set(git(repo, "ls-files", "--others", "--exclude-standard").split())


def write_hook(repo: Path, name: str, body: str) -> Path:
    hook = repo / ".git" / "hooks" / name
    hook.parent.mkdir(parents=True, exist_ok=True)
    hook.write_text("#!/bin/sh\n" + body + "\n", encoding="utf-8")
    hook.chmod(0o755)
    return hook
