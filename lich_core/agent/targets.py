"""What a tool call is about: its kind, its target and a one-line title, computed once here.

Every face shows tool calls from this: the agent's tool events (`tool_call_start` and
`tool_call_end` carry `kind`, `target` and `title`), `lich.thread`'s turns (each tool call), and
ACP's `tool_call` updates (title, kind and locations). The chats render the server's words and
derive nothing from the arguments themselves.

    describe_tool_call("read_file", {"path": "a.py", "start": 3, "end": 9})
    -> ToolDescription(kind="read", target=ToolTarget(path="a.py", lines=LineRange(start=3, end=9)),
                       title="read_file a.py", paths=("a.py",))
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from lich_core.agent.events import LineRange, ToolKind, ToolTarget
from lich_core.approvals import NET_CAPABILITY, url_host, what_will_run
from lich_core.tools.types import Tool, ToolContext, tool_capability

TITLE_ARG_CHARS = 80
# A target's command, query or URL as sent: at most this many characters (the arguments carry all).
TARGET_TEXT_CHARS = 500

PLAN_TOOL = "update_plan"
READ_TOOLS = frozenset(
    {"read_file", "docs_read", "list_dir", "disk_usage", "env_get", "process_list"}
)
SEARCH_TOOLS = frozenset({"grep_files", "find_files", "docs_search", "web_search"})
EDIT_TOOLS = frozenset({"edit_file", "write_file", "apply_patch", "memory_append"})
FETCH_TOOLS = frozenset({"fetch_url", "http_request"})
EXECUTE_TOOLS = frozenset({"terminal", "python_eval", "run_tests", "git_commit"})
PATH_ARGS = ("path", "file", "file_path", "uri")
QUERY_ARGS = ("query", "pattern", "glob")
COMMAND_ARGS = ("command", "cmd", "code")
# A patch's file headers: `@@ PATH`, `@@PATH`, `@@ PATH @@` (the parser's, without parsing).
PATCH_HEADER = re.compile(r"^@@ ?(?!\s*$)(.+?)(?: @@)?\s*$", re.MULTILINE)
MEMORY_FILE = "MEMORY.md"


@dataclass(frozen=True, slots=True)
class ToolDescription:
    """A tool call as every face shows it."""

    kind: ToolKind
    target: ToolTarget | None
    title: str
    # Every file the call names, as given (an apply_patch may name several): ACP's locations.
    paths: tuple[str, ...] = ()

    def locations(self, root: str | os.PathLike[str]) -> list[str]:
        """The named files as absolute paths under `root` (normalised)."""
        return [os.path.normpath(os.path.join(root, path)) for path in self.paths]


def _short(value: str, limit: int = TITLE_ARG_CHARS) -> str:
    text = " ".join(value.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _clip(value: str) -> str:
    return value if len(value) <= TARGET_TEXT_CHARS else value[: TARGET_TEXT_CHARS - 1] + "…"


def _first_str(args: Mapping[str, Any], keys: tuple[str, ...]) -> str | None:
    for key in keys:
        value = args.get(key)
        if isinstance(value, str) and value.strip():
            return value
    return None


def _line(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def patch_paths(patch: str) -> list[str]:
    """The files a hashline patch names in its section headers, in order, once each."""
    return list(dict.fromkeys(match.strip() for match in PATCH_HEADER.findall(patch)))


def tool_kind(name: str, capability: str | None = None) -> ToolKind:
    """read, edit, delete, move, search, execute, fetch, think or other."""
    if name == PLAN_TOOL:
        return "think"
    if name in SEARCH_TOOLS:
        return "search"
    if name in READ_TOOLS:
        return "read"
    if name in EDIT_TOOLS:
        return "edit"
    if name in FETCH_TOOLS:
        return "fetch"
    if name in EXECUTE_TOOLS:
        return "execute"
    lowered = name.lower()
    if capability in ("file/edit", "file/write"):
        if any(word in lowered for word in ("delete", "remove", "unlink")):
            return "delete"
        if any(word in lowered for word in ("move", "rename")):
            return "move"
        return "edit"
    if capability == "file/read":
        return "search" if any(w in lowered for w in ("search", "grep", "find")) else "read"
    if capability == "net/fetch":
        return "fetch"
    if capability in ("process/exec", "image/eval"):
        return "execute"
    return "other"


def describe_tool_call(
    name: str, arguments: Mapping[str, Any] | None, capability: str | None = None
) -> ToolDescription:
    """The kind, target and title of a call of tool `name` with `arguments` (the model's, parsed;
    anything that is not an object counts as none). `capability` (the tool's, when known) decides
    the kind of a tool this module does not name (MCP, plugins)."""
    args: Mapping[str, Any] = arguments if isinstance(arguments, Mapping) else {}
    kind = tool_kind(name, capability)
    paths: list[str] = []
    path = _first_str(args, PATH_ARGS)
    if path is not None:
        paths.append(path.strip())
    if name == "apply_patch" and isinstance(args.get("input"), str):
        paths.extend(p for p in patch_paths(args["input"]) if p not in paths)
    if name == "memory_append" and not paths:
        paths.append(MEMORY_FILE)
    target: ToolTarget | None = None
    if kind == "execute" and (command := _first_str(args, COMMAND_ARGS)) is not None:
        cwd = _first_str(args, ("cwd", "workdir"))
        target = ToolTarget(command=_clip(command), cwd=cwd)
    elif kind == "fetch" and (url := _first_str(args, ("url",))) is not None:
        target = ToolTarget(url=_clip(url))
    elif kind == "search" and (query := _first_str(args, QUERY_ARGS)) is not None:
        target = ToolTarget(query=_clip(query), path=paths[0] if paths else None)
    elif paths:
        start, end = _line(args.get("start")), _line(args.get("end"))
        lines = LineRange(start=start or 1, end=end) if start or end else None
        many = tuple(paths) if len(paths) > 1 else None
        target = ToolTarget(path=paths[0], paths=many, lines=lines)
    return ToolDescription(
        kind=kind, target=target, title=_title(name, args, paths), paths=tuple(paths)
    )


def _title(name: str, args: Mapping[str, Any], paths: list[str]) -> str:
    if paths:
        return f"{name} {_short(', '.join(paths))}"
    value = _first_str(args, ("command", "url", "query", "pattern", "code"))
    return f"{name} {_short(value)}" if value is not None else name


def approval_details(tool: Tool, args: Mapping[str, Any], ctx: ToolContext) -> dict[str, Any]:
    """An approval question as data (the `approval` event's fields but the question's id, text
    and options), the same for every face: the tool, its capability, kind and target (as the
    tool events say them), the command it runs and where, the host it reaches, what it will
    start."""
    capability = tool_capability(tool)
    described = describe_tool_call(tool.name, args, capability)
    target = described.target
    runs = described.kind == "execute"
    return {
        "tool": tool.name,
        "capability": capability,
        "kind": described.kind,
        "target": target,
        "command": target.command if target is not None else None,
        "cwd": ((target.cwd if target is not None else None) or str(ctx.work_dir))
        if runs
        else None,
        "host": url_host(args) if capability == NET_CAPABILITY else None,
        "what_will_run": what_will_run(tool, args, ctx),
    }
