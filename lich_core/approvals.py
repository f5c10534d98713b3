"""Approval policy shared by the agent's faces (the language server, the ACP agent).

Policy per tool name or capability (`approval: {"terminal": "ask", "net/fetch": "deny"}`): the
tool name wins over its capability; unnamed tools get `default_approval` (ask for process/exec,
net/fetch, image/eval and mcp/call). "Allow always" answers are remembered per workspace in the
user state dir (`approvals.json` in the workspace's folder there), never in the repository, so a
repository cannot ship answers; for a `net/fetch` tool only for that tool on that URL's host.
"Reject always" (the ACP face's option) is remembered the same way and refuses without asking.
How the question is asked is each face's business (lich_lsp.approvals, lich_acp.approvals); what
it says will run is `what_will_run`, the same text in every face (and in the CLI's refusal,
`CliApprovalCheck`, where nothing can ask). A call refused whatever the answer (run_tests after
the agent wrote files: `refusal_before_asking`) is refused without a question, saying why.

A write to a project rules file (AGENTS.md, CLAUDE.md, .github/copilot-instructions.md:
lich_core.project_rules) is asked about whatever the policy of the writing tool, unless that
policy denies it (`call_policy`): later tasks are given the file as instructions, so the agent
must not change them unseen. Its "Allow always" is remembered for that tool and those files only
(`call_approval_key`); the CLI, which cannot ask, refuses it (`CliApprovalCheck`).
"""

from __future__ import annotations

import json
import logging
import shlex
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from lich_core.config import default_approval
from lich_core.errors import ToolError
from lich_core.hashline.patch import PatchSyntaxError, parse_patch
from lich_core.project_rules import is_project_rules_file
from lich_core.settings import settings_of
from lich_core.tools.guard import relative_to_root, resolve_safe_path
from lich_core.tools.types import Tool, ToolContext, tool_capability
from lich_core.trust import WORKSPACE_CHANGED
from lich_core.userstate import read_json, workspace_state_dir, write_json_atomic

log = logging.getLogger("lich.approvals")

APPROVALS_FILE_NAME = "approvals.json"
MCP_CAPABILITY = "mcp/call"
MAX_SHOWN_COMMAND_CHARS = 200
ARGS_PREVIEW_CHARS = 300
NET_CAPABILITY = "net/fetch"


def policy_for(approval: Mapping[str, str], tool_name: str, capability: str | None) -> str:
    if tool_name in approval:
        return approval[tool_name]
    if capability and capability in approval:
        return approval[capability]
    return default_approval(capability)


def url_host(args: Mapping[str, Any]) -> str | None:
    """The host a network tool's `url` argument names (for the question and "Allow always")."""
    url = args.get("url")
    if not isinstance(url, str):
        return None
    try:
        host = urlsplit(url.strip()).hostname
    except ValueError:
        return None
    return host.rstrip(".").lower() if host else None


def approval_key(tool_name: str, capability: str | None, args: Mapping[str, Any]) -> str:
    """What "Allow always" remembers: the tool, and for a fetch its URL's host too (allowing
    fetch_url on docs.python.org allows nothing else)."""
    host = url_host(args) if capability == NET_CAPABILITY else None
    return f"{tool_name}@{host}" if host else tool_name


# --- writes to project rules files ---

WRITE_CAPABILITIES = frozenset({"file/write", "file/edit"})
PATCH_TOOL = "apply_patch"


def project_rules_written(tool: Tool, args: Mapping[str, Any], ctx: ToolContext) -> list[str]:
    """The project rules files (root-relative, lich_core.project_rules.is_project_rules_file) this
    call would write: the `path` of a file/write or file/edit tool (write_file, edit_file, a
    plugin's), the sections of an apply_patch patch, the files of the repair preview an
    apply_patch accept_repair applies. A path the guard refuses is left out: the tool refuses it
    too."""
    if tool_capability(tool) not in WRITE_CAPABILITIES:
        return []
    targets: list[str] = []
    path = args.get("path")
    if isinstance(path, str) and path:
        targets.append(path)
    if tool.name == PATCH_TOOL:
        targets.extend(_patch_targets(args, ctx))
    found: list[str] = []
    for target in targets:
        rel = _root_relative(ctx.work_dir, target)
        if rel is not None and is_project_rules_file(rel) and rel not in found:
            found.append(rel)
    return found


def _patch_targets(args: Mapping[str, Any], ctx: ToolContext) -> list[str]:
    patch = args.get("input")
    targets: list[str] = []
    if isinstance(patch, str):
        try:
            targets.extend(section.path for section in parse_patch(patch))
        except PatchSyntaxError:
            pass  # the tool refuses it, writing nothing
    candidate_id = args.get("accept_repair")
    candidates = ctx.read_state.repair_candidates if ctx.read_state is not None else {}
    candidate = candidates.get(candidate_id) if isinstance(candidate_id, str) else None
    files = candidate.get("files") if isinstance(candidate, dict) else None
    if isinstance(files, dict):
        targets.extend(
            str(entry[0]) for entry in files.values() if isinstance(entry, list) and entry
        )
    return targets


def _root_relative(root: Path, target: str) -> str | None:
    try:
        return relative_to_root(root, resolve_safe_path(root, target))
    except ToolError:
        return None


def call_policy(
    approval: Mapping[str, str], tool: Tool, args: Mapping[str, Any], ctx: ToolContext
) -> str:
    """policy_for this call: "ask" for a write to a project rules file, unless the tool's policy
    is "deny" (an "allow" for the tool, or the default "allow" of the file tools, does not cover
    changing the instructions later tasks are given)."""
    policy = policy_for(approval, tool.name, tool_capability(tool))
    if policy != "deny" and project_rules_written(tool, args, ctx):
        return "ask"
    return policy


def call_approval_key(tool: Tool, args: Mapping[str, Any], ctx: ToolContext) -> str:
    """approval_key for this call; for a write to project rules files, the tool and those files
    (`write_file@AGENTS.md`), so an "Allow always" for the tool's other writes never covers
    them, and one for them covers nothing else."""
    rules = project_rules_written(tool, args, ctx)
    if rules:
        return f"{tool.name}@{','.join(sorted(rules))}"
    return approval_key(tool.name, tool_capability(tool), args)


def what_will_run(tool: Tool, args: Mapping[str, Any], ctx: ToolContext) -> str | None:
    """What this call will start, for the approval question: the command line, the interpreter
    and whether it is the repository's, and which repository files it loads; for a write to
    project rules files, that it changes the instructions later tasks are given. None for a tool
    that starts nothing (reads, other edits, fetches)."""
    try:
        rules = project_rules_written(tool, args, ctx)
        if rules:
            return rules_write_text(rules)
        return _what_will_run(tool, args, ctx)
    except Exception:  # noqa: BLE001 - a question without the line beats no question
        log.exception("what_will_run failed for %s", tool.name)
        return None


def rules_write_text(rules: list[str]) -> str:
    """`writes AGENTS.md, project rules that later tasks are given as instructions`."""
    return f"writes {', '.join(rules)}, project rules that later tasks are given as instructions"


def _what_will_run(tool: Tool, args: Mapping[str, Any], ctx: ToolContext) -> str | None:
    # Imported here: the tool modules are heavier than the policy, and only a question needs them.
    from lich_core.tools.builtin import python_eval, run_tests
    from lich_core.tools.python_image import workspace_trusted

    settings, root = ctx.settings, ctx.work_dir
    if tool.name == "terminal":
        command = args.get("command")
        if not isinstance(command, str) or not command.strip():
            return None
        shell = (
            args.get("shell")
            if isinstance(args.get("shell"), str) and args.get("shell")
            else "bash"
        )
        text = f"runs `{_short(command.strip())}` with {shell} -lc in the workspace"
        files = run_tests.repository_files_run(command, root)
        return text + (f"; runs {', '.join(files)} from this repository" if files else "")
    if tool.name == "run_tests":
        try:
            plan = run_tests.plan_for(settings, root, _test_filter(args))
        except ToolError as err:
            if str(err).startswith(WORKSPACE_CHANGED):
                return f"runs nothing: {err}"
            return "runs nothing: no test command is configured and this is not a Python project"
        return run_tests.describe_plan(plan, root, workspace_trusted(settings))
    if tool.name == "python_eval":
        return python_eval.describe_eval(settings, root)
    server = getattr(tool, "server", None)
    if tool_capability(tool) == MCP_CAPABILITY and isinstance(server, str):
        return _describe_mcp(tool, server, settings)
    return None


def refusal_before_asking(tool: Tool, args: Mapping[str, Any], ctx: ToolContext) -> str | None:
    """The refusal the call will get whatever the user answers, so the faces refuse it at once
    instead of asking: run_tests while the test command may not run (`workspace_changed:`, the
    agent wrote files since the user's last yes; lich_core.tools.builtin.run_tests.plan_for).
    The same text as the tool's own error. None when the question is worth asking."""
    if tool.name != "run_tests":
        return None
    from lich_core.tools.builtin import run_tests  # the tool module, only when a question needs it

    try:
        run_tests.plan_for(ctx.settings, ctx.work_dir, _test_filter(args))
    except ToolError as err:
        return str(err) if str(err).startswith(WORKSPACE_CHANGED) else None
    except Exception:  # noqa: BLE001 - then ask; the tool itself checks again before it runs
        log.exception("refusal_before_asking failed for %s", tool.name)
    return None


def _test_filter(args: Mapping[str, Any]) -> str | None:
    raw = args.get("filter")
    return raw if isinstance(raw, str) and raw.strip() else None


def _describe_mcp(tool: Tool, server: str, settings: Mapping[str, Any]) -> str:
    remote = getattr(tool, "remote_name", tool.name)
    servers = settings_of(settings).mcp_servers
    entry = servers.get(server) if isinstance(servers, Mapping) else None
    where = ""
    if isinstance(entry, Mapping) and isinstance(entry.get("command"), str):
        words = [
            entry["command"],
            *(str(arg) for arg in entry.get("args") or [] if isinstance(arg, (str, int, float))),
        ]
        where = f" (started as `{_short(shlex.join(words))}`)"
    elif isinstance(entry, Mapping) and isinstance(entry.get("url"), str):
        where = f" at {_short(entry['url'])}"
    return f"calls {remote} on the MCP server {server}{where}"


def _short(text: str, limit: int = MAX_SHOWN_COMMAND_CHARS) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def question_text(tool: Tool, args: Mapping[str, Any], ctx: ToolContext) -> str:
    """The question's body after "lich wants to run <tool> (<capability>)": what will run, then
    the arguments."""
    running = what_will_run(tool, args, ctx)
    preview = summarize_args(args)
    return f"{running}. Arguments: {preview}" if running else preview


def summarize_args(args: Mapping[str, Any]) -> str:
    text = json.dumps(args, ensure_ascii=False, sort_keys=True)
    if len(text) > ARGS_PREVIEW_CHARS:
        text = text[:ARGS_PREVIEW_CHARS] + "…"
    return text


class ApprovalStore:
    """Tools the user allowed always, or rejected always, for this workspace (its folder in the
    user state dir): `{"always": [...], "never": [...]}`, `never` left out while empty. Only the
    ACP face offers "reject always"; both faces honour it."""

    def __init__(self, root: Path) -> None:
        self.path = workspace_state_dir(root) / APPROVALS_FILE_NAME
        self._always: set[str] | None = None
        self._never: set[str] = set()

    def _load(self) -> set[str]:
        if self._always is None:
            data = read_json(self.path)
            names = data.get("always", []) if isinstance(data, dict) else []
            never = data.get("never", []) if isinstance(data, dict) else []
            self._always = {name for name in names if isinstance(name, str)}
            self._never = (
                {name for name in never if isinstance(name, str)}
                if isinstance(never, list)
                else set()
            )
        return self._always

    def is_always(self, tool_name: str) -> bool:
        return tool_name in self._load()

    def is_never(self, tool_name: str) -> bool:
        self._load()
        return tool_name in self._never

    def remember(self, tool_name: str) -> None:
        names = self._load()
        names.add(tool_name)
        self._never.discard(tool_name)
        self._save()

    def remember_never(self, tool_name: str) -> None:
        self._load().discard(tool_name)
        self._never.add(tool_name)
        self._save()

    def _save(self) -> None:
        data: dict[str, list[str]] = {"always": sorted(self._load())}
        if self._never:
            data["never"] = sorted(self._never)
        write_json_atomic(self.path, data)


class CliApprovalCheck:
    """The `lich` command line's CallCheck: nothing there can ask, so a call the user's or the
    workspace's `approval` entries mark "ask" or "deny" is refused, the "ask" refusal saying what
    would have run. Calls no entry names run as before (the defaults' "ask" needs an editor to
    ask in; the CLI's bound is the `capabilities` key)."""

    def __init__(self, approval: Mapping[str, str]) -> None:
        self.approval = dict(approval)

    async def __call__(self, tool: Tool, args: dict[str, Any], ctx: ToolContext) -> str | None:
        capability = tool_capability(tool)
        rules = project_rules_written(tool, args, ctx)
        if rules and policy_for(self.approval, tool.name, capability) != "deny":
            return (
                f"approval_denied: {tool.name} {rules_write_text(rules)}; such a write needs the "
                "user's approval and the lich command line cannot ask; the user can edit "
                f"{rules[0]} themselves, or ask from an editor, which asks"
            )
        named = (
            tool.name
            if tool.name in self.approval
            else capability
            if capability in self.approval
            else None
        )
        if named is None:
            return None
        policy = self.approval[named]
        if policy == "deny":
            return f"approval_denied: {tool.name} is denied by the approval policy"
        if policy != "ask":
            return None
        refusal = refusal_before_asking(tool, args, ctx)
        if refusal is not None:
            return refusal
        running = what_will_run(tool, args, ctx)
        would = f"; the call {running}" if running else ""
        return (
            f'approval_denied: {tool.name} needs the user\'s approval (approval.{named} is "ask") and the '
            f'lich command line cannot ask{would}; allow it with the config key approval.{tool.name} = "allow"'
        )
