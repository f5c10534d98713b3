"""Approval policy shared by the agent's faces (the language server, the ACP agent).

Policy per tool name or capability (`approval: {"terminal": "ask", "net/fetch": "deny"}`): the
tool name wins over its capability; unnamed tools get `default_approval` (ask for process/exec,
net/fetch, image/eval and mcp/call). "Allow always" answers are remembered per workspace in the
user state dir (`approvals.json` in the workspace's folder there), never in the repository, so a
repository cannot ship answers; for a `net/fetch` tool only for that tool on that URL's host.
"Reject always" (the ACP face's option) is remembered the same way and refuses without asking.
How the question is asked is each face's business (lich_lsp.approvals, lich_acp.approvals).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from lich_core.config import default_approval
from lich_core.userstate import read_json, workspace_state_dir, write_json_atomic

APPROVALS_FILE_NAME = "approvals.json"
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
            self._never = {name for name in never if isinstance(name, str)} if isinstance(never, list) else set()
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
