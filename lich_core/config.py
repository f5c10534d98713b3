"""Configuration: defaults < environment < user config < workspace config < explicit overrides.

Files are read in DESIGN.md's search order: `<root>/.lich/config.json` first, then the user's
`$XDG_CONFIG_HOME/lich/config.json` (default `~/.config/lich/config.json`), then `LICH_*`
environment variables; the first source that sets a key wins. Overrides (CLI flags, LSP
initializationOptions and workspace/configuration) go on top. Every value is validated by the
key's entry in `KEYS`; a bad value is a ConfigError whose message names the key and the source.

The workspace file is the repository's, so it is untrusted until the user trusts its content
(lich_core.trust): until then each key counts only as far as its declared side allows.
"""

from __future__ import annotations

import difflib
import json
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lich_core.errors import ConfigError
from lich_core.mcp.spec import mcp_effects, v_mcp_servers
from lich_core.settings import (
    DEFAULT_COMPLETION_DEBOUNCE_MS,
    DEFAULT_COMPLETION_PREFIX_CHARS,
    DEFAULT_COMPLETION_SUFFIX_CHARS,
    DEFAULT_COMPRESS_THRESHOLD,
    DEFAULT_CONTEXT_BUDGET_TOKENS,
    DEFAULT_MAX_TURNS,
    DEFAULT_QUICK_PROMPTS,
    DEFAULT_TERMINAL_TIMEOUT_MS,
    DEFAULT_THREADS_MAX,
    DUCKDUCKGO_HTML_URL,
    Settings,
)
from lich_core.tools.secrets import is_secret_name as tool_secret_name
from lich_core.tools.types import CAPABILITIES, WEB_SEARCH_KINDS
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
    agent_writes_text,
    resolve_in_root,
)

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


def v_bool(key: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise ConfigError(f"{key}: expected true or false, got {_type_name(value)} {value!r}")
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
            raise ConfigError(
                f"{key}[{index}]: unknown capability {name!r} (known: {', '.join(CAPABILITIES)})"
            )
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


WEB_SEARCH_ENTRIES = ("kind", "url", "api_key_env")


def v_web_search(key: str, value: Any) -> dict[str, Any]:
    """`{kind, url, api_key_env?}`: kind defaults to duckduckgo (url to its HTML endpoint);
    searxng needs the instance's url. Normalised so the effective value says where searches go."""
    entry = v_object(key, value)
    for name in entry:
        if name not in WEB_SEARCH_ENTRIES:
            raise ConfigError(
                f"{key}.{name}: unknown entry (known: {', '.join(WEB_SEARCH_ENTRIES)})"
            )
    kind = entry.get("kind", "duckduckgo")
    if kind not in WEB_SEARCH_KINDS:
        raise ConfigError(
            f"{key}.kind: expected one of {', '.join(WEB_SEARCH_KINDS)}, got {kind!r}"
        )
    url = entry.get("url")
    if url is None and kind == "duckduckgo":
        url = DUCKDUCKGO_HTML_URL
    if not isinstance(url, str) or not url.strip():
        raise ConfigError(
            f"{key}.url: expected the http(s) URL of the {kind} instance, got {url!r}"
        )
    from urllib.parse import urlsplit

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
    """The completion model's entry, its `format` filled in. Keys are checked here, where every
    config source is validated; lich_core.completion.providers resolves the API key when it
    builds the model (the environment may differ by then)."""
    entry = v_object(key, value)
    for name in entry:
        if name not in COMPLETION_ENTRY_KEYS:
            raise ConfigError(
                f"{key}.{name}: unknown key (known: {', '.join(COMPLETION_ENTRY_KEYS)})"
            )
    kind = entry.get("kind")
    if kind not in COMPLETION_FORMATS_BY_KIND:
        raise ConfigError(
            f"{key}.kind: expected one of {', '.join(COMPLETION_FORMATS_BY_KIND)}, got {kind!r}"
        )
    formats = COMPLETION_FORMATS_BY_KIND[kind]
    wire = entry.get("format", formats[0])
    if wire not in formats:
        raise ConfigError(f"{key}.format: kind {kind} takes {', '.join(formats)}, got {wire!r}")
    for name in ("name", "model", "base_url", "api_key", "api_key_env"):
        if name in entry and not isinstance(entry[name], str):
            raise ConfigError(
                f"{key}.{name}: expected a string, got {_type_name(entry[name])} {entry[name]!r}"
            )
    if not entry.get("model"):
        raise ConfigError(f"{key}.model: is required (the completion model's id)")
    base_url = entry.get("base_url")
    if base_url and not base_url.startswith(("http://", "https://")):
        raise ConfigError(f"{key}.base_url: expected an http:// or https:// URL, got {base_url!r}")
    headers = entry.get("headers", {})
    if not isinstance(headers, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in headers.items()
    ):
        raise ConfigError(f"{key}.headers: expected an object of string values")
    for name in ("timeout_ms", "max_tokens"):
        number = entry.get(name)
        if number is not None and (
            isinstance(number, bool) or not isinstance(number, int) or number <= 0
        ):
            raise ConfigError(f"{key}.{name}: expected a positive integer, got {number!r}")
    return {**entry, "format": wire}


def v_list(key: str, value: Any) -> list[Any]:
    if not isinstance(value, list):
        raise ConfigError(f"{key}: expected a list, got {_type_name(value)}")
    return list(value)


# --- trust sides: what a workspace file (`.lich/config.json`) may do before the user trusts it ---
#
# Every key declares one side (DESIGN.md "Configuration and trust"):
#   SIDE_ANY     harmless either way: an untrusted workspace file sets it as it likes;
#   SIDE_NARROW  an untrusted workspace file may only narrow the trusted value (KeySpec.narrow says
#                how; a value that would loosen is ignored and reported);
#   SIDE_USER    runs a program, loads code, sends data somewhere or widens what tools touch: ignored
#                from an untrusted workspace file (KeySpec.effects says what it would do);
#   SIDE_NEVER   never read from a workspace file, trusted or not.
SIDE_ANY = "any"
SIDE_NARROW = "narrow"
SIDE_USER = "user"
SIDE_NEVER = "never"
SIDES = (SIDE_ANY, SIDE_NARROW, SIDE_USER, SIDE_NEVER)

# narrow(key, trusted_value, workspace_value) -> (value to use, what was refused or None)
Narrower = Callable[[str, Any, Any], "tuple[Any, str | None]"]
# effects(workspace_value, root) -> one line per thing the value would make lich do
Effects = Callable[[Any, Path], list[str]]

APPROVAL_STRICTNESS = {"allow": 0, "ask": 1, "deny": 2}
# The approval policy a capability has when no entry names it (lich_lsp.approvals uses it too).
DEFAULT_ASK_CAPABILITIES = frozenset({"process/exec", "net/fetch", "image/eval", "mcp/call"})


def default_approval(capability: str | None) -> str:
    return "ask" if capability in DEFAULT_ASK_CAPABILITIES else "allow"


def narrow_min(key: str, trusted: Any, workspace: Any) -> tuple[Any, str | None]:
    if workspace <= trusted:
        return workspace, None
    return trusted, f"raise {key} from {trusted} to {workspace}"


def narrow_max(key: str, trusted: Any, workspace: Any) -> tuple[Any, str | None]:
    """A value a workspace may raise, never lower (a wait before something is sent)."""
    if workspace >= trusted:
        return workspace, None
    return trusted, f"lower {key} from {trusted} to {workspace}"


def narrow_rank(*order: str) -> Narrower:
    """Values in `order` from loosest to strictest: a workspace may pick one at least as strict."""

    def narrow(key: str, trusted: Any, workspace: Any) -> tuple[Any, str | None]:
        if order.index(workspace) >= order.index(trusted):
            return workspace, None
        return trusted, f"set {key} to {workspace!r} (looser than {trusted!r})"

    return narrow


def narrow_switch_off(key: str, trusted: Any, workspace: Any) -> tuple[Any, str | None]:
    """A switch a workspace may turn off, never on."""
    if trusted or not workspace:
        return workspace, None
    return trusted, f"turn {key} on"


def narrow_capabilities(key: str, trusted: Any, workspace: Any) -> tuple[Any, str | None]:
    """A subset of the trusted grant (None = every capability)."""
    granted = [name for name in workspace if trusted is None or name in trusted]
    return granted, None


def narrow_tools_enabled(key: str, trusted: Any, workspace: Any) -> tuple[Any, str | None]:
    if workspace == "all":
        return trusted, None
    if trusted == "all":
        return workspace, None
    return [name for name in workspace if name in trusted], None


def narrow_approval(key: str, trusted: Any, workspace: Any) -> tuple[Any, str | None]:
    """Entries may only go towards ask/deny; each is merged as the stricter of both sides.

    A tool-name entry wins over its capability's entry when policies are looked up, so a workspace
    `{"terminal": "ask"}` must not shadow the user's `{"process/exec": "deny"}`: a tool entry of
    "ask" is only taken when the user denies no capability outright.
    """
    merged = dict(trusted)
    refused: list[str] = []
    user_denies_a_capability = any(
        name in CAPABILITIES and value == "deny" for name, value in trusted.items()
    )
    for name, value in workspace.items():
        if value == "allow":
            refused.append(f"run {name} without asking")
            continue
        if name in CAPABILITIES:
            current = trusted.get(name, default_approval(name))
        elif name in trusted:
            current = trusted[name]
        elif value == "ask" and user_denies_a_capability:
            continue  # might loosen a denied capability for this tool; the user's deny stands
        else:
            current = "allow"
        merged[name] = max(current, value, key=APPROVAL_STRICTNESS.__getitem__)
    return merged, "; ".join(refused) or None


def _host_of(url: str) -> str:
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    if not parts.hostname:
        return url
    return f"{parts.hostname}:{parts.port}" if parts.port else parts.hostname


# Default hosts and key variables per kind (providers/factory.py has the same table; importing
# it here would load httpx on every config read).
_DEFAULT_PROVIDER_HOSTS = {
    "openai_compat": "api.openai.com",
    "anthropic": "api.anthropic.com",
    "ollama": "localhost",
}
_DEFAULT_KEY_ENVS = {"openai_compat": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}


def _provider_destination(entry: Mapping[str, Any]) -> str:
    """ "HOST with the key in $VAR": where a provider entry sends what it is given."""
    kind = entry.get("kind")
    base_url = entry.get("base_url")
    host = (
        _host_of(base_url)
        if isinstance(base_url, str) and base_url
        else _DEFAULT_PROVIDER_HOSTS.get(str(kind), "?")
    )
    key_env = entry.get("api_key_env") or _DEFAULT_KEY_ENVS.get(str(kind))
    if entry.get("api_key"):
        return f"{host} with the API key written in the file"
    if key_env:
        return f"{host} with the key in ${key_env}"
    return host


def provider_effects(value: Any, root: Path) -> list[str]:
    effects: list[str] = []
    for entry in value:
        if entry.get("kind") == "replay":
            effects.append(
                f"let the file {entry.get('path')} play the model (it chooses every tool call)"
            )
            continue
        effects.append(f"send your prompts and workspace content to {_provider_destination(entry)}")
    return effects


def completion_effects(value: Any, root: Path) -> list[str]:
    return [
        "send the text around your cursor and from your other open files, as you type, to "
        + _provider_destination(value)
    ]


def web_search_effects(value: Any, root: Path) -> list[str]:
    what = f"send your web searches to {_host_of(value['url'])}"
    if value.get("api_key_env"):
        what += f" with the key in ${value['api_key_env']}"
    return [what]


def plugin_effects(value: Any, root: Path) -> list[str]:
    effects = []
    for entry in value:
        path = entry.get("path") if isinstance(entry, dict) else entry
        effects.append(f"load plugin {path} (runs its Python code inside lich)")
    return effects


def one_effect(text: str) -> Effects:
    return lambda value, root: [text.format(value=value)]


@dataclass(frozen=True)
class KeySpec:
    default: Any
    validate: Validator
    env: str | None = None
    doc: str = ""
    side: str = SIDE_USER
    narrow: Narrower | None = None
    effects: Effects | None = None

    def __post_init__(self) -> None:
        if self.side not in SIDES or (self.side == SIDE_NARROW) != (self.narrow is not None):
            raise ValueError(
                f"KeySpec: side {self.side!r} needs narrow exactly when it is {SIDE_NARROW!r}"
            )


# Every configuration key. Later features add their keys here, in one table, so the loader,
# the validation messages, the trust rule and `lich config` all know them.
KEYS: dict[str, KeySpec] = {
    "work_dir": KeySpec(
        None,
        v_str,
        "LICH_WORK_DIR",
        "Narrows the tools' root to a folder inside the workspace root.",
        SIDE_NEVER,
    ),
    "tools_enabled": KeySpec(
        "all",
        v_tools_enabled,
        "LICH_TOOLS_ENABLED",
        '"all" or a list of tool names.',
        SIDE_NARROW,
        narrow_tools_enabled,
    ),
    "capabilities": KeySpec(
        None,
        v_capabilities,
        "LICH_CAPABILITIES",
        "Granted capabilities; absent = all.",
        SIDE_NARROW,
        narrow_capabilities,
    ),
    "terminal_timeout_ms": KeySpec(
        DEFAULT_TERMINAL_TIMEOUT_MS,
        v_int(1, 300_000),
        "LICH_TERMINAL_TIMEOUT_MS",
        "Default terminal command timeout.",
        SIDE_NARROW,
        narrow_min,
    ),
    # agent loop and providers
    "providers": KeySpec(
        [],
        v_list_of_objects,
        None,
        "Provider definitions (name, kind, base_url, model, ...).",
        effects=provider_effects,
    ),
    "models": KeySpec(
        {},
        v_object,
        None,
        "Role → provider names: {chat: [...], compress: [...]}.",
        effects=one_effect("choose which providers serve each role ({value})"),
    ),
    "max_turns": KeySpec(
        DEFAULT_MAX_TURNS,
        v_int(1, 1000),
        "LICH_MAX_TURNS",
        "Model calls per task.",
        SIDE_NARROW,
        narrow_min,
    ),
    "system_prompt": KeySpec(
        None,
        v_str,
        "LICH_SYSTEM_PROMPT",
        "Replaces the default system prompt.",
        effects=one_effect("replace the agent's system prompt"),
    ),
    "context_budget_tokens": KeySpec(
        DEFAULT_CONTEXT_BUDGET_TOKENS,
        v_int(1000, 10_000_000),
        None,
        "Context size estimate budget.",
        SIDE_NARROW,
        narrow_min,
    ),
    "compress_threshold": KeySpec(
        DEFAULT_COMPRESS_THRESHOLD,
        v_float(0.1, 1.0),
        None,
        "Fraction of the budget that triggers compression.",
        SIDE_ANY,
    ),
    "session_dir": KeySpec(
        None,
        v_str,
        "LICH_SESSION_DIR",
        "Session logs; default: the workspace's folder in the user state dir.",
        effects=one_effect("write session logs to {value}"),
    ),
    "threads_max": KeySpec(
        DEFAULT_THREADS_MAX,
        v_int(0, 100_000),
        "LICH_THREADS_MAX",
        "Threads (session logs) kept per workspace; older ones are deleted. 0 keeps every one.",
        effects=one_effect("keep only the {value} most recent threads (older ones are deleted)"),
    ),
    "plugins": KeySpec(
        [],
        v_list,
        None,
        "Plugin module paths or {path, settings, models} entries.",
        effects=plugin_effects,
    ),
    "mcp_servers": KeySpec(
        {},
        v_mcp_servers,
        None,
        "MCP servers: {name: {command, args?, env?, cwd?} | {url, headers_env?}}, each with enabled?, allow_runner?.",
        effects=mcp_effects,
    ),
    # tools
    "test_command": KeySpec(
        None,
        v_str,
        "LICH_TEST_COMMAND",
        "run_tests' command (bash -lc, in the root); default: pytest when the root looks like a Python project.",
        effects=one_effect("run `{value}` as the test command"),
    ),
    "docs_dir": KeySpec(
        None,
        v_str,
        "LICH_DOCS_DIR",
        "docs_search's docs root; default: <root>/docs, else lich's own docs.",
        effects=one_effect("let docs_search and docs_read read {value}"),
    ),
    "web_search": KeySpec(
        {"kind": "duckduckgo", "url": DUCKDUCKGO_HTML_URL},
        v_web_search,
        None,
        "web_search's backend: {kind: duckduckgo | searxng, url, api_key_env?}.",
        effects=web_search_effects,
    ),
    # language server
    "edit_mode": KeySpec(
        "apply",
        v_choice("apply", "review"),
        "LICH_EDIT_MODE",
        "apply: each edit at once; review: one reviewed edit at the end.",
        SIDE_NARROW,
        narrow_rank("apply", "review"),
    ),
    # Both styles apply nothing without the user's answer: how the review looks, not a permission.
    "review_style": KeySpec(
        "auto",
        v_choice("auto", "hunks", "batch"),
        None,
        "review mode: hunks (each change a diagnostic to accept or reject), batch (one edit at the end), auto.",
        SIDE_ANY,
    ),
    "approval": KeySpec(
        {},
        v_approval,
        None,
        "Capability or tool name → allow | ask | deny.",
        SIDE_NARROW,
        narrow_approval,
    ),
    "code_actions": KeySpec(
        [], v_code_actions, None, "Extra code actions: [{title, prompt, kind}].", side=SIDE_ANY
    ),
    "show_transcript": KeySpec(
        False,
        v_bool,
        None,
        "Open each finished task's markdown transcript in the editor (window/showDocument).",
        SIDE_ANY,
    ),
    "quick_prompts": KeySpec(
        list(DEFAULT_QUICK_PROMPTS),
        v_str_list,
        None,
        "Prompts offered by lich.ask without a prompt.",
        SIDE_ANY,
    ),
    "project_rules": KeySpec(
        True,
        v_bool,
        None,
        "Give the model the repository's AGENTS.md (or CLAUDE.md, .github/copilot-instructions.md).",
        SIDE_NARROW,
        narrow_switch_off,
    ),
    "disk_write_policy": KeySpec(
        "auto",
        v_choice("disk", "auto", "editor"),
        None,
        "How closed files are written.",
        SIDE_NARROW,
        narrow_rank("disk", "auto", "editor"),
    ),
    "workspace_trust": KeySpec(
        "ask",
        v_choice("ask", "never"),
        "LICH_WORKSPACE_TRUST",
        "ask: offer to trust a workspace config that asks for more; never: ignore such keys, never ask.",
        SIDE_NARROW,
        narrow_rank("ask", "never"),
    ),
    # inline completions (docs/completions.md)
    "completion": KeySpec(
        None,
        v_completion,
        None,
        "The completion model: a provider entry plus format (completions | generate | chat); unset: no completions.",
        effects=completion_effects,
    ),
    "completion_debounce_ms": KeySpec(
        DEFAULT_COMPLETION_DEBOUNCE_MS,
        v_int(0, 2000),
        None,
        "Quiet time after a keystroke before a completion is asked for.",
        SIDE_NARROW,
        narrow_max,
    ),
    "completion_prefix_chars": KeySpec(
        DEFAULT_COMPLETION_PREFIX_CHARS,
        v_int(0, 100_000),
        None,
        "Characters of the buffer before the cursor a completion is given.",
        SIDE_NARROW,
        narrow_min,
    ),
    "completion_suffix_chars": KeySpec(
        DEFAULT_COMPLETION_SUFFIX_CHARS,
        v_int(0, 100_000),
        None,
        "Characters of the buffer after the cursor a completion is given.",
        SIDE_NARROW,
        narrow_min,
    ),
}


class Config(dict):
    """The effective configuration: every known key present, plus `sources` for diagnostics and
    `trust`: whether the workspace file counted, and which of its settings were ignored."""

    sources: dict[str, str]
    trust: TrustStatus
    # One line per likely typo of a key (misspelled_keys); the CLI prints them, the server shows them.
    warnings: list[str]

    def __init__(
        self,
        values: Mapping[str, Any],
        sources: Mapping[str, str],
        trust: TrustStatus | None = None,
        warnings: list[str] | None = None,
    ) -> None:
        super().__init__(values)
        self.sources = dict(sources)
        self.trust = (
            trust
            if trust is not None
            else TrustStatus(NO_CONFIG, Path(CONFIG_DIR_NAME) / CONFIG_FILE_NAME)
        )
        self.warnings = list(warnings or [])

    @property
    def settings(self) -> Settings:
        """The values as typed attributes, with this config's sources and trust. Made at each
        read (cheap: a few dozen attributes), so a value set on the Config afterwards shows."""
        return Settings.of(self, sources=self.sources, trust=self.trust)


def user_config_path(env: Mapping[str, str] | None = None) -> Path:
    env = os.environ if env is None else env
    base = env.get("XDG_CONFIG_HOME") or os.path.join(
        env.get("HOME") or os.path.expanduser("~"), ".config"
    )
    return Path(base) / "lich" / CONFIG_FILE_NAME


def workspace_config_path(work_dir: str | os.PathLike[str]) -> Path:
    return Path(work_dir) / CONFIG_DIR_NAME / CONFIG_FILE_NAME


def read_config_file(path: Path, *, must_exist: bool = False) -> dict[str, Any]:
    """Parse a JSON config file; a missing file is empty (a ConfigError when `must_exist`: the
    user named it), a broken one a ConfigError naming it."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        if must_exist:
            raise ConfigError(f"{path}: no such file") from None
        return {}
    except OSError as err:
        raise ConfigError(f"{path}: cannot read ({err.strerror})") from err
    try:
        data = json.loads(_strip_json_comments(text)) if text.strip() else {}
    except json.JSONDecodeError as err:
        raise ConfigError(
            f"{path}: invalid JSON at line {err.lineno} column {err.colno}: {err.msg}"
        ) from err
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


# How alike an unknown key must be to a known one to be called a typo of it ("provider" and
# "providers" score 0.94, "tools" and "tools_enabled" 0.56).
TYPO_CUTOFF = 0.8
UNKNOWN_KEY_HINT = "the keys are listed in docs/configuration.md"


def misspelled_keys(values: Mapping[str, Any], source: str) -> list[str]:
    """A warning for each unknown key: naming the known key it looks like a misspelling of, else
    saying that lich has no such setting (a silent "modle" would look as if it took effect)."""
    by_lower = {key.lower(): key for key in KEYS}
    warnings: list[str] = []
    for key in values:
        if key in KEYS:
            continue
        close = difflib.get_close_matches(key.lower(), list(by_lower), n=1, cutoff=TYPO_CUTOFF)
        if close:
            warnings.append(
                f"lich: unknown config key {key!r} in {source}: did you mean {by_lower[close[0]]!r}? "
                "(lich ignores the key as written)"
            )
        else:
            warnings.append(
                f"lich: unknown config key {key!r} in {source}: lich has no such setting and ignores it "
                f"({UNKNOWN_KEY_HINT})"
            )
    return warnings


def env_values(env: Mapping[str, str]) -> dict[str, Any]:
    return {key: env[spec.env] for key, spec in KEYS.items() if spec.env and env.get(spec.env)}


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
            sources[key] = "default"
    return values, sources


def _keys_on(side: str) -> frozenset[str]:
    return frozenset(key for key, spec in KEYS.items() if spec.side == side)


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


def _narrowed_work_dir(value: str | None, source: str, root: Path) -> str:
    """The tools' root: the workspace root, or a folder inside it that a trusted setting names."""
    if not value:
        return str(root)
    path = resolve_in_root(root, value)
    if not _is_inside(root, path):
        raise ConfigError(
            f"work_dir: {value} is outside the workspace root {root}; it may only narrow to a folder inside it (in {source})"
        )
    return str(path)


def _is_inside(root: Path, path: Path) -> bool:
    real_root = os.path.realpath(root)
    real = os.path.realpath(path)
    return real == real_root or real.startswith(real_root.rstrip(os.sep) + os.sep)


def load_config(
    work_dir: str | os.PathLike[str],
    *,
    overrides: Mapping[str, Any] | None = None,
    env: Mapping[str, str] | None = None,
    config_file: str | os.PathLike[str] | None = None,
    trust_store: TrustStore | None = None,
) -> Config:
    """Build the effective config for the workspace root `work_dir`. Raises ConfigError naming the bad key.

    Trusted layers: overrides (CLI flags, editor settings), an explicit `--config` file, the user's
    config file, the environment. The workspace's `.lich/config.json` counts in full only once the
    user trusted its exact content (lich_core.trust); until then each of its keys is applied as
    its KeySpec.side allows, and the rest is listed in `config.trust.ignored`.
    """
    env = os.environ if env is None else env
    root = Path(work_dir).resolve()
    trusted_layers: list[Layer] = []
    warnings: list[str] = []
    if overrides:
        warnings += misspelled_keys(overrides, "the editor's settings")
        trusted_layers.append(("overrides", validate_values(overrides, "overrides")))
    if config_file is not None:
        # A file the user names must be there: silently running on the defaults instead would
        # hide a typo in the path until a provider or tool behaves unexpectedly.
        explicit = validate_values(
            read_config_file(Path(config_file), must_exist=True), str(config_file)
        )
        warnings += misspelled_keys(explicit, str(config_file))
        trusted_layers.append(
            (str(config_file), _with_absolute_paths(explicit, Path(config_file).resolve().parent))
        )
    workspace_file = workspace_config_path(root)
    workspace = validate_values(read_config_file(workspace_file), str(workspace_file))
    warnings += misspelled_keys(workspace, str(workspace_file))
    user_file = user_config_path(env)
    user_values = validate_values(read_config_file(user_file), str(user_file))
    warnings += misspelled_keys(user_values, str(user_file))
    after_workspace: list[Layer] = [
        (str(user_file), _with_absolute_paths(user_values, user_file.parent)),
        ("environment", validate_values(env_values(env), "environment")),
    ]
    trusted, trusted_sources = _merge(trusted_layers + after_workspace)
    trust = workspace_trust_status(
        root, workspace_file, workspace, trusted, trust_store or TrustStore.for_env(env)
    )
    never = _keys_on(SIDE_NEVER)
    source = str(workspace_file)
    if trust.state == TRUSTED:
        assert trust.fingerprint is not None
        layer = {
            k: v
            for k, v in _pinned_workspace_entries(workspace, root, trust.fingerprint).items()
            if k not in never
        }
        values, sources = _merge([*trusted_layers, (source, layer), *after_workspace])
    else:
        free = {k: v for k, v in workspace.items() if k not in KEYS or KEYS[k].side == SIDE_ANY}
        values, sources = _merge([*trusted_layers, (source, free), *after_workspace])
        for key in _keys_on(SIDE_NARROW) & workspace.keys():
            if workspace[key] is None:
                continue
            narrowed, _ = KEYS[key].narrow(key, trusted[key], workspace[key])  # type: ignore[misc]
            values[key] = narrowed
            if narrowed == workspace[key]:
                sources[key] = source
            elif narrowed != trusted[key]:
                sources[key] = f"{trusted_sources[key]}, narrowed by {source}"
    values["work_dir"] = _narrowed_work_dir(
        values.get("work_dir"), sources.get("work_dir", "default"), root
    )
    return Config(values, sources, trust, warnings)


def workspace_trust_status(
    root: Path,
    config_path: Path,
    workspace: Mapping[str, Any],
    trusted: Mapping[str, Any],
    store: TrustStore,
) -> TrustStatus:
    """Trusted, untrusted (with what is ignored), refused, or no workspace config at all."""
    if not config_path.is_file():
        return TrustStatus(NO_CONFIG, config_path)
    ignored = ignored_settings(workspace, trusted, root)
    refuses = (
        trusted.get("workspace_trust") == "never" or workspace.get("workspace_trust") == "never"
    )
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


def is_secret_name(name: str) -> bool:
    """The tools' secret rule (lich_core.tools.secrets), except that `*_env` names a variable, not a secret."""
    if name.lower().endswith("_env"):
        return False
    return tool_secret_name(name)


def mask_secrets(value: Any) -> Any:
    """Copy of a config value with secret-looking fields masked, for display."""
    if isinstance(value, dict):
        return {
            key: (
                f"<redacted: {len(str(item))} chars>"
                if is_secret_name(key) and isinstance(item, str)
                else mask_secrets(item)
            )
            for key, item in value.items()
        }
    if isinstance(value, list):
        return [mask_secrets(item) for item in value]
    return value


@dataclass(frozen=True)
class TrustChange:
    """What `lich trust` / lich.trustWorkspace did: the status before and after, and one line for the user."""

    before: TrustStatus
    after: TrustStatus
    message: str

    def to_json(self) -> dict[str, Any]:
        # `keys`: what trusting applies (or, after a revoke or refusal, what is ignored now).
        keys = self.before.ignored if self.after.state == TRUSTED else self.after.ignored
        return {
            **self.after.to_json(),
            "keys": [item.to_json() for item in keys],
            "message": self.message,
        }


def set_workspace_trust(
    root: str | os.PathLike[str],
    *,
    trust: bool,
    overrides: Mapping[str, Any] | None = None,
    env: Mapping[str, str] | None = None,
    config_file: str | os.PathLike[str] | None = None,
    trust_store: TrustStore | None = None,
) -> TrustChange:
    """Trust the workspace config's current content (and the files it runs), or revoke trust."""
    env = os.environ if env is None else env
    store = trust_store or TrustStore.for_env(env)
    root_path = Path(root).resolve()

    def status() -> TrustStatus:
        return load_config(
            root_path, overrides=overrides, env=env, config_file=config_file, trust_store=store
        ).trust

    before = status()
    if not trust:
        had = store.revoke(root_path)
        after = status()
        what = "revoked trust in" if had else "did not trust"
        return TrustChange(
            before,
            after,
            f"lich: {what} {before.config_path}; its settings that need trust are ignored",
        )
    # Trusting is also the user's yes to what agent runs without process/exec wrote here.
    confirmed = store.agent_writes(root_path)
    confirmed_note = f"; MCP servers may start here again after the agent's changes ({agent_writes_text(confirmed)})"
    if before.state in (NO_CONFIG, REFUSED) and store.confirm_agent_writes(root_path):
        before = status()
    else:
        confirmed_note = ""
    if before.state == NO_CONFIG:
        return TrustChange(
            before,
            before,
            f"lich: nothing to trust: {before.config_path} does not exist{confirmed_note}",
        )
    if before.state == REFUSED:
        return TrustChange(
            before,
            before,
            'lich: not trusted: your settings say never to trust workspace configs here (workspace_trust: "never")'
            + confirmed_note,
        )
    if before.state == UNTRUSTED:
        assert before.fingerprint is not None
        store.trust(root_path, before.fingerprint)
    after = status()
    applied = [item for item in before.ignored if KEYS[item.key].side != SIDE_NEVER]
    effects = (
        "; ".join(f"{item.key}: {item.what}" for item in applied)
        or "nothing beyond what it narrows"
    )
    return TrustChange(before, after, f"lich: trusted {before.config_path}; now applied: {effects}")
