"""Workspace trust: a repository's `.lich/config.json` counts only once the user trusted that content.

Like `direnv allow`: a trust record is keyed by the workspace's real path and holds the sha256 of
the config file and of every file that config makes lich execute (plugin modules, replay scripts).
Any change to any of them, or a different folder at the same path, means untrusted again. Records
live in the user state dir (`trust.json`), never in the repository.
"""

from __future__ import annotations

import hashlib
import os
import shlex
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

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
    """Files the workspace config makes lich run or obey: plugin modules, replay scripts, and
    the repository's own files an MCP server command or the test command names (a script the
    command runs: changing it changes what trust was given to)."""
    files: list[Path] = []
    for entry in workspace_values.get("plugins") or []:
        raw = entry.get("path") if isinstance(entry, Mapping) else entry
        if isinstance(raw, str) and raw:
            files.append(resolve_in_root(root, raw))
    for entry in workspace_values.get("providers") or []:
        if isinstance(entry, Mapping) and entry.get("kind") == "replay" and isinstance(entry.get("path"), str):
            files.append(resolve_in_root(root, entry["path"]))
    servers = workspace_values.get("mcp_servers")
    for entry in servers.values() if isinstance(servers, Mapping) else ():
        if isinstance(entry, Mapping) and isinstance(entry.get("command"), str):
            args = entry.get("args")
            words = [str(arg) for arg in args] if isinstance(args, list) else []
            files.extend(_files_in_root([entry["command"], *words], root))
    test_command = workspace_values.get("test_command")
    if isinstance(test_command, str):
        try:
            words = shlex.split(test_command)
        except ValueError:
            words = test_command.split()
        files.extend(_files_in_root(words, root))
    return files


def _files_in_root(words: list[str], root: Path) -> list[Path]:
    """The words of a command line that name a regular file inside the workspace root."""
    found = []
    resolved_root = root.resolve()
    for word in words:
        if not word or word.startswith("-"):
            continue
        try:
            path = resolve_in_root(root, word)
            if path.is_file() and path.is_relative_to(resolved_root):
                found.append(path)
        except (OSError, ValueError):
            continue
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
    """`trust.json` in the user state dir: {"version": 1, "workspaces": {real path: record}}."""

    def __init__(self, path: Path) -> None:
        self.path = path

    @classmethod
    def for_env(cls, env: Mapping[str, str] | None = None) -> TrustStore:
        return cls(user_state_dir(env) / TRUST_FILE_NAME)

    def _records(self) -> dict[str, Any]:
        data = read_json(self.path)
        records = data.get("workspaces") if isinstance(data, dict) else None
        return dict(records) if isinstance(records, dict) else {}

    def record_for(self, root: Path) -> dict[str, Any] | None:
        record = self._records().get(os.path.realpath(root))
        return record if isinstance(record, dict) else None

    def is_trusted(self, root: Path, fingerprint: Fingerprint) -> bool:
        record = self.record_for(root)
        if record is None:
            return False
        return record.get("config_sha256") == fingerprint.config_sha256 and record.get("files") == fingerprint.to_json()["files"]

    def trust(self, root: Path, fingerprint: Fingerprint) -> None:
        if fingerprint.config_sha256 == MISSING_FILE_HASH:
            raise ValueError("there is no workspace config to trust")
        records = self._records()
        records[os.path.realpath(root)] = {**fingerprint.to_json(), "trusted_at": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
        write_json_atomic(self.path, {"version": TRUST_FORMAT_VERSION, "workspaces": records})

    def revoke(self, root: Path) -> bool:
        records = self._records()
        if records.pop(os.path.realpath(root), None) is None:
            return False
        write_json_atomic(self.path, {"version": TRUST_FORMAT_VERSION, "workspaces": records})
        return True


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

    def to_json(self) -> dict[str, Any]:
        return {
            "state": self.state,
            "config": str(self.config_path),
            "keys": [item.to_json() for item in self.ignored],
            "changed": self.changed,
        }

    def summary(self) -> str:
        """One line for the user: what is ignored and why, or that nothing is."""
        if self.state == NO_CONFIG:
            return f"lich: no workspace config ({self.config_path})"
        if self.state == TRUSTED:
            return f"lich: {self.config_path} is trusted"
        if not self.ignored:
            return f"lich: {self.config_path} is not trusted; it only narrows settings, so nothing is ignored"
        why = "changed since you trusted it" if self.changed else "not trusted"
        if self.state == REFUSED:
            why = "never trusted here (workspace_trust is \"never\")"
        effects = "; ".join(f"{item.key}: {item.what}" for item in self.ignored)
        return f"lich: ignored settings in {self.config_path} ({why}): {effects}"
