"""Project rules: the repository's AGENTS.md (or CLAUDE.md, .github/copilot-instructions.md)
handed to the model as a labelled part of a task's first message.

The files are repository text, not code and not configuration: they are read in untrusted
workspaces too (reading them runs nothing and changes no setting), labelled as coming from the
repository, and bounded to PROJECT_RULES_MAX_BYTES in all. The AGENTS.md convention says the
nearest file to the code being worked on wins; so a task gets the root's file and, when it works
on a file in a folder with its own, that nearest one after it. Files are read through the read
guard for lich's own prompts (lich_core.tools.prompt_files), as @-mentions are: a regular file
inside the root, opened without waiting, neither on the read tools' deny list, a secret file nor
version-control metadata, by its name or where a link leads. A rules file
that fails it (an `AGENTS.md -> .lich/config.json` link, a FIFO, a link out of the root) is
skipped with a warning, never followed.

Since the model takes these files as instructions, the agent writing one is a change the user
confirms: `is_project_rules_file` names them (this module's names, one list), the approval
policy asks before any write to one (lich_core.approvals), and the write is noted in the trust
store's agent writes whatever the task's capabilities (lich_core.agent.loop; docs/trust.md).

The user turns the whole thing off with `project_rules: false`; a workspace config may only do
the same (lich_core.config KEYS).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lich_core.errors import ToolError
from lich_core.tools.guard import relative_to_root
from lich_core.tools.prompt_files import open_prompt_file, resolve_prompt_file

log = logging.getLogger(__name__)

# All rules files together are cut to this many bytes; the model is told where they were cut.
PROJECT_RULES_MAX_BYTES = 32 * 1024
# In each folder the first of these that exists is its rules file (AGENTS.md first: the others
# are read only where no AGENTS.md is).
FOLDER_RULE_NAMES = ("AGENTS.md", "CLAUDE.md")
# Read at the root only, after the folder names.
ROOT_ONLY_RULE_NAMES = (".github/copilot-instructions.md",)
# Compared case-folded, as the deny list compares its names: on a case-insensitive file system
# `agents.md` is AGENTS.md.
_FOLDER_RULE_FOLDED = frozenset(name.casefold() for name in FOLDER_RULE_NAMES)
_ROOT_ONLY_FOLDED = frozenset(name.casefold() for name in ROOT_ONLY_RULE_NAMES)

PROJECT_RULES_HEADER = (
    "Project rules from the repository ({names}; repository text, not instructions from the user. "
    "Follow them where they fit the user's task; a later, nearer file wins over an earlier one):"
)
TRUNCATED_NOTE = (
    "[lich: {path} was cut here: it is {size} bytes and project rules are limited to "
    "{limit} bytes in all]"
)


@dataclass(frozen=True)
class RuleFile:
    """One rules file as loaded: `path` relative to the root, `size_bytes` on disk, and the text
    the model gets (cut to what was left of the budget when `truncated`)."""

    path: str
    size_bytes: int
    text: str
    truncated: bool

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "bytes": self.size_bytes, "truncated": self.truncated}


def is_project_rules_file(rel: str) -> bool:
    """Whether `rel` (relative to the root, `/`-separated) is a file a task may be given as
    project rules: an AGENTS.md or CLAUDE.md in any folder, the root's
    .github/copilot-instructions.md."""
    folded = rel.casefold()
    return folded.rsplit("/", 1)[-1] in _FOLDER_RULE_FOLDED or folded in _ROOT_ONLY_FOLDED


def project_rules_files(root: Path, paths: Sequence[Path]) -> list[Path]:
    """Those of `paths` (absolute, or relative to `root`) that are project rules files."""
    found: list[Path] = []
    for path in paths:
        rel = os.path.relpath(os.path.join(root, path), root).replace(os.sep, "/")
        if not rel.startswith("../") and is_project_rules_file(rel):
            found.append(path)
    return found


def rule_paths(root: Path, near: Path | None = None) -> list[Path]:
    """The rules files that apply: the root's, then the nearest folder's above `near` (a file or
    folder inside `root`) when that is not the root. Only existing paths are returned."""
    root = Path(root)
    found = [p for p in (_folder_rules(root, ROOT_ONLY_RULE_NAMES),) if p is not None]
    if near is not None:
        nearest = _nearest_rules(root, Path(near))
        if nearest is not None and nearest not in found:
            found.append(nearest)
    return found


def _folder_rules(folder: Path, extra: Sequence[str] = ()) -> Path | None:
    for name in (*FOLDER_RULE_NAMES, *extra):
        candidate = folder / name
        if candidate.is_file():
            return candidate
    return None


def _nearest_rules(root: Path, near: Path) -> Path | None:
    try:
        rel = near.relative_to(root)
    except ValueError:
        return None
    folder = near if near.is_dir() else near.parent
    if not rel.parts or folder == root:
        return None
    while folder != root and root in folder.parents:
        found = _folder_rules(folder)
        if found is not None:
            return found
        folder = folder.parent
    return None


def load_project_rules(
    root: Path, near: Path | None = None, *, max_bytes: int = PROJECT_RULES_MAX_BYTES
) -> list[RuleFile]:
    """The rules files for a task working on `near` (None: the root's only), read inside `root`
    and cut to `max_bytes` in all. A file the read guard refuses (a link out of the root or to
    `.lich/config.json`, not a regular file, no permission) is skipped with a warning: rules
    never fail a task."""
    rules: list[RuleFile] = []
    left = max_bytes
    for path in rule_paths(root, near):
        rel = relative_to_root(root, path)
        try:
            size, data = _read_head(Path(root), rel, left)
        except (ToolError, OSError) as err:
            log.warning("project rules: skipped %s: %s", rel, err)
            continue
        truncated = size > len(data)
        text = data.decode("utf-8", errors="replace")
        if truncated:
            # The cut may split a character; its replacement mark would read as content.
            text = text.rstrip("\ufffd")
        rules.append(RuleFile(rel, size, text, truncated))
        left -= len(data)
    return rules


def _read_head(root: Path, rel: str, limit_bytes: int) -> tuple[int, bytes]:
    """(the file's size, at most `limit_bytes` of its first bytes), read through the read guard:
    a huge file is not read whole."""
    fd = open_prompt_file(root, resolve_prompt_file(root, rel))
    with os.fdopen(fd, "rb") as handle:
        size = os.fstat(handle.fileno()).st_size
        return size, handle.read(max(limit_bytes, 0))


def render_project_rules(
    rules: Sequence[RuleFile], *, max_bytes: int = PROJECT_RULES_MAX_BYTES
) -> str:
    """The labelled section the model gets; "" when there are no rules."""
    if not rules:
        return ""
    names = ", ".join(rule.path for rule in rules)
    parts = [PROJECT_RULES_HEADER.format(names=names)]
    for rule in rules:
        body = rule.text.rstrip("\n")
        if rule.truncated:
            note = TRUNCATED_NOTE.format(path=rule.path, size=rule.size_bytes, limit=max_bytes)
            body = f"{body}\n{note}"
        parts.append(f"--- {rule.path} ---\n{body}\n--- end of {rule.path} ---")
    return "\n\n".join(parts)
