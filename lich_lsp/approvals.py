"""Tool approvals: a ToolExecutor call check asking the user before risky tools run.

Policy per tool name or capability (`approval: {"terminal": "ask", "net/fetch": "deny"}`); the
tool name wins over its capability. Defaults: `ask` for process/exec, net/fetch and image/eval,
`allow` for everything else (reads, and edits, which the editor can undo). `ask` shows
`window/showMessageRequest` with Allow once / Allow always / Deny; "Allow always" is remembered
for the workspace in the user state dir (`approvals.json` in the workspace's folder there), never
in the repository, so a repository cannot ship answers. For a `net/fetch` tool the question names
the URL's host ("lich wants to run fetch_url on docs.python.org …") and "Allow always" is
remembered for that tool on that host only. A client that cannot show such a request
gets a clear denial instead of a silent allow.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from lsprotocol import types

from lich_core.config import default_approval
from lich_core.tools.types import Tool, ToolContext, tool_capability
from lich_core.userstate import read_json, workspace_state_dir, write_json_atomic

if TYPE_CHECKING:
    from lich_lsp.session import EditorSession

log = logging.getLogger("lich.lsp.approvals")

APPROVALS_FILE_NAME = "approvals.json"
ALLOW_ONCE = "Allow once"
ALLOW_ALWAYS = "Allow always"
DENY = "Deny"
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


def summarize_args(args: Mapping[str, Any]) -> str:
    text = json.dumps(args, ensure_ascii=False, sort_keys=True)
    if len(text) > ARGS_PREVIEW_CHARS:
        text = text[:ARGS_PREVIEW_CHARS] + "…"
    return text


class ApprovalStore:
    """Tools the user allowed always for this workspace (its folder in the user state dir)."""

    def __init__(self, root: Path) -> None:
        self.path = workspace_state_dir(root) / APPROVALS_FILE_NAME
        self._always: set[str] | None = None

    def _load(self) -> set[str]:
        if self._always is None:
            data = read_json(self.path)
            names = data.get("always", []) if isinstance(data, dict) else []
            self._always = {name for name in names if isinstance(name, str)}
        return self._always

    def is_always(self, tool_name: str) -> bool:
        return tool_name in self._load()

    def remember(self, tool_name: str) -> None:
        names = self._load()
        names.add(tool_name)
        write_json_atomic(self.path, {"always": sorted(names)})


class ApprovalCheck:
    """The CallCheck the server installs in every tool executor it builds."""

    def __init__(self, session: EditorSession) -> None:
        self._session = session
        # One question at a time: two prompts for the same tool would both ask.
        self._prompt_lock = asyncio.Lock()

    async def __call__(self, tool: Tool, args: dict[str, Any], ctx: ToolContext) -> str | None:
        session = self._session
        approval = session.config.get("approval") or {}
        capability = tool_capability(tool)
        policy = policy_for(approval, tool.name, capability)
        if policy == "allow":
            return None
        if policy == "ask" and getattr(ctx.workspace, "user_invoked", False):
            return None  # the user asked for this very call (lich.runTests): that is the answer
        if policy == "deny":
            return f"approval_denied: {tool.name} is denied by the approval policy"
        store = session.approvals
        key = approval_key(tool.name, capability, args)
        if store.is_always(key):
            return None
        if not session.features.show_message_request:
            return (
                f"approval_denied: {tool.name} needs the user's approval but this editor cannot ask "
                "(no window/showMessageRequest support); allow it with the config key "
                f"approval.{tool.name} = \"allow\""
            )
        async with self._prompt_lock:
            if store.is_always(key):
                return None
            answer = await self._ask(tool, args, capability)
        if answer == ALLOW_ONCE:
            return None
        if answer == ALLOW_ALWAYS:
            try:
                store.remember(key)
            except OSError as err:
                session.log(f"lich: could not save {store.path}: {err}", types.MessageType.Warning)
            return None
        return f"approval_denied: the user denied {tool.name}"

    async def _ask(self, tool: Tool, args: dict[str, Any], capability: str | None) -> str | None:
        what = f" ({capability})" if capability else ""
        host = url_host(args) if capability == NET_CAPABILITY else None
        target = f" on {host}" if host else ""
        try:
            answer = await self._session.port.ask(
                types.ShowMessageRequestParams(
                    type=types.MessageType.Warning,
                    message=f"lich wants to run {tool.name}{target}{what}: {summarize_args(args)}",
                    actions=[
                        types.MessageActionItem(ALLOW_ONCE),
                        types.MessageActionItem(ALLOW_ALWAYS),
                        types.MessageActionItem(DENY),
                    ],
                )
            )
        except asyncio.CancelledError:
            raise
        except Exception as err:  # noqa: BLE001 - no answer is a denial
            log.warning("approval request failed: %s", err)
            return None
        return answer.title if answer is not None else None
