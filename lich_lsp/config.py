"""Server configuration: `.lich/config.json` (and the rest of lich_core's layers) overridden by the
editor's `initializationOptions` and the `workspace/configuration` section `lich`. The editor's
settings are trusted; the workspace file counts only as far as trust allows (lich_lsp.trust, which
the session asks after each rebuild).

The effective config is rebuilt on `workspace/didChangeConfiguration` and whenever the user's or
the workspace's config file changed (`files_changed`: the session checks before each command and
every CONFIG_POLL_INTERVAL_MS, since not every client can watch files for us: Neovim 0.7 has no
`workspace/didChangeWatchedFiles`). A bad value is dropped alone by lich_core.config and named as a
`window/showMessage` warning when it appears; nothing falls back to defaults. A user config that
cannot be parsed is one error message, and the agent may only read files until it parses.
"""

from __future__ import annotations

import hashlib
import logging
import stat
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, TypeAlias, TypeVar

from lsprotocol import types

from lich_core.config import EDITOR_SOURCE, KEYS, Config, config_files, load_config
from lich_core.errors import ConfigError
from lich_core.trust import TrustStore

if TYPE_CHECKING:
    from lich_lsp.edits import ClientFeatures
    from lich_lsp.messages import EditorMessages
    from lich_lsp.port import EditorPort

log = logging.getLogger("lich.lsp.config")

CONFIG_SECTION = "lich"
DEFAULT_CODE_ACTION_KIND = "refactor.rewrite.lich"
# How often the session looks at the config files between commands, so a dropped value's warning
# and a trust question appear without the user doing anything (a command looks first anyway).
CONFIG_POLL_INTERVAL_MS = 1000
# A config file larger than this is not hashed at each look: its stat stands for its content. No
# real config comes near; it keeps a pathological repository file from being read every second.
MAX_HASHED_CONFIG_BYTES = 1 << 20

# A config file's signature: None (no file), its content's hash, its stat, or why it is unreadable.
FileSignature: TypeAlias = "str | tuple[int, ...] | None"


def file_signature(path: Path) -> FileSignature:
    """What a config file is now: None when there is none, else the hash of its bytes, so every
    change counts (created, edited, deleted, replaced by a rename) and a save of the same bytes
    does not. A stat alone (mtime, size, inode) misses a same-size rewrite within one tick of the
    file system's clock, which is coarse (milliseconds) on Linux."""
    try:
        info = path.stat()
        if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_HASHED_CONFIG_BYTES:
            return (info.st_mode, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except FileNotFoundError:
        return None
    except OSError as err:  # unreadable, or a path through a file: load_config names it
        return f"unreadable: {err.strerror}"


def settings_from_client(value: Any) -> dict[str, Any]:
    """initializationOptions may be `{...}` or `{"lich": {...}}`; anything else means no settings.
    An empty Lua table reaches the server as `[]` (Neovim's `settings = { lich = {} }`): no settings."""
    if not isinstance(value, Mapping):
        return {}
    inner = value.get(CONFIG_SECTION)
    if isinstance(inner, Mapping):
        return dict(inner)
    if inner == [] and len(value) == 1:
        return {}
    return dict(value)


def model_choices(config: Config) -> list[dict[str, str]]:
    """The configured providers a turn may be asked of (lich.status `models`, lich.ask `model`);
    none when the config is broken."""
    from lich_core.providers.factory import provider_specs  # the providers: only when asked

    try:
        specs = provider_specs(config)
    except ConfigError:
        return []
    return [{"name": spec.name, "kind": spec.kind, "model": spec.model} for spec in specs]


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
        # The problems the last report saw: each is shown when it appears, not at every re-read.
        self.reported_warnings: set[str] = set()
        # The config files as the last read found them (file_signature of each; () before it).
        self.files_read: tuple[FileSignature, ...] = ()

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

    def watched_files(self) -> list[Path]:
        """The workspace's and the user's config files, the trust store, and the files the
        workspace config makes the server run (plugins): its trust is given to their content too, so an edit to one is
        a change to look at (trust is checked again)."""
        # trust.json too: `lich trust` in a terminal changes what this server may apply.
        paths = [*config_files(self.root), TrustStore.for_env().path]
        fingerprint = self.config.trust.fingerprint
        if fingerprint is not None:
            paths += [Path(name) for name in sorted(fingerprint.files)]
        return paths

    def files_now(self) -> tuple[FileSignature, ...]:
        """The watched files as they are now."""
        return tuple(file_signature(path) for path in self.watched_files())

    def files_changed(self) -> bool:
        """Whether a watched file changed since the last read (cheap: a few small files hashed)."""
        return self.files_now() != self.files_read

    def rebuild(self) -> None:
        """Reload every layer (bad values are dropped alone and listed in the config's problems)."""
        # Looked at before reading: a file written during the read counts as changed next time.
        # (A read that names other plugins is read once more at the next look: cheap, no new
        # generation, as the values are the same.)
        self.files_read = self.files_now()
        config = load_config(self.root, overrides=self.overrides(), overrides_source=EDITOR_SOURCE)
        changed = (
            dict(config) != dict(self.config)
            or config.trust.to_json() != self.config.trust.to_json()
        )
        self.config = config
        if changed:  # the same settings re-read keep their runtime (plugins are not loaded again)
            self.generation += 1


def report_config_warnings(holder: ConfigHolder, messages: EditorMessages) -> None:
    """What this read dropped or could not parse and the last report did not: a broken config
    file as an error, the dropped values and unknown keys together as one warning. A problem
    still there at the next read is not repeated; one fixed and made again is shown again."""
    seen = holder.reported_warnings
    for problem in holder.config.broken_files:
        if problem.text() not in seen:
            messages.show_message(problem.text(), types.MessageType.Error)
    fresh = [p.text() for p in holder.config.problems if p.text() not in seen]
    if fresh:
        messages.show_message("\n".join(fresh), types.MessageType.Warning)
    holder.reported_warnings = set(holder.config.warnings)


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


M = TypeVar("M")


class ConfiguredModel(Generic[M]):
    """An editor feature's model (completions, next edits), built from the config when first
    asked for and again once the config changed. `build` returns None when the feature is off
    (it imports the HTTP client only when it builds one); a ConfigError it raises turns the
    feature off, logged once per config, and `error` says why until the config changes."""

    def __init__(
        self,
        holder: ConfigHolder,
        messages: EditorMessages,
        build: Callable[[Config], M | None],
        feature: str,
    ) -> None:
        self._holder = holder
        self._messages = messages
        self._build = build
        self._feature = feature
        self._built: tuple[int, M | None, str] | None = None  # (generation, model, error)

    def get(self) -> M | None:
        generation = self._holder.generation
        if self._built is None or self._built[0] != generation:
            try:
                self._built = (generation, self._build(self._holder.config), "")
            except ConfigError as err:
                self._built = (generation, None, str(err))
                self._messages.log(
                    f"lich: {self._feature} are off: {err}", types.MessageType.Warning
                )
        return self._built[1]

    @property
    def error(self) -> str | None:
        """Why the configured model cannot be used, or None."""
        self.get()
        assert self._built is not None
        return self._built[2] or None
