"""The gatekeeper: the built-in plugin behind the self-improvement loop (docs/tools.md, "git_commit
and the gatekeeper").

It is built in code by the tool runtime, never from config, and registers before every config
plugin. It provides `git_commit` (agent-only), vetoes it unless every condition holds
(LICH_ALLOW_SELF_COMMIT=1, a green run_tests, no write since, one commit per run), and vetoes
terminal commands that match the git denylist (`git_denylist_match`).
"""

from __future__ import annotations

from typing import Any

from lich_core.gatekeeper.commit import IDENTITY_EMAIL, IDENTITY_NAME, MAX_PATHS, SECRET_PATTERNS
from lich_core.gatekeeper.denylist import DENYLIST_PATTERNS, git_denylist_match
from lich_core.gatekeeper.plugin import (
    AGENT_ONLY_ERROR,
    ALLOW_SELF_COMMIT_ENV,
    COMMIT_BUDGET_EXHAUSTED,
    DENYLIST_REASON_PREFIX,
    GATEKEEPER_NAME,
    GIT_COMMIT_TOOL,
    SELF_COMMIT_DISABLED,
    TESTS_NOT_OK,
    WORKTREE_DIRTY,
    WRITE_TOOLS,
    Gatekeeper,
    GitCommitTool,
    build_gatekeeper,
    self_commit_allowed,
)

__all__ = [
    "AGENT_ONLY_ERROR",
    "ALLOW_SELF_COMMIT_ENV",
    "COMMIT_BUDGET_EXHAUSTED",
    "DENYLIST_PATTERNS",
    "DENYLIST_REASON_PREFIX",
    "GATEKEEPER_NAME",
    "GIT_COMMIT_TOOL",
    "IDENTITY_EMAIL",
    "IDENTITY_NAME",
    "MAX_PATHS",
    "SECRET_PATTERNS",
    "SELF_COMMIT_DISABLED",
    "TESTS_NOT_OK",
    "WORKTREE_DIRTY",
    "WRITE_TOOLS",
    "Gatekeeper",
    "GitCommitTool",
    "build_gatekeeper",
    "git_denylist_match",
    "is_agent_only",
    "self_commit_allowed",
]

# How many wrappers (a plugin's tool inside PluginTool, ...) is_agent_only looks through.
_MAX_WRAPPING = 4


def is_agent_only(tool: Any) -> bool:
    """True for a tool that runs only inside an agent task (`agent_only = True`), also when it is
    wrapped (a plugin tool as registered keeps the original as `inner`).

    Whoever runs one tool directly (the language server's lich.runTool) refuses such a tool with
    AGENT_ONLY_ERROR; git_commit refuses a direct call by itself as well.
    """
    for _ in range(_MAX_WRAPPING + 1):
        if tool is None:
            return False
        if getattr(tool, "agent_only", False) is True:
            return True
        tool = getattr(tool, "inner", None)
    return False
