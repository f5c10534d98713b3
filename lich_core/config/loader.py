"""Reading and merging the sources into the effective configuration.

Precedence: overrides (the editor's settings or CLI flags) < an explicit `--config` file < the
workspace's `.lich/config.json` < the user's config file < the environment < defaults, the first
source that sets a key wins (docs/configuration.md, "Where settings come from"). Every source is
checked on its own first (lich_core.config.sources.check_source): one bad value never takes the
rest of its source with it, and nothing falls back to built-in defaults because of it.

The workspace file is the repository's, so it is untrusted until the user trusts its content
(lich_core.trust): until then each key counts only as far as its declared side allows
(lich_core.config.sides), and a workspace file that cannot be parsed is ignored whole. A user
config file that cannot be parsed leaves lich not knowing the user's restrictions: the result
grants file/read only (`Config.broken_files` says why; the CLI refuses to run instead).
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from lich_core.config.keys import KEYS, keys_on
from lich_core.config.sides import SIDE_ANY, SIDE_NARROW, SIDE_NEVER, SIDE_USER, narrow_capabilities
from lich_core.config.sources import (
    CONFIG_DIR_NAME,
    CONFIG_FILE_NAME,
    DEFAULT_SOURCE,
    ENV_SOURCE,
    ConfigProblem,
    check_source,
    env_values,
    read_config_file,
    user_config_path,
    workspace_config_path,
)
from lich_core.errors import ConfigError
from lich_core.settings import Settings
from lich_core.trust import (
    MISSING_FILE_HASH,
    NO_CONFIG,
    REFUSED,
    TRUSTED,
    UNTRUSTED,
    Fingerprint,
    IgnoredKey,
    TrustStatus,
    TrustStore,
    resolve_in_root,
)

# What a broken user config leaves the agent: it cannot know the user's restrictions.
BROKEN_USER_CONFIG_CAPABILITIES = ["file/read"]
# IgnoredKey.key for a workspace file that cannot be parsed (nothing in it applies).
WHOLE_FILE = "(the whole file)"


class Config(dict):
    """The effective configuration: every known key present, plus `sources` (where each value came
    from), `trust` (whether the workspace file counted, and which of its settings were ignored),
    `problems` (each value that was dropped or replaced, and why) and `broken_files` (trusted files
    that could not be read: lich runs restricted, the CLI refuses)."""

    sources: dict[str, str]
    trust: TrustStatus
    problems: list[ConfigProblem]
    broken_files: list[ConfigProblem]
    # When the sources were read (time.time()), for `lich.status`.
    read_at: float

    def __init__(
        self,
        values: Mapping[str, Any],
        sources: Mapping[str, str],
        trust: TrustStatus | None = None,
        problems: list[ConfigProblem] | None = None,
        broken_files: list[ConfigProblem] | None = None,
    ) -> None:
        super().__init__(values)
        self.sources = dict(sources)
        self.trust = (
            trust
            if trust is not None
            else TrustStatus(NO_CONFIG, Path(CONFIG_DIR_NAME) / CONFIG_FILE_NAME)
        )
        self.problems = list(problems or [])
        self.broken_files = list(broken_files or [])
        self.read_at = time.time()

    @property
    def warnings(self) -> list[str]:
        """One line per problem, broken files first: what the CLI prints and the server shows."""
        return [problem.text() for problem in [*self.broken_files, *self.problems]]

    @property
    def settings(self) -> Settings:
        """The values as typed attributes, with this config's sources and trust. Made at each
        read (cheap: a few dozen attributes), so a value set on the Config afterwards shows."""
        return Settings.of(self, sources=self.sources, trust=self.trust)


Layer = tuple[str, Mapping[str, Any]]


def _merge(layers: list[Layer]) -> tuple[dict[str, Any], dict[str, str]]:
    """First layer that sets a key wins; every known key not set takes its default."""
    values: dict[str, Any] = {}
    sources: dict[str, str] = {}
    for source, layer in layers:
        for key, value in layer.items():
            if key not in values and value is not None:
                values[key] = value
                sources[key] = source
    for key, spec in KEYS.items():
        if key not in values:
            values[key] = spec.default
            sources[key] = DEFAULT_SOURCE
    return values, sources


def ignored_settings(
    workspace: Mapping[str, Any], trusted: Mapping[str, Any], root: Path
) -> list[IgnoredKey]:
    """What an untrusted workspace file asked for and does not get (loosening narrow keys included)."""
    ignored: list[IgnoredKey] = []
    for key, value in workspace.items():
        spec = KEYS.get(key)
        if spec is None or value is None:
            continue
        if spec.side == SIDE_NEVER:
            ignored.append(
                IgnoredKey(
                    key, f"set the tools' root to {value} (never read from a workspace file)"
                )
            )
        elif spec.side == SIDE_USER:
            effects = spec.effects(value, root) if spec.effects else [f"set {key}"]
            ignored.extend(IgnoredKey(key, what) for what in effects)
        elif spec.side == SIDE_NARROW and spec.narrow is not None:
            _, refused = spec.narrow(key, trusted[key], value)
            if refused:
                ignored.append(IgnoredKey(key, refused))
    return ignored


def _with_absolute_paths(values: dict[str, Any], base: Path) -> dict[str, Any]:
    """Plugin and replay paths made absolute against the folder of the file that names them, so a
    relative path in the user's own config never picks up a same-named file in the repository."""
    if not values.get("plugins") and not values.get("providers"):
        return values
    resolved = dict(values)
    if isinstance(values.get("plugins"), list):
        plugins = []
        for entry in values["plugins"]:
            item = dict(entry) if isinstance(entry, dict) else {"path": entry}
            if isinstance(item.get("path"), str) and item["path"]:
                item["path"] = str(resolve_in_root(base, item["path"]))
            plugins.append(item)
        resolved["plugins"] = plugins
    if isinstance(values.get("providers"), list):
        providers = []
        for entry in values["providers"]:
            item = dict(entry)
            if item.get("kind") == "replay" and isinstance(item.get("path"), str):
                item["path"] = str(resolve_in_root(base, item["path"]))
            providers.append(item)
        resolved["providers"] = providers
    return resolved


def _pinned_workspace_entries(
    workspace: dict[str, Any], root: Path, fingerprint: Fingerprint
) -> dict[str, Any]:
    """A trusted workspace's plugins pinned to the trusted hash, so a file changed after trust is
    refused when it is loaded, not only at the next config read."""
    pinned = _with_absolute_paths(workspace, root)
    if isinstance(pinned.get("plugins"), list):
        pinned["plugins"] = [
            {**item, "sha256": fingerprint.files.get(item["path"], MISSING_FILE_HASH)}
            if "path" in item
            else item
            for item in pinned["plugins"]
        ]
    return pinned


def _narrowed_work_dir(
    value: str | None, source: str, root: Path, problems: list[ConfigProblem]
) -> str:
    """The tools' root: the workspace root, or a folder inside it that a trusted setting names.
    A folder outside the root is named and refused: the root itself is the widest there is."""
    if not value:
        return str(root)
    path = resolve_in_root(root, value)
    if not _is_inside(root, path):
        problems.append(
            ConfigProblem(
                source,
                "work_dir",
                f"{value} is outside the workspace root {root}; it may only narrow to a folder inside it",
                "the tools stay confined to the workspace root",
            )
        )
        return str(root)
    return str(path)


def _is_inside(root: Path, path: Path) -> bool:
    real_root = os.path.realpath(root)
    real = os.path.realpath(path)
    return real == real_root or real.startswith(real_root.rstrip(os.sep) + os.sep)


def _without_empty_containers(workspace: dict[str, Any]) -> dict[str, Any]:
    """An empty list or object in a workspace file sets nothing (a template's `"providers": []`
    must not hide the user's providers), except for a key it narrows (`"capabilities": []`
    grants nothing, as written)."""
    return {
        key: value
        for key, value in workspace.items()
        if value not in ([], {}) or (key in KEYS and KEYS[key].side == SIDE_NARROW)
    }


def _read_or_problem(path: Path, outcome: str) -> tuple[dict[str, Any], ConfigProblem | None]:
    try:
        return read_config_file(path), None
    except ConfigError as err:
        detail = str(err).removeprefix(f"{path}: ")
        return {}, ConfigProblem(str(path), "", detail, outcome)


def load_config(
    work_dir: str | os.PathLike[str],
    *,
    overrides: Mapping[str, Any] | None = None,
    env: Mapping[str, str] | None = None,
    config_file: str | os.PathLike[str] | None = None,
    trust_store: TrustStore | None = None,
    overrides_source: str = "overrides",
    read_workspace: bool = True,
) -> Config:
    """Build the effective config for the workspace root `work_dir`; bad values are dropped alone
    and listed in `Config.problems`. Raises ConfigError only for an explicit `config_file` that
    is missing or cannot be parsed (the user named it: running without it would hide the typo).

    Trusted layers: overrides (CLI flags, editor settings), the `--config` file, the user's config
    file, the environment. The workspace's `.lich/config.json` counts in full only once the user
    trusted its exact content (lich_core.trust); until then each of its keys is applied as its
    KeySpec.side allows, and the rest is listed in `config.trust.ignored`. `read_workspace=False`
    leaves the workspace file out (the user's own settings, to compare against).
    """
    env = os.environ if env is None else env
    root = Path(work_dir).resolve()
    problems: list[ConfigProblem] = []
    broken_files: list[ConfigProblem] = []
    trusted_layers: list[Layer] = []

    def checked(values: Mapping[str, Any], source: str, *, trusted: bool) -> dict[str, Any]:
        result, found = check_source(values, source, trusted=trusted)
        problems.extend(found)
        return result

    if overrides:
        trusted_layers.append(
            (overrides_source, checked(overrides, overrides_source, trusted=True))
        )
    if config_file is not None:
        explicit_path = Path(config_file)
        explicit = checked(
            read_config_file(explicit_path, must_exist=True), str(config_file), trusted=True
        )
        trusted_layers.append(
            (str(config_file), _with_absolute_paths(explicit, explicit_path.resolve().parent))
        )
    workspace_file = workspace_config_path(root)
    workspace_raw, workspace_broken = (
        _read_or_problem(workspace_file, "the file is ignored (as untrusted) until it parses")
        if read_workspace
        else ({}, None)
    )
    if workspace_broken is not None:
        problems.append(workspace_broken)
    workspace = _without_empty_containers(
        checked(workspace_raw, str(workspace_file), trusted=False)
    )
    user_file = user_config_path(env)
    user_raw, user_broken = _read_or_problem(
        user_file,
        "lich cannot know your restrictions, so the agent may only read files until it parses",
    )
    if user_broken is not None:
        broken_files.append(user_broken)
    user_values = checked(user_raw, str(user_file), trusted=True)
    after_workspace: list[Layer] = [
        (str(user_file), _with_absolute_paths(user_values, user_file.parent)),
        (ENV_SOURCE, checked(env_values(env), ENV_SOURCE, trusted=True)),
    ]
    trusted, trusted_sources = _merge(trusted_layers + after_workspace)
    if read_workspace:
        trust = workspace_trust_status(
            root,
            workspace_file,
            workspace,
            trusted,
            trust_store or TrustStore.for_env(env),
            broken=workspace_broken,
        )
    else:
        trust = TrustStatus(NO_CONFIG, workspace_file)
    source = str(workspace_file)
    if trust.state == TRUSTED:
        assert trust.fingerprint is not None
        never = keys_on(SIDE_NEVER)
        layer = {
            k: v
            for k, v in _pinned_workspace_entries(workspace, root, trust.fingerprint).items()
            if k not in never
        }
        values, sources = _merge([*trusted_layers, (source, layer), *after_workspace])
    elif workspace_broken is not None:
        values, sources = trusted, trusted_sources
    else:
        free = {k: v for k, v in workspace.items() if k not in KEYS or KEYS[k].side == SIDE_ANY}
        values, sources = _merge([*trusted_layers, (source, free), *after_workspace])
        for key in keys_on(SIDE_NARROW) & workspace.keys():
            narrowed, _ = KEYS[key].narrow(key, trusted[key], workspace[key])  # type: ignore[misc]
            values[key] = narrowed
            if narrowed == workspace[key]:
                sources[key] = source
            elif narrowed != trusted[key]:
                sources[key] = f"{trusted_sources[key]}, narrowed by {source}"
    if user_broken is not None:
        values["capabilities"], _ = narrow_capabilities(
            "capabilities", values["capabilities"], BROKEN_USER_CONFIG_CAPABILITIES
        )
        sources["capabilities"] = f"file/read only: {user_file} cannot be parsed"
    values["work_dir"] = _narrowed_work_dir(
        values.get("work_dir"), sources.get("work_dir", DEFAULT_SOURCE), root, problems
    )
    return Config(values, sources, trust, problems, broken_files)


def workspace_trust_status(
    root: Path,
    config_path: Path,
    workspace: Mapping[str, Any],
    trusted: Mapping[str, Any],
    store: TrustStore,
    *,
    broken: ConfigProblem | None = None,
) -> TrustStatus:
    """Trusted, untrusted (with what is ignored), refused, or no workspace config at all. A file
    that cannot be parsed is untrusted and ignored whole (trust is given to content lich read)."""
    if not config_path.is_file():
        return TrustStatus(NO_CONFIG, config_path)
    refuses = (
        trusted.get("workspace_trust") == "never" or workspace.get("workspace_trust") == "never"
    )
    if broken is not None:
        ignored = [IgnoredKey(WHOLE_FILE, f"nothing in it applies: {broken.detail}")]
        return TrustStatus(REFUSED if refuses else UNTRUSTED, config_path, ignored)
    ignored = ignored_settings(workspace, trusted, root)
    if refuses:
        return TrustStatus(REFUSED, config_path, ignored)
    fingerprint = Fingerprint.of(config_path, workspace, root)
    if store.is_trusted(root, fingerprint):
        never_ignored = [item for item in ignored if KEYS[item.key].side == SIDE_NEVER]
        return TrustStatus(
            TRUSTED, config_path, never_ignored, fingerprint, workspace=dict(workspace)
        )
    changed = store.record_for(root) is not None
    writes = store.agent_writes(root) if changed else []
    return TrustStatus(
        UNTRUSTED, config_path, ignored, fingerprint, changed=changed, agent_writes=writes
    )


def config_files(root: str | os.PathLike[str], env: Mapping[str, str] | None = None) -> list[Path]:
    """The files a config for `root` is read from (what a long-lived reader watches)."""
    return [workspace_config_path(Path(root).resolve()), user_config_path(env)]
