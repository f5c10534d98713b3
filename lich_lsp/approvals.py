"""Tool approvals: a ToolExecutor call check asking the user before risky tools run.

Policy per tool name or capability (`approval: {"terminal": "ask", "net/fetch": "deny"}`); the
tool name wins over its capability. Defaults: `ask` for process/exec, net/fetch and image/eval,
`allow` for everything else (reads, and edits, which the editor can undo). `ask` shows
`window/showMessageRequest` with Allow once / Allow always / Deny; "Allow always" is remembered
for the workspace in the user state dir (`approvals.json` in the workspace's folder there), never
in the repository, so a repository cannot ship answers. For a `net/fetch` tool the question names
the URL's host ("lich wants to run fetch_url on docs.python.org …") and "Allow always" is
remembered for that tool on that host only. A tool that starts something says what before its
arguments (lich_core.approvals.what_will_run: the command line, the interpreter and whether it is
the repository's, the repository files it loads). A client that cannot show such a request
(Helix, Kate) gets the question as a pending question (lich_lsp.pending_questions): a diagnostic
with the code actions Allow once / Allow always / Deny, answered through `lich.answerQuestion`;
the tool waits for it up to PENDING_APPROVAL_TIMEOUT_S, or until its task is cancelled. Unanswered
in time, the call is denied, saying why, and the editor is told.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from typing import TYPE_CHECKING, Any

from lsprotocol import types

from lich_core.agent.targets import approval_details, describe_tool_call
from lich_core.approvals import (  # the policy and the store live in the core, shared with ACP
    NET_CAPABILITY,
    call_approval_key,
    call_policy,
    question_text,
    refusal_before_asking,
    url_host,
    what_will_run,
)
from lich_core.tools.types import Tool, ToolContext, tool_capability
from lich_lsp.pending_questions import PENDING_APPROVAL_TIMEOUT_S, Choice

if TYPE_CHECKING:
    from lich_core.approvals import ApprovalStore
    from lich_lsp.context import SessionContext
    from lich_lsp.pending_questions import PendingQuestions

log = logging.getLogger("lich.lsp.approvals")

ALLOW_ONCE = "Allow once"
ALLOW_ALWAYS = "Allow always"
DENY = "Deny"
# The same answers as code actions, for a client that cannot show a question (lich.answerQuestion).
PENDING_CHOICES = (Choice("once", ALLOW_ONCE), Choice("always", ALLOW_ALWAYS), Choice("deny", DENY))


class ApprovalCheck:
    """The CallCheck the server installs in every tool executor it builds."""

    def __init__(
        self, *, ctx: SessionContext, store: ApprovalStore, questions: PendingQuestions
    ) -> None:
        self._store = store
        self._features = ctx.features
        self._port = ctx.port
        self._questions = questions
        self._messages = ctx.messages
        # One question at a time: two prompts for the same tool would both ask.
        self._prompt_lock = asyncio.Lock()
        self._asked = itertools.count(1)  # ids of the questions asked as requests

    async def __call__(self, tool: Tool, args: dict[str, Any], ctx: ToolContext) -> str | None:
        # The settings of the runtime the call runs on: a task keeps the approval policy it started
        # with when the config is reloaded meanwhile (the next task gets the new one).
        approval = ctx.settings.approval
        capability = tool_capability(tool)
        policy = call_policy(approval, tool, args, ctx)
        if policy == "allow":
            return None
        if policy == "ask" and ctx.workspace is not None and ctx.workspace.user_invoked:
            return None  # the user asked for this very call (lich.runTests): that is the answer
        if policy == "deny":
            return f"approval_denied: {tool.name} is denied by the approval policy"
        store = self._store
        key = call_approval_key(tool, args, ctx)
        if store.is_always(key):
            return None
        if store.is_never(key):  # "Reject always", answered in the ACP face: the same store
            return f"approval_denied: the user rejected {tool.name} always for this workspace"
        async with self._prompt_lock:
            if store.is_always(key):
                return None
            refusal = refusal_before_asking(tool, args, ctx)
            if refusal is not None:  # refused whatever the answer: not worth a question
                return refusal
            if self._features.show_message_request:
                answer = await self._ask(tool, args, capability, ctx)
            else:
                answer = await self._ask_pending(tool, args, capability, ctx)
                if answer is None:
                    return (
                        "cancelled" if ctx.cancel.cancelled else self._unanswered(tool, args, ctx)
                    )
        if answer == ALLOW_ONCE:
            return None
        if answer == ALLOW_ALWAYS:
            try:
                store.remember(key)
            except OSError as err:
                self._messages.log(
                    f"lich: could not save {store.path}: {err}", types.MessageType.Warning
                )
            return None
        return f"approval_denied: the user denied {tool.name}"

    async def _ask(
        self, tool: Tool, args: dict[str, Any], capability: str | None, ctx: ToolContext
    ) -> str | None:
        message = _question(tool, args, capability, ctx)
        await _report(ctx, tool, args, f"approval-{next(self._asked)}", message)
        try:
            answer = await self._port.ask(
                types.ShowMessageRequestParams(
                    type=types.MessageType.Warning,
                    message=message,
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

    async def _ask_pending(
        self, tool: Tool, args: dict[str, Any], capability: str | None, ctx: ToolContext
    ) -> str | None:
        """The question as a diagnostic with code actions; the answer's title, None when unanswered."""
        questions = self._questions
        message = _question(tool, args, capability, ctx)
        # The code actions name what they allow (a menu of titles is all Kate or Helix show),
        # and "Allow always" its whole scope, wider than this one call.
        choices = (
            Choice("once", ALLOW_ONCE),
            Choice("always", f"{ALLOW_ALWAYS} ({always_scope(tool, args, ctx)})"),
            Choice("deny", DENY),
        )
        subject = approval_subject(tool, args, capability)
        question = questions.post("approval", message, subject, choices)
        await _report(ctx, tool, args, question.question_id, message)
        answer = await questions.wait(question, ctx.cancel, PENDING_APPROVAL_TIMEOUT_S)
        return next((c.title for c in PENDING_CHOICES if c.answer == answer), None)

    def _unanswered(self, tool: Tool, args: dict[str, Any], ctx: ToolContext) -> str:
        running = what_will_run(tool, args, ctx)
        self._messages.show_message(
            f"lich: {tool.name} was refused: its approval question was not answered within "
            f"{PENDING_APPROVAL_TIMEOUT_S:g} s (this editor cannot show questions; answer the lich diagnostic's "
            f'code actions, or set approval.{tool.name} = "allow")',
            types.MessageType.Warning,
        )
        return (
            f"approval_denied: {tool.name} needs the user's approval, this editor cannot ask "
            "(no window/showMessageRequest support), and the question shown as a diagnostic was not answered "
            f"within {PENDING_APPROVAL_TIMEOUT_S:g} s"
            + (f"; the call {running}" if running else "")
            + f'; allow it with the config key approval.{tool.name} = "allow"'
        )


# The command or file an answer's code action names, at most this long (a menu line).
SUBJECT_MAX_CHARS = 60


def approval_subject(tool: Tool, args: dict[str, Any], capability: str | None) -> str:
    """What a pending approval question's answers allow, after each code action's title: a menu
    of titles is all Kate or Helix show, so it names the command (`Allow once: run `make test`
    (terminal)`), else the file or URL (`Allow once: edit_file src/app.py`)."""
    described = describe_tool_call(tool.name, args, capability)
    target = described.target
    command = target.command if target is not None else None
    if described.kind == "execute" and command:
        return f"run `{_clip(command)}` ({tool.name})"
    return _clip(described.title) if described.title else f"run {tool.name}"


def always_scope(tool: Tool, args: dict[str, Any], ctx: ToolContext) -> str:
    """What "Allow always" allows from then on (its approval key, lich_core.approvals):
    `every terminal call`, `fetch_url on docs.python.org`, `write_file to AGENTS.md`."""
    name, _, where = call_approval_key(tool, args, ctx).partition("@")
    if not where:
        return f"every {name} call"
    return f"{name} on {where}" if tool_capability(tool) == NET_CAPABILITY else f"{name} to {where}"


def _clip(text: str) -> str:
    line = " ".join(text.split())
    return line if len(line) <= SUBJECT_MAX_CHARS else line[: SUBJECT_MAX_CHARS - 1] + "…"


async def _report(
    ctx: ToolContext, tool: Tool, args: dict[str, Any], question_id: str, message: str
) -> None:
    """The task's `approval` event: the question as data, sent before the question itself
    (lich/event notifications and the request go out in order), so a client renders it from
    the data and matches the request by its message."""
    if ctx.report_approval is None:
        return
    try:
        await ctx.report_approval(
            {
                **approval_details(tool, args, ctx),
                "id": question_id,
                "question": message,
                "options": tuple(choice.title for choice in PENDING_CHOICES),
            }
        )
    except Exception:  # noqa: BLE001 - the question is asked all the same
        log.warning("approval event failed", exc_info=True)


def _question(tool: Tool, args: dict[str, Any], capability: str | None, ctx: ToolContext) -> str:
    what = f" ({capability})" if capability else ""
    host = url_host(args) if capability == NET_CAPABILITY else None
    target = f" on {host}" if host else ""
    return f"lich wants to run {tool.name}{target}{what}: {question_text(tool, args, ctx)}"
