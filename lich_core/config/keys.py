"""The key table: every configuration key, how its value is checked, its environment variable,
its trust side, and what a trusted source's bad value becomes.

A key's default is stated once, as the default of its field in lich_core.settings.Settings (the
typed view code reads); `KeySpec.default` reads it from there.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import MISSING, dataclass, fields
from typing import Any

from lich_core.config.sides import (
    SIDE_ANY,
    SIDE_NARROW,
    SIDE_NEVER,
    SIDE_USER,
    SIDES,
    Effects,
    Narrower,
    completion_effects,
    narrow_approval,
    narrow_capabilities,
    narrow_max,
    narrow_min,
    narrow_rank,
    narrow_switch_off,
    narrow_tools_enabled,
    next_edit_effects,
    one_effect,
    plugin_effects,
    provider_effects,
    web_search_effects,
)
from lich_core.config.validators import (
    Validator,
    v_approval_choice,
    v_approval_name,
    v_bool,
    v_capability,
    v_choice,
    v_code_action,
    v_completion,
    v_float,
    v_int,
    v_list,
    v_next_edit,
    v_object,
    v_plugin,
    v_provider,
    v_role,
    v_role_name,
    v_str,
    v_tools_enabled,
    v_web_search,
    v_words,
)
from lich_core.errors import ConfigError
from lich_core.mcp.spec import mcp_effects, validate_entry, validate_server_name
from lich_core.settings import Settings
from lich_core.tools.types import CAPABILITIES

# A value the check threw away: the key is then not set by that source.
DROPPED: Any = type("Dropped", (), {"__repr__": lambda self: "DROPPED"})()
# KeySpec.closed when a bad value is simply dropped (most keys: nothing is loosened by that).
JUST_DROP: Any = type("JustDrop", (), {"__repr__": lambda self: "JUST_DROP"})()

# (the entry's index or name, its key path, the message) for each entry a check dropped
EntryProblem = tuple[Any, str, str]
NameCheck = Callable[[str, Any], None]


def _settings_default(key: str) -> Any:
    for item in fields(Settings):
        if item.name == key:
            if item.default_factory is not MISSING:
                return item.default_factory()
            return copy.deepcopy(item.default)
    raise KeyError(key)


@dataclass(frozen=True)
class KeySpec:
    """One configuration key.

    `validate` checks a whole value (for a container: its shape, normalised to a list or an
    object); `entry` then checks each entry alone, so a broken entry is dropped alone (`entry_name`
    checks an object's entry names). `closed` is what a bad value from a trusted source (the
    editor, the user, the environment) becomes for a key that restricts the agent: the user meant
    to restrict something, so the value fails closed instead of falling through to a looser one.
    `closed_entry` does the same for one bad entry of an object (an approval entry).
    """

    validate: Validator
    env: str | None = None
    doc: str = ""
    side: str = SIDE_USER
    narrow: Narrower | None = None
    effects: Effects | None = None
    entry: Validator | None = None
    entry_name: NameCheck | None = None
    closed: Any = JUST_DROP
    closed_entry: Any = JUST_DROP

    def __post_init__(self) -> None:
        if self.side not in SIDES or (self.side == SIDE_NARROW) != (self.narrow is not None):
            raise ValueError(
                f"KeySpec: side {self.side!r} needs narrow exactly when it is {SIDE_NARROW!r}"
            )

    @property
    def default(self) -> Any:
        return _settings_default(_key_of(self))

    def check(self, key: str, value: Any) -> tuple[Any, list[EntryProblem]]:
        """The value normalised, minus the entries that fail (named in the list); DROPPED (with
        the whole value's problem) when the value itself is wrong. Never raises ConfigError."""
        try:
            shaped = self.validate(key, value)
        except ConfigError as err:
            return DROPPED, [(None, key, str(err))]
        if self.entry is None or not isinstance(shaped, (list, dict)):
            return shaped, []
        problems: list[EntryProblem] = []
        if isinstance(shaped, list):
            kept_items = []
            for index, item in enumerate(shaped):
                try:
                    kept_items.append(self.entry(f"{key}[{index}]", item))
                except ConfigError as err:
                    problems.append((index, f"{key}[{index}]", str(err)))
            return kept_items, problems
        kept: dict[str, Any] = {}
        for name, item in shaped.items():
            try:
                if self.entry_name is not None:
                    self.entry_name(f"{key}.{name}", name)
                kept[name] = self.entry(f"{key}.{name}", item)
            except ConfigError as err:
                problems.append((name, f"{key}.{name}", str(err)))
        return kept, problems


def _mcp_name(path: str, name: Any) -> None:
    validate_server_name(path, name)


# Every configuration key. Later features add their keys here, in one table, so the loader, the
# validation messages, the trust rule and `lich config` all know them; its default goes in
# lich_core.settings.Settings.
KEYS: dict[str, KeySpec] = {
    "work_dir": KeySpec(
        v_str,
        "LICH_WORK_DIR",
        "Narrows the tools' root to a folder inside the workspace root.",
        SIDE_NEVER,
    ),
    "tools_enabled": KeySpec(
        v_tools_enabled,
        "LICH_TOOLS_ENABLED",
        '"all" or a list of tool names.',
        SIDE_NARROW,
        narrow_tools_enabled,
        entry=v_str,
        closed=[],
    ),
    "capabilities": KeySpec(
        v_words,
        "LICH_CAPABILITIES",
        "Granted capabilities; absent = all.",
        SIDE_NARROW,
        narrow_capabilities,
        entry=v_capability,
        closed=["file/read"],
    ),
    "terminal_timeout_ms": KeySpec(
        v_int(1, 300_000),
        "LICH_TERMINAL_TIMEOUT_MS",
        "Default terminal command timeout.",
        SIDE_NARROW,
        narrow_min,
    ),
    # agent loop and providers
    "providers": KeySpec(
        v_list,
        None,
        "Provider definitions (name, kind, base_url, model, ...).",
        effects=provider_effects,
        entry=v_provider,
    ),
    "models": KeySpec(
        v_object,
        None,
        "Role → provider names: {chat: [...], compress: [...]}.",
        effects=one_effect("choose which providers serve each role ({value})"),
        entry=v_role,
        entry_name=v_role_name,
    ),
    "max_turns": KeySpec(
        v_int(1, 1000),
        "LICH_MAX_TURNS",
        "Model calls per task.",
        SIDE_NARROW,
        narrow_min,
    ),
    "system_prompt": KeySpec(
        v_str,
        "LICH_SYSTEM_PROMPT",
        "Replaces the default system prompt.",
        effects=one_effect("replace the agent's system prompt"),
    ),
    "context_budget_tokens": KeySpec(
        v_int(1000, 10_000_000),
        None,
        "Context size estimate budget.",
        SIDE_NARROW,
        narrow_min,
    ),
    "compress_threshold": KeySpec(
        v_float(0.1, 1.0),
        None,
        "Fraction of the budget that triggers compression.",
        SIDE_ANY,
    ),
    "session_dir": KeySpec(
        v_str,
        "LICH_SESSION_DIR",
        "Session logs; default: the workspace's folder in the user state dir.",
        effects=one_effect("write session logs to {value}"),
    ),
    "threads_max": KeySpec(
        v_int(0, 100_000),
        "LICH_THREADS_MAX",
        "Threads (session logs) kept per workspace; older ones are deleted. 0 keeps every one.",
        effects=one_effect("keep only the {value} most recent threads (older ones are deleted)"),
    ),
    "plugins": KeySpec(
        v_list,
        None,
        "Plugin module paths or {path, settings, models} entries.",
        effects=plugin_effects,
        entry=v_plugin,
    ),
    "mcp_servers": KeySpec(
        v_object,
        None,
        "MCP servers: {name: {command, args?, env?, cwd?} | {url, headers_env?}}, each with enabled?, allow_runner?.",
        effects=mcp_effects,
        entry=validate_entry,
        entry_name=_mcp_name,
    ),
    # tools
    "test_command": KeySpec(
        v_str,
        "LICH_TEST_COMMAND",
        "run_tests' command (bash -lc, in the root); default: pytest when the root looks like a Python project.",
        effects=one_effect("run `{value}` as the test command"),
    ),
    "docs_dir": KeySpec(
        v_str,
        "LICH_DOCS_DIR",
        "docs_search's docs root; default: <root>/docs, else lich's own docs.",
        effects=one_effect("let docs_search and docs_read read {value}"),
    ),
    "web_search": KeySpec(
        v_web_search,
        None,
        "web_search's backend: {kind: duckduckgo | searxng, url, api_key_env?}.",
        effects=web_search_effects,
    ),
    # language server
    "edit_mode": KeySpec(
        v_choice("apply", "review"),
        "LICH_EDIT_MODE",
        "apply: each edit at once; review: one reviewed edit at the end.",
        SIDE_NARROW,
        narrow_rank("apply", "review"),
    ),
    # Both styles apply nothing without the user's answer: how the review looks, not a permission.
    "review_style": KeySpec(
        v_choice("auto", "hunks", "batch"),
        None,
        "review mode: hunks (each change a diagnostic to accept or reject), batch (one edit at the end), auto.",
        SIDE_ANY,
    ),
    "approval": KeySpec(
        v_object,
        None,
        "Capability or tool name → allow | ask | deny.",
        SIDE_NARROW,
        narrow_approval,
        entry=v_approval_choice,
        entry_name=v_approval_name,
        # A trusted approval setting that cannot be read asks before everything that may ask.
        closed={name: "ask" for name in CAPABILITIES},
        closed_entry="deny",
    ),
    "code_actions": KeySpec(
        v_list,
        None,
        "Extra code actions: [{title, prompt, kind}].",
        side=SIDE_ANY,
        entry=v_code_action,
    ),
    "show_transcript": KeySpec(
        v_bool,
        None,
        "Open each finished task's markdown transcript in the editor (window/showDocument).",
        SIDE_ANY,
    ),
    "quick_prompts": KeySpec(
        v_words,
        None,
        "Prompts offered by lich.ask without a prompt.",
        SIDE_ANY,
        entry=v_str,
    ),
    "project_rules": KeySpec(
        v_bool,
        None,
        "Give the model the repository's AGENTS.md (or CLAUDE.md, .github/copilot-instructions.md).",
        SIDE_NARROW,
        narrow_switch_off,
    ),
    "disk_write_policy": KeySpec(
        v_choice("disk", "auto", "editor"),
        None,
        "How closed files are written.",
        SIDE_NARROW,
        narrow_rank("disk", "auto", "editor"),
    ),
    "workspace_trust": KeySpec(
        v_choice("ask", "never"),
        "LICH_WORKSPACE_TRUST",
        "ask: offer to trust a workspace config that asks for more; never: ignore such keys, never ask.",
        SIDE_NARROW,
        narrow_rank("ask", "never"),
        closed="never",
    ),
    # inline completions (docs/completions.md)
    "completion": KeySpec(
        v_completion,
        None,
        "The completion model: a provider entry plus format (completions | generate | chat); unset: no completions.",
        effects=completion_effects,
    ),
    "completion_debounce_ms": KeySpec(
        v_int(0, 2000),
        None,
        "Quiet time after a keystroke before a completion is asked for.",
        SIDE_NARROW,
        narrow_max,
    ),
    "completion_prefix_chars": KeySpec(
        v_int(0, 100_000),
        None,
        "Characters of the buffer before the cursor a completion is given.",
        SIDE_NARROW,
        narrow_min,
    ),
    "completion_suffix_chars": KeySpec(
        v_int(0, 100_000),
        None,
        "Characters of the buffer after the cursor a completion is given.",
        SIDE_NARROW,
        narrow_min,
    ),
    # next edit suggestions (docs/next-edit.md)
    "next_edit": KeySpec(
        v_next_edit,
        None,
        "The next-edit model: a provider entry plus format (zeta | chat); unset: no next edits.",
        effects=next_edit_effects,
    ),
}

_NAME_OF_SPEC = {id(spec): key for key, spec in KEYS.items()}


def _key_of(spec: KeySpec) -> str:
    return _NAME_OF_SPEC[id(spec)]


def keys_on(side: str) -> frozenset[str]:
    return frozenset(key for key, spec in KEYS.items() if spec.side == side)


def validate_value(key: str, value: Any) -> Any:
    """`key`'s value checked whole: normalised, or a ConfigError naming the first problem (for a
    caller that must take all of a value or none of it: `lich mcp add`, a tool's direct call)."""
    checked, problems = KEYS[key].check(key, value)
    if problems:
        raise ConfigError(problems[0][2])
    return checked
