"""Load plugin modules listed in config `plugins`, isolating every failure.

An entry is a path (relative to work_dir, or absolute) to a `.py` file, or an object
`{"path": ..., "settings": {...}, "models": ["chat", "compress"], "sha256": ...}`. A bad entry, a
module that fails to import, a missing or malformed export, or a duplicate plugin name becomes one
entry of `PluginHost.warnings`, and all of them one summary warning (`load_errors_summary`); the
agent starts without that plugin.

`sha256` pins the module's content: a trusted workspace config's plugins are pinned to the hash
the user trusted (lich_core.config), and the module is executed from the very bytes that were
checked, so a file changed after trust never runs.
"""

from __future__ import annotations

import hashlib
import importlib.util
import logging
import os
import sys
import types
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from lich_core.plugins.host import LoadedPlugin, PluginHost
from lich_core.plugins.types import HOOK_NAMES, MODEL_ROLES, Plugin, PluginModels

log = logging.getLogger("lich.plugins")

ENTRY_KEYS = ("path", "settings", "models", "sha256")
PLUGIN_SUFFIX = ".py"
EXPORT_NAMES = ("plugin", "PLUGIN")


class PluginLoadError(Exception):
    pass


def load_plugins(
    entries: Sequence[Any] | None,
    *,
    work_dir: str | os.PathLike[str],
    builtins: Sequence[LoadedPlugin] = (),
) -> PluginHost:
    """The host for config `plugins` entries, with `builtins` (plugins made in code, such as the
    gatekeeper) registered first: a config plugin with a built-in's name is a duplicate."""
    root = Path(work_dir).resolve()
    loaded: list[LoadedPlugin] = list(builtins)
    warnings: list[str] = []
    seen_names: set[str] = {p.name for p in builtins}
    for index, entry in enumerate(entries or []):
        label = _label(entry, index)
        try:
            path, settings, roles, pinned_sha256 = _parse_entry(entry, index, root)
            plugin, dropped = _import_plugin(path, index, pinned_sha256)
            if plugin.name in seen_names:
                raise PluginLoadError(
                    f"duplicate plugin name {plugin.name!r}; the first one is kept"
                )
        except PluginLoadError as err:
            warnings.append(f"plugin {label}: {err}")
            continue
        warnings.extend(f"plugin {plugin.name!r}: {message}" for message in dropped)
        seen_names.add(plugin.name)
        loaded.append(
            LoadedPlugin(
                plugin=plugin,
                path=path,
                settings=types.MappingProxyType(dict(settings)),
                models=PluginModels(plugin.name, frozenset(roles)),
            )
        )
    if warnings:
        # Debug only: whoever runs the host shows the one summary (load_errors_summary) where its
        # user looks (the run's plugin_warning event, `lich tools`); a warning here as well
        # printed every problem twice on the CLI's stderr.
        log.debug("%s", load_errors_summary(warnings))
    return PluginHost(loaded, warnings, work_dir=root)


def load_errors_summary(warnings: Sequence[str]) -> str:
    """All of a host's plugin problems as one line, as lich's seed reports them."""
    return f"plugin load errors ({len(warnings)}): {'; '.join(warnings)}"


def _label(entry: Any, index: int) -> str:
    if isinstance(entry, str):
        return entry
    if isinstance(entry, Mapping) and isinstance(entry.get("path"), str):
        return entry["path"]
    return f"plugins[{index}]"


def _parse_entry(
    entry: Any, index: int, root: Path
) -> tuple[Path, Mapping[str, Any], list[str], str | None]:
    key = f"plugins[{index}]"
    settings: Mapping[str, Any] = {}
    roles: list[str] = []
    pinned_sha256: str | None = None
    raw_path: Any
    if isinstance(entry, str):
        raw_path = entry
    elif isinstance(entry, Mapping):
        unknown = sorted(set(entry) - set(ENTRY_KEYS))
        if unknown:
            raise PluginLoadError(
                f"{key}: unknown key(s) {', '.join(unknown)} (allowed: {', '.join(ENTRY_KEYS)})"
            )
        raw_path = entry.get("path")
        if not isinstance(raw_path, str) or not raw_path:
            raise PluginLoadError(f"{key}.path: expected a file path")
        settings = entry.get("settings") or {}
        if not isinstance(settings, Mapping):
            raise PluginLoadError(f"{key}.settings: expected an object")
        roles = entry.get("models") or []
        if not isinstance(roles, list) or not all(isinstance(r, str) for r in roles):
            raise PluginLoadError(f"{key}.models: expected a list of role names")
        bad_roles = [r for r in roles if r not in MODEL_ROLES]
        if bad_roles:
            raise PluginLoadError(
                f"{key}.models: unknown role(s) {', '.join(bad_roles)} (known: {', '.join(MODEL_ROLES)})"
            )
        pinned_sha256 = entry.get("sha256")
        if pinned_sha256 is not None and not isinstance(pinned_sha256, str):
            raise PluginLoadError(f"{key}.sha256: expected a hex digest string")
    else:
        raise PluginLoadError(f"{key}: expected a path or an object with path/settings/models")
    path = Path(os.path.expanduser(raw_path))
    path = (path if path.is_absolute() else root / path).resolve()
    if path.suffix != PLUGIN_SUFFIX:
        raise PluginLoadError(f"{key}: a plugin must be a Python module ending in {PLUGIN_SUFFIX}")
    if not path.is_file():
        raise PluginLoadError(f"file not found: {path}")
    return path, settings, roles, pinned_sha256


def _read_source(path: Path, pinned_sha256: str | None) -> bytes:
    try:
        source = path.read_bytes()
    except OSError as err:
        raise PluginLoadError(f"cannot read {path}: {err.strerror}") from None
    if pinned_sha256 is not None and hashlib.sha256(source).hexdigest() != pinned_sha256:
        raise PluginLoadError(
            "changed since the workspace config was trusted; not loaded (trust it again: `lich trust` or lich.trustWorkspace)"
        )
    return source


def _import_plugin(
    path: Path, index: int, pinned_sha256: str | None = None
) -> tuple[Plugin, list[str]]:
    """Import the module and validate its export. Returns the plugin and what was dropped from it."""
    source = _read_source(path, pinned_sha256)
    module_name = f"lich_plugin_{index}_{path.stem}"
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None:
        raise PluginLoadError(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    # Registered before running it: dataclasses and pickling look their module up by name.
    sys.modules[module_name] = module
    try:
        # Run the bytes that were read (and checked against the pin), not a second read of the file.
        exec(compile(source, str(path), "exec"), module.__dict__)  # noqa: S102 - loading a plugin is running its code
    except (Exception, SystemExit) as err:  # noqa: BLE001 - any import failure is isolated
        sys.modules.pop(module_name, None)
        raise PluginLoadError(f"import failed: {type(err).__name__}: {err}") from None
    export = next((getattr(module, name) for name in EXPORT_NAMES if hasattr(module, name)), None)
    if export is None:
        raise PluginLoadError("missing export: the module must define `plugin = Plugin(...)`")
    if not isinstance(export, Plugin):
        raise PluginLoadError(
            f"bad export: `plugin` is a {type(export).__name__}, not lich_core.plugins.Plugin"
        )
    if not isinstance(export.name, str) or not export.name.strip():
        raise PluginLoadError("bad export: Plugin.name must be a non-empty string")
    return _validated(export)


def _validated(plugin: Plugin) -> tuple[Plugin, list[str]]:
    dropped: list[str] = []
    hooks: dict[str, Any] = {}
    raw_hooks = plugin.hooks if isinstance(plugin.hooks, Mapping) else {}
    if not isinstance(plugin.hooks, Mapping):
        dropped.append("hooks must be a dict of hook name -> function; hooks ignored")
    for name, hook in raw_hooks.items():
        if name not in HOOK_NAMES:
            dropped.append(f"unknown hook {name!r} ignored (known: {', '.join(HOOK_NAMES)})")
        elif not callable(hook):
            dropped.append(f"hook {name!r} is not callable; ignored")
        else:
            hooks[name] = hook
    tools = []
    seen: set[str] = set()
    for tool in plugin.tools or ():
        problem = _tool_problem(tool)
        if problem is None and tool.name in seen:
            problem = f"duplicate_tool: {tool.name} appears twice in this plugin"
        if problem is not None:
            dropped.append(f"{problem}; tool skipped")
            continue
        seen.add(tool.name)
        tools.append(tool)
    return Plugin(name=plugin.name, tools=tuple(tools), hooks=hooks), dropped


def _tool_problem(tool: Any) -> str | None:
    name = getattr(tool, "name", None)
    if not isinstance(name, str) or not name:
        return "a tool has no name"
    if not isinstance(getattr(tool, "description", None), str):
        return f"tool {name!r} has no description"
    if not isinstance(getattr(tool, "parameters", None), Mapping):
        return f"tool {name!r} has no JSON Schema `parameters` object"
    if not callable(getattr(tool, "execute", None)):
        return f"tool {name!r} has no execute(args, ctx) method"
    return None
