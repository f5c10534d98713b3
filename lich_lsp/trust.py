"""Workspace trust in the editor: ask once, and the `lich.trustWorkspace` command.

When the workspace's `.lich/config.json` asks for settings that need trust (lich_core.config's
sides), the server says which and what they would do, once per content of that file:
`window/showMessageRequest` with Trust / Not now (no answer = not trusted), or, for clients
without it (Helix, Kate), a pending question (lich_lsp.pending_questions: a diagnostic on the
first open document with the code actions Trust / Not now, and a `window/showMessage` that names
this command too). Nothing waits for that answer: Trust trusts when it comes; a changed config or a
lich.trustWorkspace withdraws the question. Trusting rebuilds the config, so
plugins and providers apply from the next request on. `workspace_trust: "never"` (what VS Code
sends in Restricted Mode) means never ask and never trust.

The session offers again after every config rebuild (the file is re-read when it changes), so a
question can be about content the file no longer has: a Trust answer then trusts nothing and the
current content is asked about instead (the user said yes to what they read, not to the edit).
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

from lsprotocol import types

from lich_core.config import set_workspace_trust
from lich_core.errors import ConfigError
from lich_core.trust import UNTRUSTED, Fingerprint
from lich_lsp.commands import TRUST_WORKSPACE
from lich_lsp.config import report_config_warnings
from lich_lsp.contract import TrustWorkspaceParams, TrustWorkspaceResult, result_of
from lich_lsp.pending_questions import Choice

if TYPE_CHECKING:
    from lich_lsp.commands import CommandTable
    from lich_lsp.context import SessionContext
    from lich_lsp.pending_questions import PendingQuestions

log = logging.getLogger("lich.lsp.trust")

TRUST_COMMAND = TRUST_WORKSPACE
TRUST = "Trust"
NOT_NOW = "Not now"
TRUST_ANSWER = "trust"
# The same answers as code actions, for a client that cannot show a question (lich.answerQuestion).
TRUST_CHOICES = (Choice(TRUST_ANSWER, TRUST), Choice("not_now", NOT_NOW))


class WorkspaceTrust:
    """The trust question and `lich.trustWorkspace` for one editor session."""

    def __init__(self, *, ctx: SessionContext, questions: PendingQuestions) -> None:
        self._holder = ctx.holder
        self._features = ctx.features
        self._port = ctx.port
        self._questions = questions
        self._messages = ctx.messages
        # Workspace config contents the user was already asked to trust (one question per content).
        self._offered: set[Any] = set()

    def register(self, table: CommandTable) -> None:
        table.add(TRUST_WORKSPACE, self.trust_workspace_command, typed=True)

    def offer(self) -> None:
        """Ask about the current config's ignored keys, unless asked already for this content."""
        trust = self._holder.config.trust
        if trust.state != UNTRUSTED or not trust.ignored or trust.fingerprint is None:
            # Nothing to ask about any more (the file was deleted, trusted, or narrowed).
            self._questions.withdraw_kind("trust")
            return
        asked = trust.fingerprint.key()
        if asked in self._offered:
            return
        self._offered.add(asked)
        effects = "; ".join(f"{item.what}" for item in trust.ignored)
        why = "changed since you trusted it, so these" if trust.changed else "These"
        text = (
            f"lich: this workspace's .lich/config.json ({trust.config_path}) asks for settings that are ignored "
            f"until you trust it. {why} would: {effects}."
        )
        if not self._features.show_message_request:
            self._questions.withdraw_kind("trust")  # about an older content of the file
            self._questions.post(
                "trust",
                text,
                "trust .lich/config.json",
                TRUST_CHOICES,
                on_answer=lambda answer: self._answered(answer, asked),
                also=f"To trust it later, run the command {TRUST_COMMAND} (or `lich trust` in a terminal).",
            )
            return
        # Not awaited by the caller: an editor may leave the question open for as long as it likes.
        self._messages.background(self._ask(text, asked))

    async def _ask(self, text: str, asked: Any) -> None:
        try:
            answer = await self._port.ask(
                types.ShowMessageRequestParams(
                    type=types.MessageType.Warning,
                    message=text,
                    actions=[types.MessageActionItem(TRUST), types.MessageActionItem(NOT_NOW)],
                )
            )
        except asyncio.CancelledError:
            raise
        except Exception as err:  # noqa: BLE001 - no answer is "not now"
            log.warning("trust question failed: %s", err)
            return
        if answer is not None and answer.title == TRUST:
            self._trust_answered(asked)

    def _answered(self, answer: str, asked: Any) -> None:
        if answer == TRUST_ANSWER:
            self._trust_answered(asked)

    def _trust_answered(self, asked: Any) -> None:
        """Trust, if the file still is what the question showed (`asked`: its fingerprint key)."""
        self._holder.rebuild()  # the file as it is now, not as the last look saw it
        report_config_warnings(self._holder, self._messages)
        now = self._holder.config.trust.fingerprint
        if now is not None and now.key() != asked:
            self._messages.show_message(
                f"lich: nothing trusted: {self._holder.config.trust.config_path} changed after "
                "the question was asked (if its new content needs trust, a new question follows)",
                types.MessageType.Warning,
            )
            self.offer()
            return
        result = self.change(trust=True, expected=now)
        self._messages.show_message(result["message"], types.MessageType.Info)

    def change(self, *, trust: bool, expected: Fingerprint | None = None) -> dict[str, Any]:
        """Record or revoke trust, rebuild the config, and return lich.trustWorkspace's result
        (`{state, config, keys, changed, message}`; the editor shows `message`)."""
        holder = self._holder
        try:
            change = set_workspace_trust(
                holder.root, trust=trust, overrides=holder.overrides(), expected=expected
            )
        except (ConfigError, OSError) as err:
            message = f"lich: cannot change workspace trust: {err}"
            self._messages.show_message(message, types.MessageType.Error)
            return {**holder.config.trust.to_json(), "keys": [], "message": message}
        holder.rebuild()  # a changed config is a new generation: the next request builds its runtime
        self._questions.withdraw_kind("trust")  # answered, one way or the other
        self._messages.log(change.message)
        return change.to_json()

    async def trust_workspace_command(
        self, params: TrustWorkspaceParams, request_id: Any
    ) -> TrustWorkspaceResult:
        return result_of(TrustWorkspaceResult, self.change(trust=not params.revoke))
