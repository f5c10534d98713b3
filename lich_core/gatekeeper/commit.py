"""git_commit's git side: the argument and path rules, git's environment, and the commit itself.

Everything here refuses with a `ToolError` whose message starts with a stable prefix the model
can act on. Nothing here pushes, fetches or talks to a remote.

How git runs: hooks off (`-c core.hooksPath=/dev/null` and `--no-verify`), no signing, a fixed
identity for author and committer (`lich <lich@localhost>`), no fsmonitor program, no automatic
gc; the user's global and system config ignored (GIT_CONFIG_GLOBAL=/dev/null,
GIT_CONFIG_NOSYSTEM=1) and every GIT_* variable of the environment dropped, so neither can change
the commit; pathspecs literal (`--literal-pathspecs` and GIT_LITERAL_PATHSPECS=1).
"""

from __future__ import annotations

import asyncio
import fnmatch
import os
import subprocess
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lich_core.errors import ToolError
from lich_core.tools.processes import kill_process_group
from lich_core.vocabulary import CancelToken

MAX_PATHS = 50
MAX_MESSAGE_CHARS = 10_000
# One git command; the whole tool call is bounded by the tool's timeout_ms as well.
GIT_TIMEOUT_S = 60.0
# How much of git's stderr an error carries.
GIT_ERROR_MAX_CHARS = 600

IDENTITY_NAME = "lich"
IDENTITY_EMAIL = "lich@localhost"

# Basenames never committed (matched case-insensitively).
SECRET_PATTERNS = (".env", ".env.*", "*.pem", "*.p12", "*.key", "id_rsa*", "id_ed25519*")
# Characters git would expand in a pathspec (refused even though pathspecs are literal here).
GLOB_CHARS = frozenset("*?[")
# The agent's own config is never committed by it (tools cannot read or write it either): it
# names plugins, which are code run at the next start.
PROTECTED_CONFIG = (".lich", "config.json")
VCS_DIRS = frozenset({".git", ".hg", ".svn"})

# `-c` options for every git command: they win over the repository's own config.
GIT_CONFIG_ARGS: tuple[str, ...] = (
    "-c",
    "core.hooksPath=/dev/null",
    "-c",
    "commit.gpgsign=false",
    "-c",
    f"user.name={IDENTITY_NAME}",
    "-c",
    f"user.email={IDENTITY_EMAIL}",
    "-c",
    f"author.name={IDENTITY_NAME}",
    "-c",
    f"author.email={IDENTITY_EMAIL}",
    "-c",
    f"committer.name={IDENTITY_NAME}",
    "-c",
    f"committer.email={IDENTITY_EMAIL}",
    "-c",
    "user.useConfigOnly=false",
    "-c",
    "core.fsmonitor=false",
    "-c",
    "core.editor=true",
    "-c",
    "gc.auto=0",
    "-c",
    "maintenance.auto=false",
)
GIT_ENV_OVERRIDES: Mapping[str, str] = {
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_LITERAL_PATHSPECS": "1",
    "GIT_TERMINAL_PROMPT": "0",
}


@dataclass(frozen=True)
class Commit:
    sha: str  # abbreviated
    subject: str  # the message's first line
    paths: tuple[str, ...]  # the files the commit changed, relative to the work dir

    def render(self) -> str:
        lines = [f"committed {self.sha}: {self.subject}", f"paths ({len(self.paths)}):"]
        lines.extend(f"  {path}" for path in self.paths)
        lines.append("(local commit only; nothing was pushed)")
        return "\n".join(lines)


# --- arguments (pure) ---


def check_message(value: Any) -> str:
    """The commit message, or `empty_message:` / `bad_message:`."""
    if not isinstance(value, str) or not value.strip():
        raise ToolError("empty_message: give a non-empty commit message (`message`)")
    if "\x00" in value:
        raise ToolError("bad_message: the message contains a NUL character")
    if len(value) > MAX_MESSAGE_CHARS:
        raise ToolError(
            f"bad_message: the message is {len(value)} characters; keep it under {MAX_MESSAGE_CHARS}"
        )
    return value.strip()


def subject_of(message: str) -> str:
    return message.strip().splitlines()[0].strip()


def is_secret_name(name: str) -> bool:
    lowered = name.lower()
    return any(fnmatch.fnmatchcase(lowered, pattern) for pattern in SECRET_PATTERNS)


def coerce_paths(value: Any) -> list[str]:
    """`paths` as a list of strings (one string is one path), or `bad_paths:`."""
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, (list, tuple)) or not value:
        raise ToolError(
            f"bad_paths: `paths` must list 1 to {MAX_PATHS} files relative to the work dir"
        )
    if len(value) > MAX_PATHS:
        raise ToolError(f"too_many_paths: {len(value)} paths; commit at most {MAX_PATHS} at a time")
    if not all(isinstance(item, str) for item in value):
        raise ToolError("bad_paths: every entry of `paths` must be a string")
    return list(value)


def check_path(root: Path, raw: str) -> str:
    """One path, normalised relative to `root` (posix separators), or the refusal."""
    if raw == "" or not raw.strip():
        raise ToolError('empty_path: "" is not a path; name the files to commit')
    if any(ord(char) < 32 or ord(char) == 127 for char in raw):
        raise ToolError(f"bad_path: {raw!r} contains a control character")
    if raw.startswith(":"):
        raise ToolError(
            f"pathspec_magic: {raw} starts with ':' (git pathspec magic); name plain files"
        )
    if GLOB_CHARS & set(raw):
        raise ToolError(f"pathspec_magic: {raw} contains a glob character (* ? [); name each file")
    if os.path.isabs(raw):
        raise ToolError(f"absolute_path: {raw}; give a path relative to the work dir")
    normal = os.path.normpath(raw)
    if normal == ".":
        raise ToolError(f"path_is_root: {raw} is the work dir itself; name the files to commit")
    if normal == ".." or normal.startswith(".." + os.sep):
        raise ToolError(f"path_escape: {raw} is outside the work dir")
    real_root = os.path.realpath(root)
    real = os.path.realpath(os.path.join(real_root, normal))
    if real == real_root:
        raise ToolError(
            f"path_is_root: {raw} resolves to the work dir itself; name the files to commit"
        )
    if os.path.commonpath([real_root, real]) != real_root:
        raise ToolError(
            f"path_escape: {raw} resolves through a symbolic link to {real}, outside the work dir"
        )
    rel = normal.replace(os.sep, "/")
    check_committable(rel, raw)
    if os.path.basename(real) != os.path.basename(normal) and is_secret_name(
        os.path.basename(real)
    ):
        raise ToolError(
            f"secret_path: {raw} is a link to {os.path.basename(real)}, which looks like a secret; not committed"
        )
    return rel


def check_committable(rel: str, shown: str | None = None) -> None:
    """The name rules for one file the commit would touch: secrets, VCS metadata, lich's config."""
    shown = shown or rel
    # Compared without case: on macOS and Windows file systems `.GIT/config` is `.git/config`.
    parts = tuple(part.casefold() for part in rel.split("/") if part)
    if any(part in VCS_DIRS for part in parts):
        raise ToolError(f"forbidden_path: {shown} is version-control metadata")
    if parts[:2] == PROTECTED_CONFIG:
        raise ToolError(
            f"forbidden_path: {shown} (the agent's config is never committed by the agent)"
        )
    if parts and is_secret_name(parts[-1]):
        raise ToolError(
            f"secret_path: {shown} looks like a secret ({', '.join(SECRET_PATTERNS)}); "
            "it is never committed by the agent"
        )


def check_paths(root: Path, raw_paths: Any) -> list[str]:
    """Every path checked and normalised, duplicates dropped (order kept)."""
    paths: list[str] = []
    for raw in coerce_paths(raw_paths):
        rel = check_path(root, raw)
        if rel not in paths:
            paths.append(rel)
    return paths


# --- running git ---


def git_env(base: Mapping[str, str]) -> dict[str, str]:
    """`base` without any GIT_* variable, plus the overrides that keep user config out."""
    env = {key: value for key, value in base.items() if not key.upper().startswith("GIT_")}
    env.update(GIT_ENV_OVERRIDES)
    return env


@dataclass(frozen=True)
class GitOutput:
    returncode: int
    stdout: bytes
    stderr: bytes

    def error_text(self) -> str:
        text = (self.stderr or self.stdout).decode("utf-8", "replace").strip()
        text = " ".join(text.split())
        return text[:GIT_ERROR_MAX_CHARS] or f"exit {self.returncode}"


async def run_git(
    args: Sequence[str], *, cwd: Path, env: Mapping[str, str], cancel: CancelToken | None = None
) -> GitOutput:
    """One git command with the fixed config, killed with its process group on cancel/timeout."""
    proc = await asyncio.create_subprocess_exec(
        "git",
        "--literal-pathspecs",
        "--no-pager",
        *GIT_CONFIG_ARGS,
        *args,
        cwd=str(cwd),
        env=dict(env),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    unsubscribe = (
        cancel.on_cancel(lambda: kill_process_group(proc.pid)) if cancel is not None else None
    )
    try:
        stdout, stderr = await asyncio.wait_for(proc.communicate(), GIT_TIMEOUT_S)
    except asyncio.TimeoutError:
        raise ToolError(f"timeout: git {args[0]} did not finish in {GIT_TIMEOUT_S:g} s") from None
    finally:
        if unsubscribe is not None:
            unsubscribe()
        if proc.returncode is None:
            kill_process_group(proc.pid)
            await proc.wait()
    if cancel is not None and cancel.cancelled:
        raise ToolError("cancelled")
    return GitOutput(proc.returncode if proc.returncode is not None else -1, stdout, stderr)


def _z_list(data: bytes) -> list[str]:
    return [item.decode("utf-8", "surrogateescape") for item in data.split(b"\x00") if item]


def _under(entry: str, path: str) -> bool:
    return entry == path or entry.startswith(path.rstrip("/") + "/")


async def commit_paths(
    root: Path,
    message: str,
    paths: Sequence[str],
    *,
    env: Mapping[str, str],
    cancel: CancelToken | None = None,
    written: Collection[str] | None = None,
) -> Commit:
    """Stage exactly `paths` (checked by check_paths) and commit only them; other changes stay.

    `written`: the files (relative to `root`) the run wrote through its write tools; a changed
    file among `paths` that is not one of them is refused (`not_written_by_agent:`), so the
    user's own uncommitted work is never committed under lich's name. None: no such check.
    """
    git_environment = git_env(env)

    async def git(*args: str) -> GitOutput:
        return await run_git(args, cwd=root, env=git_environment, cancel=cancel)

    inside = await git("rev-parse", "--is-inside-work-tree")
    if inside.returncode != 0 or inside.stdout.strip() != b"true":
        raise ToolError(
            f"not_a_git_repo: {root} is not inside a git work tree ({inside.error_text()})"
        )
    head = await git("rev-parse", "--verify", "--quiet", "HEAD^{commit}")
    if head.returncode != 0:
        raise ToolError(
            "unborn_head: the repository has no commit yet (or HEAD does not resolve); "
            "a human makes the first commit"
        )
    parent = head.stdout.decode().strip()

    known = await git("ls-files", "-z", "--cached", "--others", "--exclude-standard", "--", *paths)
    staged = await git(
        "diff", "--cached", "--name-only", "--no-renames", "--relative", "-z", "HEAD", "--", *paths
    )
    for result in (known, staged):
        if result.returncode != 0:
            raise ToolError(f"git_failed: git ls-files: {result.error_text()}")
    known_entries = set(_z_list(known.stdout)) | set(_z_list(staged.stdout))
    for path in paths:
        if not any(_under(entry, path) for entry in known_entries):
            if os.path.lexists(root / path):
                raise ToolError(
                    f"ignored_path: {path} is ignored by git (or an empty directory); nothing to commit there"
                )
            raise ToolError(f"not_found: {path} (not in the work tree and not tracked by git)")

    changed = await git(
        "ls-files", "-z", "--modified", "--deleted", "--others", "--exclude-standard", "--", *paths
    )
    if changed.returncode != 0:
        raise ToolError(f"git_failed: git ls-files: {changed.error_text()}")
    touched = sorted(set(_z_list(changed.stdout)) | set(_z_list(staged.stdout)))
    if not touched:
        raise ToolError("nothing_to_commit: the named paths have no changes against HEAD")
    for entry in touched:
        check_committable(entry)
        if written is not None and entry not in written:
            raise ToolError(
                f"not_written_by_agent: {entry} has changes this task did not make (only files written "
                "with write_file, edit_file or apply_patch in this task can be committed); leave it out of `paths`"
            )

    added = await git("add", "--", *paths)
    if added.returncode != 0:
        raise ToolError(f"git_failed: git add: {added.error_text()}")
    committed = await git(
        "commit",
        "--only",
        "--no-verify",
        "--no-gpg-sign",
        "--cleanup=whitespace",
        "--quiet",
        "-m",
        message,
        "--",
        *paths,
    )
    if committed.returncode != 0:
        raise ToolError(f"git_failed: git commit: {committed.error_text()}")
    new_head = await git("rev-parse", "--verify", "HEAD^{commit}")
    sha = new_head.stdout.decode().strip()
    if new_head.returncode != 0 or sha == parent:
        raise ToolError("git_failed: git commit reported success but HEAD did not move")
    short = await git("rev-parse", "--short", sha)
    files = await git(
        "diff-tree",
        "-r",
        "--no-commit-id",
        "--name-only",
        "--no-renames",
        "--relative",
        "-z",
        parent,
        sha,
    )
    return Commit(
        sha=short.stdout.decode().strip() or sha[:12],
        subject=subject_of(message),
        paths=tuple(_z_list(files.stdout)) or tuple(paths),
    )
