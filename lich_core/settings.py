"""The effective configuration as typed values: one attribute per key of lich_core.config.KEYS.

`Config` (lich_core.config) is what the loader builds and the faces show (`lich config`, the
server's status): a dict with where each value came from. Code that acts on a setting reads it
here, as `config.settings.max_turns`, so a misspelled or renamed key is a type error and not a
silent default. A test keeps the fields and their defaults equal to KEYS.

A `Settings` is also a read-only mapping of every value, known keys and unknown ones alike:
plugin tools read `ctx.settings["their_key"]` as they always did.

This module sits at the bottom with the vocabulary (the tools' context, the providers' factory
and the config loader use it): it imports only the standard library. The workspace config's trust
status (lich_core.trust.TrustStatus) is seen through the small protocol below.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Protocol

# The terminal tool's default command timeout: config's `terminal_timeout_ms` default and a
# context's when nothing configures it (a direct call).
DEFAULT_TERMINAL_TIMEOUT_MS = 60_000
DEFAULT_MAX_TURNS = 25
DEFAULT_THREADS_MAX = 100
DEFAULT_CONTEXT_BUDGET_TOKENS = 100_000
DEFAULT_COMPRESS_THRESHOLD = 0.8
# DuckDuckGo's HTML endpoint: web_search's default backend.
DUCKDUCKGO_HTML_URL = "https://html.duckduckgo.com/html/"
# Inline completions: the quiet time after a keystroke, and the buffer windows around the cursor.
DEFAULT_COMPLETION_DEBOUNCE_MS = 75
DEFAULT_COMPLETION_PREFIX_CHARS = 6000
DEFAULT_COMPLETION_SUFFIX_CHARS = 2000
DEFAULT_QUICK_PROMPTS = ("Explain this code", "Find bugs in this code", "Add tests for this code")
# A `providers` entry's kinds and fields: the config checks entries against them, the providers'
# factory builds from them (here because both may import this module, and neither the other).
PROVIDER_KINDS = ("openai_compat", "anthropic", "ollama", "replay")
PROVIDER_FIELDS = (
    "name",
    "kind",
    "base_url",
    "model",
    "api_key",
    "api_key_env",
    "path",
    "timeout_ms",
    "headers",
    "stream",
    "max_tokens",
)


def _default_web_search() -> dict[str, Any]:
    return {"kind": "duckduckgo", "url": DUCKDUCKGO_HTML_URL}


def _default_quick_prompts() -> list[str]:
    return list(DEFAULT_QUICK_PROMPTS)


class WorkspaceTrust(Protocol):
    """What settings need of the workspace config's trust status (lich_core.trust.TrustStatus)."""

    @property
    def trusted(self) -> bool: ...

    @property
    def config_path(self) -> Path: ...

    def lapse(self, store: Any = None) -> str | None: ...


# Fields of Settings that are not configuration keys: where each value came from, the workspace
# config's trust, and the keys lich does not know (plugins may read them).
BOOKKEEPING_FIELDS = frozenset({"extra", "sources", "trust"})


@dataclass(frozen=True, eq=False)
class Settings(Mapping[str, Any]):
    """Validated values (lich_core.config validates them; `of` only fills in defaults).

    The meaning of each key is in KEYS' `doc` and docs/configuration.md.
    """

    work_dir: str | None = None
    tools_enabled: str | Sequence[str] = "all"
    capabilities: Sequence[str] | None = None
    terminal_timeout_ms: int = DEFAULT_TERMINAL_TIMEOUT_MS
    providers: Sequence[Mapping[str, Any]] = field(default_factory=list)
    models: Mapping[str, Any] = field(default_factory=dict)
    max_turns: int = DEFAULT_MAX_TURNS
    system_prompt: str | None = None
    context_budget_tokens: int = DEFAULT_CONTEXT_BUDGET_TOKENS
    compress_threshold: float = DEFAULT_COMPRESS_THRESHOLD
    session_dir: str | None = None
    threads_max: int = DEFAULT_THREADS_MAX
    plugins: Sequence[Any] = field(default_factory=list)
    mcp_servers: Mapping[str, Any] = field(default_factory=dict)
    test_command: str | None = None
    docs_dir: str | None = None
    web_search: Mapping[str, Any] = field(default_factory=_default_web_search)
    edit_mode: str = "apply"
    review_style: str = "auto"
    approval: Mapping[str, str] = field(default_factory=dict)
    code_actions: Sequence[Mapping[str, Any]] = field(default_factory=list)
    show_transcript: bool = False
    quick_prompts: Sequence[str] = field(default_factory=_default_quick_prompts)
    project_rules: bool = True
    disk_write_policy: str = "auto"
    workspace_trust: str = "ask"
    completion: Mapping[str, Any] | None = None
    completion_debounce_ms: int = DEFAULT_COMPLETION_DEBOUNCE_MS
    completion_prefix_chars: int = DEFAULT_COMPLETION_PREFIX_CHARS
    completion_suffix_chars: int = DEFAULT_COMPLETION_SUFFIX_CHARS
    next_edit: Mapping[str, Any] | None = None

    extra: Mapping[str, Any] = field(default_factory=dict)
    sources: Mapping[str, str] = field(default_factory=dict)
    trust: WorkspaceTrust | None = None

    @classmethod
    def of(
        cls,
        values: Mapping[str, Any],
        *,
        sources: Mapping[str, str] | None = None,
        trust: WorkspaceTrust | None = None,
    ) -> Settings:
        """The settings `values` hold; a key absent or None takes its default (as the loader does)."""
        known: dict[str, Any] = {}
        extra: dict[str, Any] = {}
        for key, value in values.items():
            if key in KEY_NAMES:
                if value is not None:
                    known[key] = value
            elif key not in BOOKKEEPING_FIELDS:
                extra[key] = value
        return cls(**known, extra=extra, sources=dict(sources or {}), trust=trust)

    def from_trusted_workspace(self, key: str) -> WorkspaceTrust | None:
        """The trusted workspace config's status when `key`'s value came from that config; None
        otherwise (a long-lived reader asks its `lapse()` before it runs what the value names)."""
        trust = self.trust
        if trust is None or not trust.trusted:
            return None
        return trust if self.sources.get(key) == str(trust.config_path) else None

    @property
    def workspace_trusted(self) -> bool:
        """Whether the user trusted this workspace's config; settings not loaded from one are not."""
        return self.trust is not None and self.trust.trusted

    # --- the read-only mapping view (plugins, and JSON at the faces) ---

    def __getitem__(self, key: str) -> Any:
        if key in KEY_NAMES:
            return getattr(self, key)
        return self.extra[key]

    def __iter__(self) -> Iterator[str]:
        yield from KEY_NAMES
        yield from self.extra

    def __len__(self) -> int:
        return len(KEY_NAMES) + len(self.extra)

    def __contains__(self, key: object) -> bool:
        return key in KEY_NAMES or key in self.extra


# The configuration keys, in the order KEYS declares them (a test holds the two equal).
KEY_NAMES: tuple[str, ...] = tuple(
    f.name for f in fields(Settings) if f.name not in BOOKKEEPING_FIELDS
)

EMPTY_SETTINGS = Settings()


def settings_of(values: Mapping[str, Any] | None) -> Settings:
    """Typed settings for a config-like mapping: a Settings as it is, a loaded Config's own
    (`Config.settings`, which keeps its sources and trust), a plain dict (a test, a direct tool
    call) with defaults for what it leaves out."""
    if values is None:
        return EMPTY_SETTINGS
    if isinstance(values, Settings):
        return values
    own = getattr(values, "settings", None)
    if isinstance(own, Settings):
        return own
    return Settings.of(values)
