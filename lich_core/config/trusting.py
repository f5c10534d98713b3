"""Trusting a workspace config (`lich trust`, lich.trustWorkspace) and saying exactly what that
changes: each key whose effective value differs once the file counts in full."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lich_core.config.display import mask_secrets
from lich_core.config.keys import KEYS
from lich_core.config.loader import WHOLE_FILE, Config, load_config
from lich_core.config.sides import SIDE_USER
from lich_core.trust import (
    NO_CONFIG,
    REFUSED,
    TRUSTED,
    UNTRUSTED,
    Fingerprint,
    IgnoredKey,
    TrustStatus,
    TrustStore,
    agent_writes_text,
)

# How long a value may be in a change line before it is cut.
MAX_SHOWN_VALUE_CHARS = 120


def _shown(value: Any) -> str:
    text = json.dumps(mask_secrets(value), ensure_ascii=False)
    return text if len(text) <= MAX_SHOWN_VALUE_CHARS else text[: MAX_SHOWN_VALUE_CHARS - 1] + "…"


def config_changes(before: Config, after: Config, root: Path) -> list[IgnoredKey]:
    """What differs between two effective configs, one line per effect: for a key that runs or
    sends something, what it would do; for an emptied one, what it takes away; else old → new."""
    changes: list[IgnoredKey] = []
    for key, spec in KEYS.items():
        old, new = before.get(key), after.get(key)
        if old == new:
            continue
        if not new and old:
            changes.append(
                IgnoredKey(
                    key, f"replaces {_shown(old)} from {before.sources.get(key)} with {_shown(new)}"
                )
            )
        elif spec.side == SIDE_USER and spec.effects is not None:
            # As the workspace file wrote it (relative paths), when that is where it comes from.
            if after.sources.get(key) == str(after.trust.config_path):
                new = after.trust.workspace.get(key, new)
            changes.extend(IgnoredKey(key, what) for what in spec.effects(new, root))
        else:
            changes.append(IgnoredKey(key, f"{_shown(old)} → {_shown(new)}"))
    return changes


@dataclass(frozen=True)
class WorkspaceChange:
    """One thing the workspace file changes from the user's own settings; `before_trust`: it was
    in effect while the file was untrusted too (a narrowing an untrusted file may make)."""

    key: str
    what: str
    before_trust: bool = False

    def to_json(self) -> dict[str, Any]:
        return {"key": self.key, "what": self.what, "before_trust": self.before_trust}

    def line(self) -> str:
        note = " (in effect before trust too: an untrusted file may narrow it)"
        return f"  {self.key}: {self.what}{note if self.before_trust else ''}"


@dataclass(frozen=True)
class TrustChange:
    """What `lich trust` / lich.trustWorkspace did: the status before and after, one message for
    the user, and `changes`: everything the workspace file now changes from the user's own
    settings (the same config without the workspace file)."""

    before: TrustStatus
    after: TrustStatus
    message: str
    changes: list[WorkspaceChange] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        # `keys`: what trusting applied (or, after a revoke or refusal, what is ignored now).
        keys = self.before.ignored if self.after.state == TRUSTED else self.after.ignored
        return {
            **self.after.to_json(),
            "keys": [item.to_json() for item in keys],
            "changes": [item.to_json() for item in self.changes],
            "message": self.message,
        }


def workspace_changes(
    own: Config, before: Config | None, after: Config, root: Path
) -> list[WorkspaceChange]:
    """What `after` changes from `own` (the settings without the workspace file), each marked when
    `before` (the same file while untrusted, if this trusted it) already had it."""
    earlier = config_changes(own, before, root) if before is not None else []
    already = {(item.key, item.what) for item in earlier}
    return [
        WorkspaceChange(item.key, item.what, (item.key, item.what) in already)
        for item in config_changes(own, after, root)
    ]


def _changes_message(head: str, changes: list[WorkspaceChange]) -> str:
    if not changes:
        return f"{head}; it changes nothing: every setting is your own"
    listed = "\n".join(item.line() for item in changes)
    return f"{head}; it changes, from your own settings:\n{listed}"


def set_workspace_trust(
    root: str | os.PathLike[str],
    *,
    trust: bool,
    overrides: Mapping[str, Any] | None = None,
    env: Mapping[str, str] | None = None,
    config_file: str | os.PathLike[str] | None = None,
    trust_store: TrustStore | None = None,
    expected: Fingerprint | None = None,
) -> TrustChange:
    """Trust the workspace config's current content (and the files it runs), or revoke trust.
    `expected`: trust only that content (what a question showed the user); anything else is
    trusted by nobody, and the answer says so."""
    env = os.environ if env is None else env
    store = trust_store or TrustStore.for_env(env)
    root_path = Path(root).resolve()

    def load(*, read_workspace: bool = True) -> Config:
        return load_config(
            root_path,
            overrides=overrides,
            env=env,
            config_file=config_file,
            trust_store=store,
            read_workspace=read_workspace,
        )

    def still_changes(message: str) -> tuple[str, list[WorkspaceChange]]:
        """The message for a file left untrusted, with what its narrowings still change."""
        untrusted = load()
        changes = workspace_changes(load(read_workspace=False), None, untrusted, root_path)
        if not changes:
            return message, []
        listed = "\n".join(WorkspaceChange(c.key, c.what).line() for c in changes)
        return f"{message}; untrusted, it still changes, from your own settings:\n{listed}", changes

    before_config = load()
    before = before_config.trust
    if not trust:
        had = store.revoke(root_path)
        after = load().trust
        what = "revoked trust in" if had else "did not trust"
        message, changes = still_changes(
            f"lich: {what} {before.config_path}; its settings that need trust are ignored"
        )
        return TrustChange(before, after, message, changes)
    # Trusting is also the user's yes to what agent runs without process/exec wrote here.
    confirmed = store.agent_writes(root_path)
    confirmed_note = (
        f"; MCP servers and test commands may start here again after the agent's changes "
        f"({agent_writes_text(confirmed)})"
    )
    if before.state in (NO_CONFIG, REFUSED) and store.confirm_agent_writes(root_path):
        before_config = load()
        before = before_config.trust
    else:
        confirmed_note = ""
    if before.state == NO_CONFIG:
        return TrustChange(
            before,
            before,
            f"lich: nothing to trust: {before.config_path} does not exist{confirmed_note}",
        )
    if before.state == REFUSED:
        message, changes = still_changes(
            'lich: not trusted: your settings say never to trust workspace configs here (workspace_trust: "never")'
            + confirmed_note
        )
        return TrustChange(before, before, message, changes)
    if before.state == UNTRUSTED and before.fingerprint is None:
        broken = next((item.what for item in before.ignored if item.key == WHOLE_FILE), "")
        return TrustChange(
            before, before, f"lich: not trusted: {before.config_path} cannot be parsed ({broken})"
        )
    if before.state == UNTRUSTED:
        assert before.fingerprint is not None
        if expected is not None and expected.key() != before.fingerprint.key():
            return TrustChange(
                before,
                before,
                f"lich: nothing trusted: {before.config_path} changed after you were asked",
            )
        store.trust(root_path, before.fingerprint)
    after_config = load()
    newly = before.state != TRUSTED
    own = load(read_workspace=False)
    changes = workspace_changes(own, before_config if newly else None, after_config, root_path)
    did = "trusted" if newly else "already trusted"
    head = f"lich: {did} {before.config_path}"
    return TrustChange(before, after_config.trust, _changes_message(head, changes), changes)
