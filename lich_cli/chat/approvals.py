"""Approvals in the terminal: the question the editors ask, answered inline with y, a or n.

The policy, the "always" store and what the question says are the core's (lich_core.approvals),
shared with the language server and ACP: an "a" here is remembered in the same per-workspace
store, so it holds in the editors too. The question's text is the language server's, word for
word ("lich wants to run terminal (process/exec): ..."), and the run reports it as the same
`approval` event first.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from lich_core.agent.targets import approval_details
from lich_core.approvals import (
    NET_CAPABILITY,
    ApprovalStore,
    call_approval_key,
    call_policy,
    question_text,
    refusal_before_asking,
    url_host,
)
from lich_core.tools.types import Tool, ToolContext, tool_capability

log = logging.getLogger("lich.cli.chat")

ONCE, ALWAYS, DENY = "y", "a", "n"
# The editors' answers, in their order (the `approval` event's options).
OPTIONS = ("Allow once", "Allow always", "Deny")

# (question, scope of "always") -> "y", "a" or "n"
Asker = Callable[[str, str], Awaitable[str]]


def question(tool: Tool, args: dict[str, Any], ctx: ToolContext) -> str:
    """The language server's question text (lich_lsp.approvals), for the same call."""
    capability = tool_capability(tool)
    what = f" ({capability})" if capability else ""
    host = url_host(args) if capability == NET_CAPABILITY else None
    target = f" on {host}" if host else ""
    return f"lich wants to run {tool.name}{target}{what}: {question_text(tool, args, ctx)}"


def always_scope(key: str) -> str:
    """What "always" allows, in words: `terminal`, `fetch_url on docs.python.org`."""
    tool, _, rest = key.partition("@")
    return f"{tool} on {rest}" if rest else tool


class ChatApprovalCheck:
    """The CallCheck of `lich chat` in a terminal: asks through `asker` what the policy says to ask."""

    def __init__(self, root: Path, asker: Asker) -> None:
        self.store = ApprovalStore(root)
        self.asker = asker
        self._asked = itertools.count(1)  # the questions' ids

    async def __call__(self, tool: Tool, args: dict[str, Any], ctx: ToolContext) -> str | None:
        policy = call_policy(ctx.settings.approval, tool, args, ctx)
        if policy == "allow":
            return None
        if policy == "deny":
            return f"approval_denied: {tool.name} is denied by the approval policy"
        key = call_approval_key(tool, args, ctx)
        if self.store.is_always(key):
            return None
        if self.store.is_never(key):
            return f"approval_denied: the user rejected {tool.name} always for this workspace"
        refusal = refusal_before_asking(tool, args, ctx)
        if refusal is not None:  # refused whatever the answer: not worth a question
            return refusal
        text = question(tool, args, ctx)
        await _report(ctx, tool, args, text, f"approval-{next(self._asked)}")
        scope = f"{always_scope(key)} in this workspace"
        answer = await self.asker(text, scope)
        if answer == ONCE:
            return None
        if answer == ALWAYS:
            try:
                self.store.remember(key)
            except OSError as err:
                log.warning("could not save %s: %s", self.store.path, err)
            return None
        return (
            "cancelled" if ctx.cancel.cancelled else f"approval_denied: the user denied {tool.name}"
        )


async def _report(
    ctx: ToolContext, tool: Tool, args: dict[str, Any], text: str, question_id: str
) -> None:
    """The run's `approval` event, with the fields the language server gives it."""
    if ctx.report_approval is None:
        return
    await ctx.report_approval(
        {
            "id": question_id,
            **approval_details(tool, args, ctx),
            "question": text,
            "options": OPTIONS,
        }
    )
