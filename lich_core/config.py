"""Configuration: defaults < environment < user config < workspace config < explicit overrides.

Files are read in DESIGN.md's search order: `<work_dir>/.lich/config.json` first, then the user's
`$XDG_CONFIG_HOME/lich/config.json` (default `~/.config/lich/config.json`), then `LICH_*`
environment variables; the first source that sets a key wins. Overrides (CLI flags, LSP
initializationOptions and workspace/configuration) go on top. Every value is validated by the
key's entry in `KEYS`; a bad value is a ConfigError whose message names the key and the source.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lich_core.errors import ConfigError
from lich_core.tools.types import CAPABILITIES

CONFIG_DIR_NAME = ".lich"
CONFIG_FILE_NAME = "config.json"

Validator = Callable[[str, Any], Any]


# --- validators: each takes (key_path, value) and returns the normalised value or raises ---


def _type_name(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def v_int(low: int | None = None, high: int | None = None) -> Validator:
    def check(key: str, value: Any) -> int:
        if isinstance(value, str) and value.strip().lstrip("-").isdigit():
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(f"{key}: expected an integer, got {_type_name(value)} {value!r}")
        if (low is not None and value < low) or (high is not None and value > high):
            raise ConfigError(f"{key}: {value} is out of range [{low}, {high}]")
        return value

    return check


def v_float(low: float, high: float) -> Validator:
    def check(key: str, value: Any) -> float:
        if isinstance(value, str):
            try:
                value = float(value)
            except ValueError:
                pass
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ConfigError(f"{key}: expected a number, got {_type_name(value)} {value!r}")
        if not low <= value <= high:
            raise ConfigError(f"{key}: {value} is out of range [{low}, {high}]")
        return float(value)

    return check


def v_str(key: str, value: Any) -> str:
    if not isinstance(value, str):
        raise ConfigError(f"{key}: expected a string, got {_type_name(value)} {value!r}")
    return value


def v_choice(*choices: str) -> Validator:
    def check(key: str, value: Any) -> str:
        if value not in choices:
            raise ConfigError(f"{key}: expected one of {', '.join(choices)}, got {value!r}")
        return value

    return check


def v_str_list(key: str, value: Any) -> list[str]:
    if isinstance(value, str):
        value = [part.strip() for part in value.split(",") if part.strip()]
    if not isinstance(value, list):
        raise ConfigError(f"{key}: expected a list of strings, got {_type_name(value)}")
    for index, item in enumerate(value):
        if not isinstance(item, str):
            raise ConfigError(f"{key}[{index}]: expected a string, got {_type_name(item)} {item!r}")
    return list(value)


def v_tools_enabled(key: str, value: Any) -> str | list[str]:
    if value == "all":
        return "all"
    return v_str_list(key, value)


def v_capabilities(key: str, value: Any) -> list[str]:
    names = v_str_list(key, value)
    for index, name in enumerate(names):
        if name not in CAPABILITIES:
            raise ConfigError(f"{key}[{index}]: unknown capability {name!r} (known: {', '.join(CAPABILITIES)})")
    return names


def v_object(key: str, value: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ConfigError(f"{key}: expected an object, got {_type_name(value)}")
    return dict(value)


def v_list_of_objects(key: str, value: Any) -> list[dict[str, Any]]:
    if not isinstance(value, list):
        raise ConfigError(f"{key}: expected a list, got {_type_name(value)}")
    for index, item in enumerate(value):
        if not isinstance(item, dict):
            raise ConfigError(f"{key}[{index}]: expected an object, got {_type_name(item)}")
    return [dict(item) for item in value]


def v_approval(key: str, value: Any) -> dict[str, str]:
    policy = v_object(key, value)
    for name, choice in policy.items():
        if choice not in ("allow", "ask", "deny"):
            raise ConfigError(f"{key}.{name}: expected allow, ask or deny, got {choice!r}")
    return policy


def v_code_actions(key: str, value: Any) -> list[dict[str, Any]]:
    actions = v_list_of_objects(key, value)
    for index, action in enumerate(actions):
        for field_name in ("title", "prompt"):
            if not isinstance(action.get(field_name), str) or not action[field_name]:
                raise ConfigError(f"{key}[{index}].{field_name}: expected a non-empty string")
        if "kind" in action and not isinstance(action["kind"], str):
            raise ConfigError(f"{key}[{index}].kind: expected a code action kind string")
    return actions


def v_list(key: str, value: Any) -> list[Any]:
    if not isinstance(value, list):
        raise ConfigError(f"{key}: expected a list, got {_type_name(value)}")
    return list(value)


@dataclass(frozen=True)
class KeySpec:
    default: Any
    validate: Validator
    env: str | None = None
    doc: str = ""


# Every configuration key. Later features add their keys here, in one table, so the loader,
# the validation messages and `lich config` all know them.
KEYS: dict[str, KeySpec] = {
    "work_dir": KeySpec(None, v_str, "LICH_WORK_DIR", "Root the tools are confined to."),
    "tools_enabled": KeySpec("all", v_tools_enabled, "LICH_TOOLS_ENABLED", '"all" or a list of tool names.'),
    "capabilities": KeySpec(None, v_capabilities, "LICH_CAPABILITIES", "Granted capabilities; absent = all."),
    "terminal_timeout_ms": KeySpec(60_000, v_int(1, 300_000), "LICH_TERMINAL_TIMEOUT_MS", "Default terminal command timeout."),
    # agent loop and providers
    "providers": KeySpec([], v_list_of_objects, None, "Provider definitions (name, kind, base_url, model, ...)."),
    "models": KeySpec({}, v_object, None, "Role → provider names: {chat: [...], compress: [...]}."),
    "max_turns": KeySpec(25, v_int(1, 1000), "LICH_MAX_TURNS", "Model calls per task."),
    "system_prompt": KeySpec(None, v_str, "LICH_SYSTEM_PROMPT", "Replaces the default system prompt."),
    "context_budget_tokens": KeySpec(100_000, v_int(1000, 10_000_000), None, "Context size estimate budget."),
    "compress_threshold": KeySpec(0.8, v_float(0.1, 1.0), None, "Fraction of the budget that triggers compression."),
    "session_dir": KeySpec(None, v_str, "LICH_SESSION_DIR", "Session logs; default <work_dir>/.lich/sessions."),
    "plugins": KeySpec([], v_list, None, "Plugin module paths or {path, settings, models} entries."),
    # language server
    "edit_mode": KeySpec("apply", v_choice("apply", "review"), "LICH_EDIT_MODE", "apply: each edit at once; review: one reviewed edit at the end."),
    "approval": KeySpec({}, v_approval, None, "Capability or tool name → allow | ask | deny."),
    "code_actions": KeySpec([], v_code_actions, None, "Extra code actions: [{title, prompt, kind}]."),
    "quick_prompts": KeySpec(
        ["Explain this code", "Find bugs in this code", "Add tests for this code"],
        v_str_list,
        None,
        "Prompts offered by lich.ask without a prompt.",
    ),
    "disk_write_policy": KeySpec("auto", v_choice("auto", "editor", "disk"), None, "How closed files are written."),
}


class Config(dict):
    """The effective configuration: every known key present, plus `sources` for diagnostics."""

    sources: dict[str, str]

    def __init__(self, values: Mapping[str, Any], sources: Mapping[str, str]) -> None:
        super().__init__(values)
        self.sources = dict(sources)


def user_config_path(env: Mapping[str, str] | None = None) -> Path:
    env = os.environ if env is None else env
    base = env.get("XDG_CONFIG_HOME") or os.path.join(env.get("HOME") or os.path.expanduser("~"), ".config")
    return Path(base) / "lich" / CONFIG_FILE_NAME


def workspace_config_path(work_dir: str | os.PathLike[str]) -> Path:
    return Path(work_dir) / CONFIG_DIR_NAME / CONFIG_FILE_NAME


def read_config_file(path: Path) -> dict[str, Any]:
    """Parse a JSON config file; a missing file is empty, a broken one a ConfigError naming it."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except OSError as err:
        raise ConfigError(f"{path}: cannot read ({err.strerror})") from err
    try:
        data = json.loads(_strip_json_comments(text)) if text.strip() else {}
    except json.JSONDecodeError as err:
        raise ConfigError(f"{path}: invalid JSON at line {err.lineno} column {err.colno}: {err.msg}") from err
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: the top level must be an object")
    return data


def _strip_json_comments(text: str) -> str:
    """Allow `//` line comments (the `lich init` template is commented) outside strings."""
    out: list[str] = []
    for line in text.splitlines(keepends=True):
        in_string = False
        escaped = False
        cut = len(line)
        for index, char in enumerate(line):
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = in_string
            elif char == '"':
                in_string = not in_string
            elif char == "/" and not in_string and line[index + 1 : index + 2] == "/":
                cut = index
                break
        out.append(line[:cut] + ("\n" if cut < len(line) and line.endswith("\n") else ""))
    return "".join(out)


def validate_values(values: Mapping[str, Any], source: str) -> dict[str, Any]:
    """Validate known keys; unknown keys are kept as they are (plugins may read them)."""
    checked: dict[str, Any] = {}
    for key, value in values.items():
        spec = KEYS.get(key)
        if spec is None or value is None:
            checked[key] = value
            continue
        try:
            checked[key] = spec.validate(key, value)
        except ConfigError as err:
            raise ConfigError(f"{err} (in {source})") from None
    return checked


def env_values(env: Mapping[str, str]) -> dict[str, Any]:
    return {key: env[spec.env] for key, spec in KEYS.items() if spec.env and env.get(spec.env)}


def load_config(
    work_dir: str | os.PathLike[str],
    *,
    overrides: Mapping[str, Any] | None = None,
    env: Mapping[str, str] | None = None,
    config_file: str | os.PathLike[str] | None = None,
) -> Config:
    """Build the effective config for `work_dir`. Raises ConfigError naming the bad key."""
    env = os.environ if env is None else env
    layers: list[tuple[str, Mapping[str, Any]]] = []
    if overrides:
        layers.append(("overrides", overrides))
    if config_file is not None:
        layers.append((str(config_file), read_config_file(Path(config_file))))
    workspace_file = workspace_config_path(work_dir)
    layers.append((str(workspace_file), read_config_file(workspace_file)))
    user_file = user_config_path(env)
    layers.append((str(user_file), read_config_file(user_file)))
    layers.append(("environment", env_values(env)))

    values: dict[str, Any] = {}
    sources: dict[str, str] = {}
    for source, layer in layers:
        for key, value in validate_values(layer, source).items():
            if key not in values and value is not None:
                values[key] = value
                sources[key] = source
    for key, spec in KEYS.items():
        if key not in values:
            values[key] = spec.default
            sources[key] = "default"
    values["work_dir"] = str(Path(values["work_dir"] or work_dir).resolve())
    return Config(values, sources)


SECRET_KEY_NAMES = ("secret", "token", "password", "key", "credential", "auth")


def is_secret_name(name: str) -> bool:
    lowered = name.lower()
    if lowered.endswith("_env") or lowered.endswith("key_env"):
        return False  # the *name* of an environment variable is not a secret
    return any(word in lowered for word in SECRET_KEY_NAMES)


def mask_secrets(value: Any) -> Any:
    """Copy of a config value with secret-looking fields masked, for display."""
    if isinstance(value, dict):
        return {
            key: (f"<redacted: {len(str(item))} chars>" if is_secret_name(key) and isinstance(item, str) else mask_secrets(item))
            for key, item in value.items()
        }
    if isinstance(value, list):
        return [mask_secrets(item) for item in value]
    return value
