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
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

from lsprotocol import types

from lich_core.config import set_workspace_trust
from lich_core.errors import ConfigError
from lich_core.trust import UNTRUSTED
from lich_lsp.pending_questions import Choice

if TYPE_CHECKING:
    from lich_lsp.session import EditorSession

log = logging.getLogger("lich.lsp.trust")

TRUST_COMMAND = "lich.trustWorkspace"
TRUST = "Trust"
NOT_NOW = "Not now"
TRUST_ANSWER = "trust"
# The same answers as code actions, for a client that cannot show a question (lich.answerQuestion).
TRUST_CHOICES = (Choice(TRUST_ANSWER, TRUST), Choice("not_now", NOT_NOW))


def offer_trust(session: EditorSession) -> None:
    """Ask about the current config's ignored keys, unless asked already for this content."""
    trust = session.config.trust
    if trust.state != UNTRUSTED or not trust.ignored or trust.fingerprint is None:
        return
    if trust.fingerprint.key() in session.trust_offered:
        return
    session.trust_offered.add(trust.fingerprint.key())
    effects = "; ".join(f"{item.what}" for item in trust.ignored)
    why = "changed since you trusted it, so these" if trust.changed else "These"
    text = (
        f"lich: this workspace's .lich/config.json ({trust.config_path}) asks for settings that are ignored "
        f"until you trust it. {why} would: {effects}."
    )
    if not session.features.show_message_request:
        session.questions.withdraw_kind("trust")  # about an older content of the file
        session.questions.post(
            "trust",
            text,
            "trust .lich/config.json",
            TRUST_CHOICES,
            on_answer=lambda answer: _answered(session, answer),
            also=f"To trust it later, run the command {TRUST_COMMAND} (or `lich trust` in a terminal).",
        )
        return
    # Not awaited by the caller: an editor may leave the question open for as long as it likes.
    session.background(_ask(session, text))


async def _ask(session: EditorSession, text: str) -> None:
    try:
        answer = await session.port.ask(
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
        result = change_trust(session, trust=True)
        session.show_message(result["message"], types.MessageType.Info)


def _answered(session: EditorSession, answer: str) -> None:
    if answer == TRUST_ANSWER:
        result = change_trust(session, trust=True)
        session.show_message(result["message"], types.MessageType.Info)


def change_trust(session: EditorSession, *, trust: bool) -> dict[str, Any]:
    """Record or revoke trust, rebuild the config, and return lich.trustWorkspace's result
    (`{state, config, keys, changed, message}`; the editor shows `message`)."""
    holder = session.config_holder
    try:
        change = set_workspace_trust(holder.root, trust=trust, overrides=holder.overrides())
    except (ConfigError, OSError) as err:
        message = f"lich: cannot change workspace trust: {err}"
        session.show_message(message, types.MessageType.Error)
        trust_status = session.config.trust
        return {"state": trust_status.state, "config": str(trust_status.config_path), "keys": [], "message": message}
    holder.rebuild()  # a changed config is a new generation: the next request builds its runtime
    session.questions.withdraw_kind("trust")  # answered, one way or the other
    session.log(change.message)
    return change.to_json()
