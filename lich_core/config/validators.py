"""Validation of configuration values, with messages written for the person who set them.

A validator takes (key_path, value) and returns the normalised value, or raises ConfigError whose
message is `<key_path>: <what is wrong and what is allowed>` (with a close match when there is
one). Containers (lists and objects of entries) are checked one entry at a time by the loader
(lich_core.config.keys.KeySpec.check), so a broken entry is dropped alone.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any
from urllib.parse import urlsplit

from lich_core.errors import ConfigError, did_you_mean
from lich_core.settings import DUCKDUCKGO_HTML_URL, PROVIDER_FIELDS, PROVIDER_KINDS
from lich_core.tools.types import CAPABILITIES, WEB_SEARCH_KINDS

Validator = Callable[[str, Any], Any]


def type_name(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def unknown_field(path: str, name: Any, known: Iterable[str]) -> ConfigError:
    known = tuple(known)
    return ConfigError(
        f"{path}.{name}: unknown field{did_you_mean(name, known)} (known: {', '.join(known)})"
    )


def check_fields(path: str, entry: dict[str, Any], known: Iterable[str]) -> None:
    known = tuple(known)
    for name in entry:
        if name not in known:
            raise unknown_field(path, name, known)


# --- scalars ---


def v_int(low: int, high: int) -> Validator:
    def check(key: str, value: Any) -> int:
        if isinstance(value, str) and value.strip().lstrip("-").isdigit():
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(
                f"{key}: expected an integer from {low} to {high}, got {type_name(value)} {value!r}"
            )
        if not low <= value <= high:
            raise ConfigError(f"{key}: {value} is out of range (allowed: {low} to {high})")
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
            raise ConfigError(
                f"{key}: expected a number from {low} to {high}, got {type_name(value)} {value!r}"
            )
        if not low <= value <= high:
            raise ConfigError(f"{key}: {value} is out of range (allowed: {low} to {high})")
        return float(value)

    return check


def v_str(key: str, value: Any) -> str:
    if not isinstance(value, str):
        raise ConfigError(f"{key}: expected a string, got {type_name(value)} {value!r}")
    return value


def v_bool(key: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise ConfigError(f"{key}: expected true or false, got {type_name(value)} {value!r}")
    return value


def v_choice(*choices: str) -> Validator:
    def check(key: str, value: Any) -> str:
        if value not in choices:
            raise ConfigError(
                f"{key}: expected one of {', '.join(choices)}, got {value!r}{did_you_mean(value, choices)}"
            )
        return value

    return check


# --- container shapes (their entries are checked one by one with the entry validators below) ---


def v_list(key: str, value: Any) -> list[Any]:
    if not isinstance(value, list):
        raise ConfigError(f"{key}: expected a list, got {type_name(value)} {value!r}")
    return list(value)


def v_object(key: str, value: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ConfigError(f"{key}: expected an object, got {type_name(value)} {value!r}")
    return dict(value)


def v_words(key: str, value: Any) -> list[Any]:
    """A list, or a comma-separated string (an environment variable) split into one."""
    if isinstance(value, str):
        return [part.strip() for part in value.split(",") if part.strip()]
    if not isinstance(value, list):
        raise ConfigError(f"{key}: expected a list of strings, got {type_name(value)} {value!r}")
    return list(value)


def v_tools_enabled(key: str, value: Any) -> str | list[Any]:
    if value == "all":
        return "all"
    return v_words(key, value)


def v_capability(key: str, value: Any) -> str:
    if value not in CAPABILITIES:
        raise ConfigError(
            f"{key}: unknown capability {value!r}{did_you_mean(value, CAPABILITIES)} "
            f"(known: {', '.join(CAPABILITIES)})"
        )
    return value


APPROVAL_CHOICES = ("allow", "ask", "deny")


def v_approval_name(key: str, name: Any) -> None:
    """An approval entry's name: a capability or a tool name (tools come and go with plugins and
    MCP servers, so only a near-miss of a capability is called out)."""
    if not isinstance(name, str) or not name:
        raise ConfigError(f"{key}: expected a capability or tool name, got {name!r}")
    if "/" in name and name not in CAPABILITIES:
        raise ConfigError(
            f"{key}: unknown capability {name!r}{did_you_mean(name, CAPABILITIES)} "
            f"(known: {', '.join(CAPABILITIES)})"
        )


def v_approval_choice(key: str, value: Any) -> str:
    if value not in APPROVAL_CHOICES:
        raise ConfigError(
            f"{key}: expected allow, ask or deny, got {value!r}{did_you_mean(value, APPROVAL_CHOICES)}"
        )
    return value


# --- entries of nested settings ---

CODE_ACTION_FIELDS = ("title", "prompt", "kind")


def v_code_action(path: str, value: Any) -> dict[str, Any]:
    action = v_object(path, value)
    check_fields(path, action, CODE_ACTION_FIELDS)
    for name in ("title", "prompt"):
        if not isinstance(action.get(name), str) or not action[name]:
            raise ConfigError(f"{path}.{name}: expected a non-empty string")
    if "kind" in action and (not isinstance(action["kind"], str) or not action["kind"]):
        raise ConfigError(
            f"{path}.kind: expected a code action kind string, got {action['kind']!r}"
        )
    return action


PLUGIN_FIELDS = ("path", "settings", "models", "sha256")
PLUGIN_ROLES = ("chat", "compress")


def v_plugin(path: str, value: Any) -> str | dict[str, Any]:
    """A plugin module's path, or {path, settings?, models?, sha256?}; the loader checks the file."""
    if isinstance(value, str):
        if not value:
            raise ConfigError(f"{path}: expected a plugin module path")
        return value
    if not isinstance(value, dict):
        raise ConfigError(
            f"{path}: expected a path or an object {{path, settings, models}}, got {type_name(value)}"
        )
    check_fields(path, value, PLUGIN_FIELDS)
    if not isinstance(value.get("path"), str) or not value["path"]:
        raise ConfigError(f"{path}.path: expected a plugin module path, got {value.get('path')!r}")
    if "settings" in value and not isinstance(value["settings"], dict):
        raise ConfigError(
            f"{path}.settings: expected an object, got {type_name(value['settings'])}"
        )
    roles = value.get("models", [])
    if not isinstance(roles, list):
        raise ConfigError(f"{path}.models: expected a list of role names, got {type_name(roles)}")
    for index, role in enumerate(roles):
        if role not in PLUGIN_ROLES:
            raise ConfigError(
                f"{path}.models[{index}]: expected chat or compress, got {role!r}"
                + did_you_mean(role, PLUGIN_ROLES)
            )
    return dict(value)


PROVIDER_STRING_FIELDS = ("name", "base_url", "model", "api_key", "api_key_env", "path")


def v_kind(path: str, value: Any, kinds: Iterable[str]) -> str:
    kinds = tuple(kinds)
    if value not in kinds:
        raise ConfigError(
            f"{path}: expected one of {', '.join(kinds)}, got {value!r}{did_you_mean(value, kinds)}"
        )
    return value


def _check_provider_fields(path: str, entry: dict[str, Any], string_fields: Iterable[str]) -> None:
    for name in string_fields:
        if name in entry and not isinstance(entry[name], str):
            raise ConfigError(
                f"{path}.{name}: expected a string, got {type_name(entry[name])} {entry[name]!r}"
            )
    base_url = entry.get("base_url")
    if base_url and not base_url.startswith(("http://", "https://")):
        raise ConfigError(f"{path}.base_url: expected an http:// or https:// URL, got {base_url!r}")
    headers = entry.get("headers", {})
    if not isinstance(headers, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in headers.items()
    ):
        raise ConfigError(f"{path}.headers: expected an object of string values")
    for name in ("timeout_ms", "max_tokens"):
        number = entry.get(name)
        if number is not None and (
            isinstance(number, bool) or not isinstance(number, int) or number <= 0
        ):
            raise ConfigError(f"{path}.{name}: expected a positive integer, got {number!r}")


def v_provider(path: str, value: Any) -> dict[str, Any]:
    """One `providers` entry's shape; the factory resolves keys and replay files when it builds."""
    entry = v_object(path, value)
    check_fields(path, entry, PROVIDER_FIELDS)
    kind = v_kind(f"{path}.kind", entry.get("kind"), PROVIDER_KINDS)
    _check_provider_fields(path, entry, PROVIDER_STRING_FIELDS)
    if "stream" in entry and not isinstance(entry["stream"], bool):
        raise ConfigError(f"{path}.stream: expected true or false, got {entry['stream']!r}")
    if kind == "replay" and not entry.get("path"):
        raise ConfigError(f"{path}.path: is required for a replay provider")
    if kind != "replay" and not entry.get("model"):
        raise ConfigError(f"{path}.model: is required (the model's id)")
    return entry


MODEL_ROLES = ("chat", "compress")


def v_role(path: str, value: Any) -> list[str]:
    """`models.<role>`: provider names, in the order they are tried."""
    names = [value] if isinstance(value, str) else value
    if not isinstance(names, list) or not all(isinstance(name, str) and name for name in names):
        raise ConfigError(f"{path}: expected a list of provider names, got {value!r}")
    return list(names)


def v_role_name(key: str, name: Any) -> None:
    if name not in MODEL_ROLES:
        raise ConfigError(
            f"{key}: unknown role {name!r}{did_you_mean(name, MODEL_ROLES)} (known: chat, compress)"
        )


# `completion`: one provider entry (the shape of a `providers` entry, without replay) and the wire
# format to ask it in; each kind's first format is its default (docs/completions.md).
COMPLETION_FORMATS_BY_KIND = {
    "openai_compat": ("completions", "chat"),
    "ollama": ("generate", "completions", "chat"),
    "anthropic": ("chat",),
}
COMPLETION_ENTRY_KEYS = (
    "name",
    "kind",
    "format",
    "base_url",
    "model",
    "api_key",
    "api_key_env",
    "headers",
    "timeout_ms",
    "max_tokens",
)


def v_completion(key: str, value: Any) -> dict[str, Any]:
    """The completion model's entry, its `format` filled in. lich_core.completion.providers
    resolves the API key when it builds the model (the environment may differ by then)."""
    entry = v_object(key, value)
    check_fields(key, entry, COMPLETION_ENTRY_KEYS)
    kind = v_kind(f"{key}.kind", entry.get("kind"), COMPLETION_FORMATS_BY_KIND)
    formats = COMPLETION_FORMATS_BY_KIND[kind]
    wire = entry.get("format", formats[0])
    if wire not in formats:
        raise ConfigError(f"{key}.format: kind {kind} takes {', '.join(formats)}, got {wire!r}")
    _check_provider_fields(key, entry, ("name", "model", "base_url", "api_key", "api_key_env"))
    if not entry.get("model"):
        raise ConfigError(f"{key}.model: is required (the completion model's id)")
    return {**entry, "format": wire}


# `next_edit`: a provider entry of the same shape as `completion`'s, asked in Zeta's prompt over
# OpenAI-compatible /completions or in a chat prompt (docs/next-edit.md); zeta is the default.
NEXT_EDIT_FORMATS_BY_KIND = {
    "openai_compat": ("zeta", "chat"),
    "ollama": ("zeta", "chat"),
    "anthropic": ("chat",),
}


def v_next_edit(key: str, value: Any) -> dict[str, Any]:
    """The next-edit model's entry, its `format` filled in (lich_core.next_edit.model builds it)."""
    entry = v_object(key, value)
    check_fields(key, entry, COMPLETION_ENTRY_KEYS)
    kind = v_kind(f"{key}.kind", entry.get("kind"), NEXT_EDIT_FORMATS_BY_KIND)
    formats = NEXT_EDIT_FORMATS_BY_KIND[kind]
    wire = entry.get("format", formats[0])
    if wire not in formats:
        raise ConfigError(f"{key}.format: kind {kind} takes {', '.join(formats)}, got {wire!r}")
    _check_provider_fields(key, entry, ("name", "model", "base_url", "api_key", "api_key_env"))
    if not entry.get("model"):
        raise ConfigError(f"{key}.model: is required (the next-edit model's id)")
    return {**entry, "format": wire}


WEB_SEARCH_ENTRIES = ("kind", "url", "api_key_env")


def v_web_search(key: str, value: Any) -> dict[str, Any]:
    """`{kind, url, api_key_env?}`: kind defaults to duckduckgo (url to its HTML endpoint);
    searxng needs the instance's url. Normalised so the effective value says where searches go."""
    entry = v_object(key, value)
    check_fields(key, entry, WEB_SEARCH_ENTRIES)
    kind = v_kind(f"{key}.kind", entry.get("kind", "duckduckgo"), WEB_SEARCH_KINDS)
    url = entry.get("url")
    if url is None and kind == "duckduckgo":
        url = DUCKDUCKGO_HTML_URL
    if not isinstance(url, str) or not url.strip():
        raise ConfigError(
            f"{key}.url: expected the http(s) URL of the {kind} instance, got {url!r}"
        )
    try:
        parts = urlsplit(url.strip())
        valid = parts.scheme in ("http", "https") and bool(parts.hostname)
    except ValueError:
        valid = False
    if not valid:
        raise ConfigError(f"{key}.url: expected an http(s) URL with a host, got {url!r}")
    checked: dict[str, Any] = {"kind": kind, "url": url.strip()}
    key_env = entry.get("api_key_env")
    if key_env is not None:
        if not isinstance(key_env, str) or not key_env.strip():
            raise ConfigError(
                f"{key}.api_key_env: expected an environment variable name, got {key_env!r}"
            )
        checked["api_key_env"] = key_env.strip()
    return checked
