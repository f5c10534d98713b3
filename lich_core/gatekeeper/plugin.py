"""The gatekeeper plugin: it provides `git_commit` and vetoes it unless every condition holds, and
vetoes terminal commands that match the git denylist.

It is constructed in code (lich_core.runtime), never from config, and registers before any
config plugin: its hooks run first and its `git_commit` wins over a config plugin's (first-wins
duplicate rule). Per-run state lives in the plugin context's `state`, fresh for every run.

Conditions for a git_commit call, checked in this order; the veto reason names the first failure
(the model sees `blocked_by_plugin: <reason>`):

1. `self_commit_disabled`: the process environment did not have LICH_ALLOW_SELF_COMMIT=1 (exactly
   "1") when the gatekeeper was built;
2. `tests_not_ok`: no run_tests call of this run succeeded, or the latest one failed;
3. `worktree_dirty`: a write tool (write_file, edit_file, apply_patch, memory_append) succeeded
   after that green run (a later green run clears it);
4. `commit_budget_exhausted`: this run already made its one commit.

A call the hooks allowed is armed for the tool; `git_commit` refuses a call nobody armed
(`agent_only: ...`), so running it directly (`lich tool`, lich.runTool) never commits.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from lich_core.errors import ToolError
from lich_core.gatekeeper.commit import MAX_PATHS, check_message, check_paths, commit_paths
from lich_core.gatekeeper.denylist import git_denylist_match
from lich_core.plugins.types import Plugin, PluginContext, ToolCallInfo, ToolResultInfo
from lich_core.tools.processes import tool_process_env
from lich_core.tools.types import ToolContext
from lich_core.vocabulary import ToolResult

GATEKEEPER_NAME = "gatekeeper"
GIT_COMMIT_TOOL = "git_commit"
ALLOW_SELF_COMMIT_ENV = "LICH_ALLOW_SELF_COMMIT"
TESTS_TOOL = "run_tests"
TERMINAL_TOOL = "terminal"
# Tools whose success makes the tree differ from what the last green run_tests saw.
WRITE_TOOLS = frozenset({"write_file", "edit_file", "apply_patch", "memory_append"})
COMMITS_PER_RUN = 1

# Veto reasons (the model reads `blocked_by_plugin: <reason>`).
SELF_COMMIT_DISABLED = "self_commit_disabled"
TESTS_NOT_OK = "tests_not_ok"
WORKTREE_DIRTY = "worktree_dirty"
COMMIT_BUDGET_EXHAUSTED = "commit_budget_exhausted"
DENYLIST_REASON_PREFIX = "git_denylist"
# git_commit's answer to a call that did not come through an agent run's hooks.
AGENT_ONLY_ERROR = "agent_only: git_commit runs only inside an agent task"

GIT_COMMIT_TIMEOUT_MS = 120_000

# Keys of the per-run state bag.
_GREEN = "tests_green"
_DIRTY = "worktree_dirty"
_COMMITS = "commits"
_ARMED = "armed_call"


def self_commit_allowed(environ: Mapping[str, str] | None = None) -> bool:
    """LICH_ALLOW_SELF_COMMIT is exactly "1" (anything else, or unset, is fail-closed)."""
    return (os.environ if environ is None else environ).get(ALLOW_SELF_COMMIT_ENV) == "1"


def _call_key(args: Any) -> str:
    return json.dumps(
        args if isinstance(args, dict) else {}, sort_keys=True, ensure_ascii=False, default=repr
    )


class Gatekeeper:
    """The plugin's behaviour; `plugin` is the Plugin object the host registers."""

    def __init__(self, *, allow_self_commit: bool) -> None:
        self.allow_self_commit = allow_self_commit
        self.tool = GitCommitTool(self)
        # Calls the hooks allowed and the tool has not run yet: call key -> tokens.
        self._armed: dict[str, list[object]] = {}
        self.plugin = Plugin(
            name=GATEKEEPER_NAME,
            tools=(self.tool,),
            hooks={
                "before_tool_call": self.before_tool_call,
                "after_tool_call": self.after_tool_call,
            },
        )

    # --- the conditions ---

    def commit_veto(self, state: Mapping[str, Any]) -> str | None:
        """The first failed condition for a git_commit call in a run with this state, or None."""
        if not self.allow_self_commit:
            return SELF_COMMIT_DISABLED
        if not state.get(_GREEN):
            return TESTS_NOT_OK
        if state.get(_DIRTY):
            return WORKTREE_DIRTY
        if state.get(_COMMITS, 0) >= COMMITS_PER_RUN:
            return COMMIT_BUDGET_EXHAUSTED
        return None

    # --- hooks ---

    def before_tool_call(self, info: ToolCallInfo, ctx: PluginContext) -> dict[str, Any] | None:
        name, args = info["tool_name"], info["args"]
        if name == TERMINAL_TOOL:
            command = args.get("command")
            pattern = git_denylist_match(command) if isinstance(command, str) else None
            if pattern is not None:
                return {"block": True, "reason": f"{DENYLIST_REASON_PREFIX}: {pattern}"}
            return None
        if name == GIT_COMMIT_TOOL:
            reason = self.commit_veto(ctx.state)
            if reason is not None:
                return {"block": True, "reason": reason}
            ctx.state[_ARMED] = self._arm(args)
        return None

    def after_tool_call(self, info: ToolResultInfo, ctx: PluginContext) -> None:
        name = info["tool_name"]
        ok = info["ok"] is True
        state = ctx.state
        if name == TESTS_TOOL:
            state[_GREEN] = ok
            if ok:
                state[_DIRTY] = False
        elif name in WRITE_TOOLS:
            if ok:
                state[_DIRTY] = True
        elif name == GIT_COMMIT_TOOL:
            armed = state.pop(_ARMED, None)
            if armed is not None:
                self._disarm(*armed)
            if ok:
                state[_COMMITS] = state.get(_COMMITS, 0) + 1

    # --- arming: a call reaches the git side only after the hooks allowed it ---

    def _arm(self, args: Any) -> tuple[str, object]:
        key, token = _call_key(args), object()
        self._armed.setdefault(key, []).append(token)
        return key, token

    def _disarm(self, key: str, token: object) -> None:
        tokens = self._armed.get(key)
        if tokens and token in tokens:
            tokens.remove(token)
        if not tokens:
            self._armed.pop(key, None)

    def consume(self, args: Any) -> bool:
        """True once for each call the hooks armed with these arguments."""
        key = _call_key(args)
        tokens = self._armed.get(key)
        if not tokens:
            return False
        tokens.pop(0)
        if not tokens:
            self._armed.pop(key, None)
        return True


GIT_COMMIT_DESCRIPTION = (
    "Commit named files to the local git repository: the last step of a change you proved with "
    "run_tests. Allowed once per task, only when the user set LICH_ALLOW_SELF_COMMIT=1, run_tests "
    "passed in this task and no file was written or edited since. Stages exactly `paths` (files "
    "relative to the work dir; deletions included) and commits only them: other changes stay "
    "uncommitted. Only files this task wrote with its write tools can be committed. Never "
    "pushes. Secrets (.env*, *.pem, *.key, id_rsa*, ...), globs and the work dir itself are refused. Returns the new commit's short sha, subject and files."
)

GIT_COMMIT_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "message": {
            "type": "string",
            "description": "Commit message: a short subject line, optionally a blank line and a body.",
        },
        "paths": {
            "type": "array",
            "items": {"type": "string"},
            "minItems": 1,
            "maxItems": MAX_PATHS,
            "description": f"1 to {MAX_PATHS} files (or directories) to commit, relative to the work dir.",
        },
    },
    "required": ["message", "paths"],
    "additionalProperties": False,
}


class GitCommitTool:
    """`git_commit`: agent-only (lich.runTool and `lich tool` refuse it)."""

    name = GIT_COMMIT_TOOL
    description = GIT_COMMIT_DESCRIPTION
    parameters = GIT_COMMIT_PARAMETERS
    capability = "process/exec"
    timeout_ms = GIT_COMMIT_TIMEOUT_MS
    agent_only = True

    def __init__(self, gatekeeper: Gatekeeper) -> None:
        self.gatekeeper = gatekeeper

    @property
    def offered(self) -> bool:
        """Offered to the model only when a commit can be allowed at all: a call is refused
        (self_commit_disabled) otherwise, and its schema costs every request."""
        return self.gatekeeper.allow_self_commit

    async def execute(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        if not self.gatekeeper.consume(args):
            return ToolResult(ok=False, error=AGENT_ONLY_ERROR)
        root = ctx.work_dir
        try:
            message = check_message(args.get("message"))
            paths = check_paths(root, args.get("paths"))
            written = {_relative(path, root) for path in ctx.written.paths}
            commit = await commit_paths(
                root, message, paths, env=tool_process_env(ctx), cancel=ctx.cancel, written=written
            )
        except ToolError as err:
            return ToolResult(ok=False, error=str(err))
        except OSError as err:  # git is not installed, the work dir vanished, ...
            return ToolResult(ok=False, error=f"git_failed: cannot run git: {err.strerror or err}")
        return ToolResult(ok=True, output=commit.render())


def _relative(path: Path, root: Path) -> str:
    """`path` as git names it from `root` (both real paths: the work dir may be reached by a link)."""
    return os.path.relpath(os.path.realpath(path), os.path.realpath(root)).replace(os.sep, "/")


def build_gatekeeper(environ: Mapping[str, str] | None = None) -> Gatekeeper:
    """A gatekeeper reading LICH_ALLOW_SELF_COMMIT from `environ` (default: the process
    environment) now, once: changing the variable later changes nothing for this one."""
    return Gatekeeper(allow_self_commit=self_commit_allowed(environ))
