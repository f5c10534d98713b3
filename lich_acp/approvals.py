"""Tool approvals over ACP: a CallCheck asking through `session/request_permission`.

The policy is the one lich_core.approvals holds for every face (the language server uses it too): per tool name or
capability from the `approval` config key, defaults from lich_core.config.default_approval (ask
for process/exec, net/fetch and image/eval). "Allow always" and "Reject always" are remembered in
the same user-state ApprovalStore the LSP uses (per workspace, per tool, per host for a fetch),
so they hold for later sessions, later agent processes and the language server too. A cancelled
or failed request is a denial. The request's tool call carries, as its content, what the call
will start (lich_core.approvals.what_will_run, the same line the language server's question shows):
the command line, the interpreter and whether it is the repository's, the files it loads.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from acp import text_block, tool_content
from acp.schema import PermissionOption, ToolCallUpdate

from lich_acp.events import ClientBridge, tool_call_view
from lich_core.approvals import (
    NET_CAPABILITY,
    ApprovalStore,
    call_approval_key,
    call_policy,
    refusal_before_asking,
    url_host,
    what_will_run,
)
from lich_core.settings import settings_of
from lich_core.tools.types import Tool, ToolContext, tool_capability

log = logging.getLogger("lich.acp.approvals")

ALLOW_ONCE = "allow_once"
ALLOW_ALWAYS = "allow_always"
REJECT_ONCE = "reject_once"
REJECT_ALWAYS = "reject_always"
OPTIONS = [
    PermissionOption(option_id=ALLOW_ONCE, name="Allow once", kind="allow_once"),
    PermissionOption(option_id=ALLOW_ALWAYS, name="Allow always", kind="allow_always"),
    PermissionOption(option_id=REJECT_ONCE, name="Reject", kind="reject_once"),
    PermissionOption(option_id=REJECT_ALWAYS, name="Reject always", kind="reject_always"),
]


class AcpApprovalCheck:
    """The CallCheck installed in a session's tool runtime."""

    def __init__(
        self,
        root: Path,
        bridge: ClientBridge,
        config: Mapping[str, Any],
        current_call_id: Callable[[], str | None],
        store: ApprovalStore | None = None,
    ) -> None:
        self.root = root
        self.bridge = bridge
        self.config = config
        self.current_call_id = current_call_id
        self.store = store or ApprovalStore(root)
        self._lock = asyncio.Lock()

    async def __call__(self, tool: Tool, args: dict[str, Any], ctx: ToolContext) -> str | None:
        capability = tool_capability(tool)
        policy = call_policy(settings_of(self.config).approval, tool, args, ctx)
        if policy == "allow":
            return None
        if policy == "deny":
            return f"approval_denied: {tool.name} is denied by the approval policy"
        key = call_approval_key(tool, args, ctx)
        async with self._lock:
            if self.store.is_never(key):
                return f"approval_denied: the user rejected {tool.name} always for this workspace"
            if self.store.is_always(key):
                return None
            refusal = refusal_before_asking(tool, args, ctx)
            if refusal is not None:  # refused whatever the answer: not worth a question
                return refusal
            answer = await self._ask(tool, args, capability, ctx)
        if answer == ALLOW_ONCE:
            return None
        if answer in (ALLOW_ALWAYS, REJECT_ALWAYS):
            try:
                (self.store.remember if answer == ALLOW_ALWAYS else self.store.remember_never)(key)
            except OSError as err:
                log.warning("could not save %s: %s", self.store.path, err)
            if answer == ALLOW_ALWAYS:
                return None
        return f"approval_denied: the user denied {tool.name}"

    async def _ask(
        self, tool: Tool, args: dict[str, Any], capability: str | None, ctx: ToolContext
    ) -> str | None:
        host = url_host(args) if capability == NET_CAPABILITY else None
        title, kind, locations = tool_call_view(self.root, tool.name, args, capability)
        title += f" (on {host})" if host else ""
        running = what_will_run(tool, args, ctx)
        call = ToolCallUpdate(
            tool_call_id=self.current_call_id() or f"approval-{tool.name}",
            title=title,
            kind=kind,
            status="pending",
            locations=locations,
            raw_input=args,
            content=[tool_content(text_block(running))] if running else None,
        )
        bridge = self.bridge
        try:
            response = await bridge.call(
                lambda: bridge.conn.request_permission(
                    session_id=bridge.session_id, tool_call=call, options=OPTIONS
                ),
                cancel=ctx.cancel,
            )
        except asyncio.CancelledError:
            if ctx.cancel is not None and ctx.cancel.cancelled:
                return None
            raise
        except Exception as err:  # noqa: BLE001 - no answer is a denial
            log.warning("session/request_permission failed: %s", err)
            return None
        outcome = response.outcome
        if getattr(outcome, "outcome", None) != "selected":
            return None  # cancelled
        return str(getattr(outcome, "option_id", "") or "") or None
