"""Workspace trust: a repository's `.lich/config.json` counts only once the user trusted that content.

Like `direnv allow`: a trust record is keyed by the workspace's real path and holds the sha256 of
the config file and of every file that config makes lich execute (plugin modules, replay scripts).
Any change to any of them, or a different folder at the same path, means untrusted again. Records
live in the user state dir (`trust.json`), never in the repository.
"""

from __future__ import annotations

import hashlib
import os
import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lich_core.shell import OPERATOR_CHARS, split_words
from lich_core.userstate import read_json, user_state_dir, write_json_atomic

TRUST_FILE_NAME = "trust.json"
TRUST_FORMAT_VERSION = 1

# Trust states, as `lich.status`, `lich.trustWorkspace` and `lich config` report them.
NO_CONFIG = "no_config"  # the workspace has no .lich/config.json: nothing to trust
TRUSTED = "trusted"
UNTRUSTED = "untrusted"
REFUSED = "refused"  # the user's settings say never to trust (workspace_trust: "never")

MISSING_FILE_HASH = "missing"


def file_sha256(path: Path) -> str:
    try:
        with open(path, "rb") as handle:
            return _sha256_stream(handle)
    except OSError:
        return MISSING_FILE_HASH


def _sha256_stream(handle: Any) -> str:
    digest = hashlib.sha256()
    for block in iter(lambda: handle.read(1 << 16), b""):
        digest.update(block)
    return digest.hexdigest()


def resolve_in_root(root: Path, raw: str) -> Path:
    """A config path as lich resolves it: `~` expanded, relative to the workspace root."""
    path = Path(os.path.expanduser(raw))
    return (path if path.is_absolute() else root / path).resolve()


def executed_files(workspace_values: Mapping[str, Any], root: Path) -> list[Path]:
    """Files the workspace config makes lich run or obey: plugin modules, replay scripts, and the
    code of every command it launches (an MCP server's, the test command's: `command_code_files`).
    Changing any of them changes what trust was given to."""
    files: list[Path] = []
    for entry in workspace_values.get("plugins") or []:
        raw = entry.get("path") if isinstance(entry, Mapping) else entry
        if isinstance(raw, str) and raw:
            files.append(resolve_in_root(root, raw))
    for entry in workspace_values.get("providers") or []:
        if (
            isinstance(entry, Mapping)
            and entry.get("kind") == "replay"
            and isinstance(entry.get("path"), str)
        ):
            files.append(resolve_in_root(root, entry["path"]))
    servers = workspace_values.get("mcp_servers")
    for entry in servers.values() if isinstance(servers, Mapping) else ():
        if isinstance(entry, Mapping) and isinstance(entry.get("command"), str):
            args = entry.get("args")
            words = [str(arg) for arg in args] if isinstance(args, list) else []
            cwd = entry.get("cwd")
            files.extend(
                command_code_files(
                    [entry["command"], *words], root, cwd if isinstance(cwd, str) else None
                )
            )
    test_command = workspace_values.get("test_command")
    if isinstance(test_command, str):
        files.extend(command_code_files(split_words(test_command), root))
    return list(dict.fromkeys(files))


# --- the code a command runs ---
#
# A command line names some of its code (`python tools/srv.py`, `sh<t5.sh`, `make -f ci.mk`) and
# implies the rest: Python imports modules from the script's folder and, with `-m`, from its
# working directory; make reads its Makefile. All of it is part of what the user trusted.

# Past this many files a command's code folders are not read any further (the record notes it).
MAX_CODE_FILES = 2000
# Program -> the files in its working directory it reads without naming them.
IMPLIED_FILES: Mapping[str, tuple[str, ...]] = {
    "make": ("GNUmakefile", "makefile", "Makefile"),
    "gmake": ("GNUmakefile", "makefile", "Makefile"),
    "npm": ("package.json",),
    "yarn": ("package.json",),
    "pnpm": ("package.json",),
    "bun": ("package.json",),
    "tox": ("tox.ini", "pyproject.toml", "setup.cfg"),
    "nox": ("noxfile.py",),
    "just": ("justfile", "Justfile", ".justfile"),
    "rake": ("Rakefile",),
    "cargo": ("Cargo.toml", "build.rs"),
    "go": ("go.mod",),
}
# Folders never read as code: version control internals and caches.
# Folders never read as code: version control internals, caches and installed environments
# (what the agent writes there is still caught: see TrustStore.note_agent_writes).
SKIPPED_CODE_DIRS = frozenset(
    {
        ".git",
        ".hg",
        ".svn",
        "__pycache__",
        "node_modules",
        ".venv",
        "venv",
        ".tox",
        ".nox",
        ".mypy_cache",
        ".pytest_cache",
    }
)
PYTHON_SUFFIXES = (".py", ".pth")
PYTHON_NAMES = re.compile(r"^python[0-9.]*$")


def command_code_files(words: list[str], root: Path, cwd: str | None = None) -> list[Path]:
    """The repository files a command runs: every word naming a file inside the root (resolved
    against the command's working directory, then the root), the module of `-m NAME`, the files
    its program reads unasked (IMPLIED_FILES), and for Python every module it can import from the
    repository: the `.py` files under the script's folder, or under the working directory for
    `-m`. Words of a nested shell string (`sh -c "..."`) count as well."""
    real_root = root.resolve()
    work = resolve_in_root(root, cwd) if cwd else real_root
    if not _inside(work, real_root):
        work = real_root
    expanded: list[str] = []
    for word in words:
        expanded.append(word)
        if any(char.isspace() or char in OPERATOR_CHARS for char in word):
            expanded.extend(split_words(word))
    files: list[Path] = []
    code_dirs: list[Path] = []
    python = False
    for index, word in enumerate(expanded):
        program = os.path.basename(word)
        python = python or bool(PYTHON_NAMES.match(program))
        for name in IMPLIED_FILES.get(program, ()):
            files.append(work / name)
        if word == "-m" and index + 1 < len(expanded):
            module = expanded[index + 1].split(".")
            files.extend(
                [work.joinpath(*module).with_suffix(".py"), work.joinpath(*module, "__main__.py")]
            )
            code_dirs.append(work)
        if not word or word.startswith("-"):
            continue
        for base in (work, real_root):
            path = _file_in_root(base, word, real_root)
            if path is not None:
                files.append(path)
                if path.suffix == ".py" or python:
                    code_dirs.append(path.parent)
                break
    files = [path for path in files if path.is_file() and _inside(path, real_root)]
    files.extend(_python_files_under(code_dirs, real_root))
    return list(dict.fromkeys(files))


def _file_in_root(base: Path, word: str, real_root: Path) -> Path | None:
    try:
        path = resolve_in_root(base, word)
        if path.is_file() and _inside(path, real_root):
            return path
    except (OSError, ValueError):
        pass
    return None


def _inside(path: Path, real_root: Path) -> bool:
    return path.resolve().is_relative_to(real_root)


def _python_files_under(folders: list[Path], real_root: Path) -> list[Path]:
    """The Python modules under `folders` (a worklist, no symlinked folder followed), at most
    MAX_CODE_FILES in all."""
    found: list[Path] = []
    pending = list(dict.fromkeys(folders))
    seen: set[Path] = set()
    while pending and len(found) < MAX_CODE_FILES:
        folder = pending.pop()
        if folder in seen or not _inside(folder, real_root):
            continue
        seen.add(folder)
        try:
            entries = sorted(os.scandir(folder), key=lambda entry: entry.name)
        except OSError:
            continue
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                if entry.name not in SKIPPED_CODE_DIRS:
                    pending.append(Path(entry.path))
            elif entry.name.endswith(PYTHON_SUFFIXES) and entry.is_file():
                found.append(Path(entry.path))
                if len(found) >= MAX_CODE_FILES:
                    break
    return found


@dataclass(frozen=True)
class Fingerprint:
    """What trust is given to: the config file's hash and each executed file's hash."""

    config_sha256: str
    files: dict[str, str] = field(default_factory=dict)

    @classmethod
    def of(cls, config_path: Path, workspace_values: Mapping[str, Any], root: Path) -> Fingerprint:
        files = {str(path): file_sha256(path) for path in executed_files(workspace_values, root)}
        return cls(file_sha256(config_path), files)

    def to_json(self) -> dict[str, Any]:
        return {"config_sha256": self.config_sha256, "files": dict(sorted(self.files.items()))}

    def key(self) -> tuple[str, tuple[tuple[str, str], ...]]:
        """A hashable form, to remember what the user was already asked about."""
        return self.config_sha256, tuple(sorted(self.files.items()))


class TrustStore:
    """`trust.json` in the user state dir: {"version": 1, "workspaces": {real path: record},
    "agent_writes": {real path: {"paths": [...], "count": n, "at": time, "rules"?: [...]}}}.

    `agent_writes` is what an agent run without `process/exec` wrote (note_agent_writes): code
    such a run wrote must never run without a fresh yes from the user, so a folder with agent
    writes is not trusted, and no MCP server starts in it (workspace_launch_refusal), until the
    user trusts again (`trust`, or `confirm_agent_writes` where there is no config to trust).
    The project rules files any agent run wrote are noted there too (also under `rules`): later
    tasks take them as instructions, so their change is one the user confirms the same way.
    """

    def __init__(self, path: Path) -> None:
        self.path = path

    @classmethod
    def for_env(cls, env: Mapping[str, str] | None = None) -> TrustStore:
        return cls(user_state_dir(env) / TRUST_FILE_NAME)

    def _data(self) -> dict[str, Any]:
        data = read_json(self.path)
        return data if isinstance(data, dict) else {}

    def _records(self) -> dict[str, Any]:
        records = self._data().get("workspaces")
        return dict(records) if isinstance(records, dict) else {}

    def _writes(self) -> dict[str, Any]:
        writes = self._data().get("agent_writes")
        return dict(writes) if isinstance(writes, dict) else {}

    def _save(self, records: dict[str, Any], writes: dict[str, Any]) -> None:
        data: dict[str, Any] = {"version": TRUST_FORMAT_VERSION, "workspaces": records}
        if writes:
            data["agent_writes"] = writes
        write_json_atomic(self.path, data)

    def record_for(self, root: Path) -> dict[str, Any] | None:
        record = self._records().get(os.path.realpath(root))
        return record if isinstance(record, dict) else None

    def is_trusted(self, root: Path, fingerprint: Fingerprint) -> bool:
        record = self.record_for(root)
        if record is None or self.agent_writes(root):
            return False
        return (
            record.get("config_sha256") == fingerprint.config_sha256
            and record.get("files") == fingerprint.to_json()["files"]
        )

    def trust(self, root: Path, fingerprint: Fingerprint) -> None:
        if fingerprint.config_sha256 == MISSING_FILE_HASH:
            raise ValueError("there is no workspace config to trust")
        records = self._records()
        records[os.path.realpath(root)] = {
            **fingerprint.to_json(),
            "trusted_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        }
        self._save(records, _without_near(self._writes(), root))

    def revoke(self, root: Path) -> bool:
        records = self._records()
        if records.pop(os.path.realpath(root), None) is None:
            return False
        self._save(records, self._writes())
        return True

    # --- what agent runs without process/exec wrote ---

    def note_agent_writes(
        self, folder: Path, paths: Sequence[Path], *, project_rules: bool = False
    ) -> None:
        """Remember that an agent run without `process/exec` wrote `paths` under `folder`; with
        `project_rules`, that an agent run (any) wrote these project rules files, which later
        tasks are given as instructions (lich_core.agent.loop; listed under `rules` too)."""
        writes = self._writes()
        key = os.path.realpath(folder)
        found = writes.get(key)
        entry: dict[str, Any] = found if isinstance(found, dict) else {}
        known = [item for item in entry.get("paths", []) if isinstance(item, str)]
        rules = [item for item in entry.get("rules", []) if isinstance(item, str)]
        for path in paths:
            shown = os.path.relpath(path, key) if os.path.isabs(path) else str(path)
            if shown not in known and len(known) < MAX_NOTED_WRITES:
                known.append(shown)
            if project_rules and shown not in rules and len(rules) < MAX_NOTED_WRITES:
                rules.append(shown)
        count = entry["count"] if isinstance(entry.get("count"), int) else 0
        writes[key] = {
            "paths": known,
            "count": count + len(paths),
            "at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            **({"rules": rules} if rules else {}),
        }
        self._save(self._records(), writes)

    def agent_writes(self, folder: Path) -> list[str]:
        """The files agent runs without `process/exec` wrote in, above or under `folder` since
        the user last said yes (relative to where they were noted); empty when there are none."""
        found: list[str] = []
        for entry in _near(self._writes(), folder).values():
            if isinstance(entry, dict):
                found.extend(item for item in entry.get("paths", []) if isinstance(item, str))
        return found

    def project_rules_writes(self, folder: Path) -> list[str]:
        """Those of agent_writes that were noted as project rules files."""
        found: list[str] = []
        for entry in _near(self._writes(), folder).values():
            if isinstance(entry, dict):
                found.extend(item for item in entry.get("rules", []) if isinstance(item, str))
        return found

    def confirm_agent_writes(self, folder: Path) -> bool:
        """The user's yes to what agent runs wrote in or under `folder`; True if there was any."""
        writes = self._writes()
        kept = _without_near(writes, folder)
        if len(kept) == len(writes):
            return False
        self._save(self._records(), kept)
        return True


# How many written paths a folder's agent_writes entry keeps (the count goes on).
MAX_NOTED_WRITES = 20


def _related(key: str, folder: Path) -> bool:
    real = os.path.realpath(folder)
    return (
        key == real
        or key.startswith(real.rstrip(os.sep) + os.sep)
        or real.startswith(key.rstrip(os.sep) + os.sep)
    )


def _near(writes: Mapping[str, Any], folder: Path) -> dict[str, Any]:
    return {key: entry for key, entry in writes.items() if _related(key, folder)}


def _without_near(writes: Mapping[str, Any], folder: Path) -> dict[str, Any]:
    return {key: entry for key, entry in writes.items() if not _related(key, folder)}


def agent_writes_text(paths: Sequence[str]) -> str:
    """`tools/srv.py, tools/util.py and 3 more` for a message."""
    shown = ", ".join(paths[:3])
    return f"{shown} and {len(paths) - 3} more" if len(paths) > 3 else shown


@dataclass(frozen=True)
class IgnoredKey:
    """A workspace setting that was not applied, and what it would have done."""

    key: str
    what: str

    def to_json(self) -> dict[str, str]:
        return {"key": self.key, "what": self.what}


@dataclass
class TrustStatus:
    state: str
    config_path: Path
    ignored: list[IgnoredKey] = field(default_factory=list)
    fingerprint: Fingerprint | None = None
    # Trust was given before, but the config or a file it runs has changed since.
    changed: bool = False
    # What agent runs without process/exec wrote here since the user's last yes (TrustStore).
    agent_writes: list[str] = field(default_factory=list)
    # The workspace config's values as read (validated): what the fingerprint was made from.
    workspace: Mapping[str, Any] = field(default_factory=dict)

    @property
    def trusted(self) -> bool:
        return self.state == TRUSTED

    def lapse(self, store: TrustStore | None = None) -> str | None:
        """Why trust given when this status was read no longer holds (a file the config runs
        changed, or the agent wrote files, since), or None. A long-lived reader of the config
        (the language server) asks this before it starts what the config names."""
        if self.state != TRUSTED or self.fingerprint is None:
            return None
        root = self.config_path.parent.parent
        refusal = agent_writes_refusal(
            store or TrustStore.for_env(), root, "a command the workspace config names"
        )
        if refusal is not None:
            return refusal
        changed = changed_file(
            self.fingerprint, Fingerprint.of(self.config_path, self.workspace, root)
        )
        if changed is None:
            return None
        if os.path.isabs(changed):
            changed = os.path.relpath(changed, root.resolve())
        return (
            f"{WORKSPACE_CHANGED}: {changed} changed since you trusted this workspace; "
            "trust it again to run what its config names (`lich trust`, or the command lich.trustWorkspace)"
        )

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "state": self.state,
            "config": str(self.config_path),
            "keys": [item.to_json() for item in self.ignored],
            "changed": self.changed,
        }
        if self.agent_writes:
            data["agent_writes"] = list(self.agent_writes)
        return data

    def summary(self) -> str:
        """One line for the user: what is ignored and why, or that nothing is."""
        if self.state == NO_CONFIG:
            return f"lich: no workspace config ({self.config_path})"
        if self.state == TRUSTED:
            return f"lich: {self.config_path} is trusted"
        if not self.ignored:
            return f"lich: {self.config_path} is not trusted; it only narrows settings, so nothing is ignored"
        why = "changed since you trusted it" if self.changed else "not trusted"
        if self.agent_writes:
            why = f"the agent wrote {agent_writes_text(self.agent_writes)} since you trusted it"
        if self.state == REFUSED:
            why = 'never trusted here (workspace_trust is "never")'
        effects = "; ".join(f"{item.key}: {item.what}" for item in self.ignored)
        return f"lich: ignored settings in {self.config_path} ({why}): {effects}"


# A command's code changed since the user said yes (the prefix of every such refusal).
WORKSPACE_CHANGED = "workspace_changed"


def agent_writes_refusal(store: TrustStore, folder: Path, what: str) -> str | None:
    """Why `what` (a program started in `folder`) must not start: an agent run without
    `process/exec` wrote files there, or any agent run wrote project rules files there, since
    the user's last yes. None when none did."""
    writes = store.agent_writes(folder)
    if not writes:
        return None
    if set(writes) <= set(store.project_rules_writes(folder)):
        # Noted whatever the task could do: the instructions later tasks get changed.
        return (
            f"{WORKSPACE_CHANGED}: the agent wrote {agent_writes_text(writes)}, project rules that later "
            f"tasks are given as instructions; {what} is not started until you confirm that by trusting "
            "this workspace again (`lich trust`, or the command lich.trustWorkspace)"
        )
    return (
        f"{WORKSPACE_CHANGED}: the agent wrote {agent_writes_text(writes)} in a task without process/exec; "
        f"{what} could run that code, so it is not started until you trust this workspace again "
        "(`lich trust`, or the command lich.trustWorkspace)"
    )


def changed_file(trusted: Fingerprint, current: Fingerprint) -> str | None:
    """The first file (or the config itself) whose content differs from what was trusted."""
    if trusted.config_sha256 != current.config_sha256:
        return "the workspace config"
    for path in sorted(set(trusted.files) | set(current.files)):
        if trusted.files.get(path) != current.files.get(path):
            return path
    return None
