"""Server configuration: `.lich/config.json` (and the rest of lich_core's layers) overridden by the
editor's `initializationOptions` and the `workspace/configuration` section `lich`. The editor's
settings are trusted; the workspace file counts only as far as trust allows (lich_lsp.trust, which
the session asks after each rebuild).

The effective config is rebuilt on `workspace/didChangeConfiguration`. A bad value is reported once
as a `window/showMessage` error naming the key, and the server keeps its last good config.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsprotocol import types

from lich_core.config import KEYS, Config, load_config
from lich_core.errors import ConfigError
from lich_core.settings import settings_of

if TYPE_CHECKING:
    from lich_lsp.edits import ClientFeatures
    from lich_lsp.messages import EditorMessages
    from lich_lsp.port import EditorPort

log = logging.getLogger("lich.lsp.config")

CONFIG_SECTION = "lich"
APPROVAL_CHOICES = ("allow", "ask", "deny")
DEFAULT_CODE_ACTION_KIND = "refactor.rewrite.lich"


def settings_from_client(value: Any) -> dict[str, Any]:
    """initializationOptions may be `{...}` or `{"lich": {...}}`; anything else means no settings."""
    if not isinstance(value, Mapping):
        return {}
    inner = value.get(CONFIG_SECTION)
    if isinstance(inner, Mapping):
        return dict(inner)
    return dict(value)


def check_lsp_values(config: Mapping[str, Any]) -> None:
    """Checks on the LSP keys beyond lich_core's type checks (the value shapes the server relies on)."""
    settings = settings_of(config)
    for name, value in settings.approval.items():
        if value not in APPROVAL_CHOICES:
            raise ConfigError(
                f"approval.{name}: expected one of {', '.join(APPROVAL_CHOICES)}, got {value!r}"
            )
    for index, action in enumerate(settings.code_actions):
        for key in ("title", "prompt"):
            if not isinstance(action.get(key), str) or not action.get(key):
                raise ConfigError(f"code_actions[{index}].{key}: expected a non-empty string")
        kind = action.get("kind", DEFAULT_CODE_ACTION_KIND)
        if not isinstance(kind, str) or not kind:
            raise ConfigError(
                f"code_actions[{index}].kind: expected a code action kind string, got {kind!r}"
            )


def default_config(root: Path) -> Config:
    """Built-in defaults only: the fallback when the very first load already fails."""
    values = {key: spec.default for key, spec in KEYS.items()}
    values["work_dir"] = str(root)
    return Config(values, {key: "default" for key in values})


class ConfigHolder:
    """The last good effective config and the client-side layers it was built from."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.init_options: dict[str, Any] = {}
        self.client_settings: dict[str, Any] = {}
        self.config: Config = default_config(root)
        self.last_error: str | None = None
        self.generation = 0
        self.reported_warnings: set[str] = set()

    def overrides(self) -> dict[str, Any]:
        """The editor's settings (trusted): initializationOptions, then workspace/configuration on top."""
        return {**self.init_options, **self.client_settings}

    def rebuild(self) -> str | None:
        """Reload every layer; keep the old config and return the error text on a bad value."""
        try:
            config = load_config(self.root, overrides=self.overrides())
            check_lsp_values(config)
        except ConfigError as err:
            self.last_error = str(err)
            return self.last_error
        changed = (
            dict(config) != dict(self.config)
            or config.trust.to_json() != self.config.trust.to_json()
        )
        self.config = config
        self.last_error = None
        if changed:  # the same settings re-read keep their runtime (plugins are not loaded again)
            self.generation += 1
        return None


def report_config_error(messages: EditorMessages, error: str) -> None:
    messages.show_message(
        f"lich: bad configuration, keeping the previous settings: {error}", types.MessageType.Error
    )


def report_config_warnings(holder: ConfigHolder, messages: EditorMessages) -> None:
    """A likely typo of a key ("provider" for providers), once per text for this server's life."""
    for warning in holder.config.warnings:
        if warning not in holder.reported_warnings:
            holder.reported_warnings.add(warning)
            messages.show_message(warning, types.MessageType.Warning)


async def pull_client_settings(port: EditorPort, features: ClientFeatures) -> dict[str, Any] | None:
    """Ask the client for section `lich`; None when it can't answer (not supported or error)."""
    if not features.configuration:
        return None
    try:
        result = await port.configuration(
            types.ConfigurationParams(items=[types.ConfigurationItem(section=CONFIG_SECTION)])
        )
    except Exception as err:  # noqa: BLE001 - a client that fails this keeps the old settings
        log.warning("workspace/configuration failed: %s", err)
        return None
    if not result:
        return {}
    value = result[0]
    return dict(value) if isinstance(value, Mapping) else {}


async def refresh_config(
    holder: ConfigHolder,
    port: EditorPort,
    features: ClientFeatures,
    messages: EditorMessages,
    pushed: Any = None,
) -> bool:
    """Re-read the client layer (pushed settings win, else pull) and rebuild; report errors once.
    True when the config was rebuilt (the caller then offers trust for it)."""
    pushed_settings = (
        settings_from_client(pushed) if isinstance(pushed, Mapping) and pushed else None
    )
    if pushed_settings is not None:
        holder.client_settings = pushed_settings
    else:
        pulled = await pull_client_settings(port, features)
        if pulled is not None:
            holder.client_settings = pulled
    previous = holder.last_error
    error = holder.rebuild()
    if error is not None:
        if error != previous:  # the same mistake re-read is not worth a second popup
            report_config_error(messages, error)
        return False
    report_config_warnings(holder, messages)
    return True
