"""Server configuration: `.lich/config.json` (and the rest of lich_core's layers) overridden by the
editor's `initializationOptions` and the `workspace/configuration` section `lich`. The editor's
settings are trusted; the workspace file counts only as far as trust allows (lich_lsp.trust, which
the session asks after each rebuild).

The effective config is rebuilt on `workspace/didChangeConfiguration`. A bad value is dropped
alone by lich_core.config and named once as a `window/showMessage` warning; nothing falls back to
defaults. A user config that cannot be parsed is one error message, and the agent may only read
files until it parses.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsprotocol import types

from lich_core.config import EDITOR_SOURCE, KEYS, Config, load_config

if TYPE_CHECKING:
    from lich_lsp.edits import ClientFeatures
    from lich_lsp.messages import EditorMessages
    from lich_lsp.port import EditorPort

log = logging.getLogger("lich.lsp.config")

CONFIG_SECTION = "lich"
DEFAULT_CODE_ACTION_KIND = "refactor.rewrite.lich"


def settings_from_client(value: Any) -> dict[str, Any]:
    """initializationOptions may be `{...}` or `{"lich": {...}}`; anything else means no settings."""
    if not isinstance(value, Mapping):
        return {}
    inner = value.get(CONFIG_SECTION)
    if isinstance(inner, Mapping):
        return dict(inner)
    return dict(value)


def default_config(root: Path) -> Config:
    """Built-in defaults only, with the tools confined to `root`: a session's config before its
    first read (and a test's)."""
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
        self.generation = 0
        self.reported_warnings: set[str] = set()

    def status(self) -> dict[str, Any]:
        """Which settings are in use: their generation, when they were read, what was dropped."""
        return {
            "generation": self.generation,
            "read_at": time.strftime("%Y-%m-%dT%H:%M:%S%z", time.localtime(self.config.read_at)),
            "problems": [problem.to_json() for problem in self.config.problems],
            "broken_files": [problem.to_json() for problem in self.config.broken_files],
        }

    def overrides(self) -> dict[str, Any]:
        """The editor's settings (trusted): initializationOptions, then workspace/configuration on top."""
        return {**self.init_options, **self.client_settings}

    def rebuild(self) -> None:
        """Reload every layer (bad values are dropped alone and listed in the config's problems)."""
        config = load_config(self.root, overrides=self.overrides(), overrides_source=EDITOR_SOURCE)
        changed = (
            dict(config) != dict(self.config)
            or config.trust.to_json() != self.config.trust.to_json()
        )
        self.config = config
        if changed:  # the same settings re-read keep their runtime (plugins are not loaded again)
            self.generation += 1


def report_config_warnings(holder: ConfigHolder, messages: EditorMessages) -> None:
    """What this read dropped or could not parse, once per text for this server's life: a broken
    config file as an error, the dropped values and unknown keys together as one warning."""
    for problem in holder.config.broken_files:
        text = problem.text()
        if text not in holder.reported_warnings:
            holder.reported_warnings.add(text)
            messages.show_message(text, types.MessageType.Error)
    fresh = [p.text() for p in holder.config.problems if p.text() not in holder.reported_warnings]
    if fresh:
        holder.reported_warnings.update(fresh)
        messages.show_message("\n".join(fresh), types.MessageType.Warning)


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
    """Re-read the client layer (pushed settings win, else pull) and rebuild; report problems
    once. True when the config was rebuilt (the caller then offers trust for it)."""
    pushed_settings = (
        settings_from_client(pushed) if isinstance(pushed, Mapping) and pushed else None
    )
    if pushed_settings is not None:
        holder.client_settings = pushed_settings
    else:
        pulled = await pull_client_settings(port, features)
        if pulled is not None:
            holder.client_settings = pulled
    holder.rebuild()
    report_config_warnings(holder, messages)
    return True
