"""Build the Model for a role from configuration, or the default provider from the environment.

Provider entries (config `providers`): name, kind, base_url, model, api_key, api_key_env, path,
timeout_ms, headers, stream, max_tokens. Roles (config `models`): {"chat": [names], "compress":
[names]}; `compress` falls back to the chat chain, and with no `models.chat` every configured
provider is in the chat chain in order. With no providers at all the default comes from
LICH_PROVIDER_KIND / LICH_BASE_URL / LICH_MODEL, else OpenAI when OPENAI_API_KEY is set, Anthropic
when ANTHROPIC_API_KEY is set, else Ollama on localhost.

Every misconfiguration is a ConfigError naming the key (`providers[1].model: ...`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lich_core.errors import ConfigError
from lich_core.providers.anthropic import ANTHROPIC_BASE_URL, ANTHROPIC_HOST, AnthropicModel
from lich_core.providers.base import Model
from lich_core.providers.chain import ProviderChain
from lich_core.providers.http import HttpModel, host_of
from lich_core.providers.ollama import OLLAMA_BASE_URL, OllamaModel
from lich_core.providers.openai_compat import OPENAI_BASE_URL, OPENAI_HOST, OpenAICompatModel
from lich_core.providers.replay import ReplayModel
from lich_core.settings import PROVIDER_FIELDS, PROVIDER_KINDS, settings_of

DEFAULT_BASE_URLS = {
    "openai_compat": OPENAI_BASE_URL,
    "anthropic": ANTHROPIC_BASE_URL,
    "ollama": OLLAMA_BASE_URL,
}
DEFAULT_MODELS = {
    "openai_compat": "gpt-4o-mini",
    "anthropic": "claude-sonnet-4-0",
    "ollama": "llama3.1",
}
KEY_ENV_VARS = {"openai_compat": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}
# Only the public APIs insist on a key; local and self-hosted servers usually run without one.
KEY_REQUIRED_HOSTS = {"openai_compat": OPENAI_HOST, "anthropic": ANTHROPIC_HOST}
HTTP_CLASSES: dict[str, type[HttpModel]] = {
    "openai_compat": OpenAICompatModel,
    "anthropic": AnthropicModel,
    "ollama": OllamaModel,
}


def user_config_file() -> Path:
    """lich_core.config.user_config_path, which providers may not import (tests/core/test_layers.py)."""
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(
        os.environ.get("HOME") or os.path.expanduser("~"), ".config"
    )
    return Path(base) / "lich" / "config.json"


def no_key_fallback_hint() -> str:
    # The user config's real path: with XDG_CONFIG_HOME set, ~/.config/lich is not where lich looks.
    return (
        "no OPENAI_API_KEY or ANTHROPIC_API_KEY is set and no provider is configured, so lich tried a "
        "local Ollama: set a key, start Ollama (`ollama serve`), or configure providers in "
        f"{user_config_file()} (or try `lich demo`, which needs none)"
    )


def default_provider_hint() -> str:
    return (
        "set LICH_BASE_URL / LICH_MODEL, OPENAI_API_KEY or ANTHROPIC_API_KEY, or configure providers in "
        f"{user_config_file()}"
    )


@dataclass
class ProviderSpec:
    """A validated provider entry; `where` is the config path used in messages."""

    name: str
    kind: str
    model: str
    where: str
    base_url: str = ""
    api_key: str | None = None
    path: str = ""
    timeout_ms: int | None = None
    headers: dict[str, str] = field(default_factory=dict)
    stream: bool = True
    max_tokens: int | None = None
    from_env: bool = False
    # The default provider fell back to a local Ollama because no key and no provider were set.
    no_key_fallback: bool = False

    def describe(self) -> str:
        if self.kind == "replay":
            return f"replay {self.path}"
        return f"{self.kind} {self.model} @ {self.base_url}"


def _fail(where: str, key: str, message: str) -> ConfigError:
    return ConfigError(f"{where}.{key}: {message}")


def _string(entry: Mapping[str, Any], where: str, key: str, *, required: bool = False) -> str:
    value = entry.get(key)
    if value is None or value == "":
        if required:
            raise _fail(where, key, "is required")
        return ""
    if not isinstance(value, str):
        raise _fail(where, key, f"expected a string, got {type(value).__name__} {value!r}")
    return value


def _positive_int(entry: Mapping[str, Any], where: str, key: str) -> int | None:
    value = entry.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise _fail(where, key, f"expected a positive integer, got {value!r}")
    return value


def _resolve_key(
    entry: Mapping[str, Any], where: str, kind: str, env: Mapping[str, str]
) -> str | None:
    key = _string(entry, where, "api_key")
    if key:
        return key
    env_name = _string(entry, where, "api_key_env")
    if env_name:
        value = env.get(env_name)
        if not value:
            raise _fail(where, "api_key_env", f"environment variable {env_name} is not set")
        return value
    default_env = KEY_ENV_VARS.get(kind)
    return env.get(default_env) if default_env else None


def parse_provider(
    entry: Any, index: int, env: Mapping[str, str], work_dir: str | None = None
) -> ProviderSpec:
    where = f"providers[{index}]"
    if not isinstance(entry, Mapping):
        raise ConfigError(f"{where}: expected an object, got {type(entry).__name__}")
    unknown = sorted(set(entry) - set(PROVIDER_FIELDS))
    if unknown:
        raise _fail(where, unknown[0], f"unknown key (known: {', '.join(PROVIDER_FIELDS)})")
    kind = _string(entry, where, "kind", required=True)
    if kind not in PROVIDER_KINDS:
        raise _fail(
            where, "kind", f"unknown provider kind {kind!r} (known: {', '.join(PROVIDER_KINDS)})"
        )
    name = _string(entry, where, "name") or kind
    stream = entry.get("stream", True)
    if not isinstance(stream, bool):
        raise _fail(where, "stream", f"expected true or false, got {stream!r}")
    headers = entry.get("headers") or {}
    if not isinstance(headers, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in headers.items()
    ):
        raise _fail(where, "headers", "expected an object of string values")
    spec = ProviderSpec(
        name=name,
        kind=kind,
        model=_string(entry, where, "model", required=kind != "replay") or "replay",
        where=where,
        timeout_ms=_positive_int(entry, where, "timeout_ms"),
        headers=dict(headers),
        stream=stream,
        max_tokens=_positive_int(entry, where, "max_tokens"),
    )
    if kind == "replay":
        path = _string(entry, where, "path", required=True)
        if work_dir and not os.path.isabs(path):
            path = str(Path(work_dir) / path)
        if not os.path.isfile(path):
            raise _fail(where, "path", f"replay file not found: {path}")
        spec.path = path
        return spec
    base_url = _string(entry, where, "base_url") or DEFAULT_BASE_URLS[kind]
    if not base_url.startswith(("http://", "https://")):
        raise _fail(where, "base_url", f"expected an http:// or https:// URL, got {base_url!r}")
    spec.base_url = base_url.rstrip("/")
    spec.api_key = _resolve_key(entry, where, kind, env)
    required_host = KEY_REQUIRED_HOSTS.get(kind)
    if not spec.api_key and required_host and host_of(spec.base_url) == required_host:
        raise _fail(
            where,
            "api_key",
            f"{spec.base_url} needs an API key: set {KEY_ENV_VARS[kind]} or {where}.api_key_env",
        )
    return spec


def default_provider(env: Mapping[str, str]) -> ProviderSpec:
    """The provider used when the config names none (see the module docstring)."""
    kind = env.get("LICH_PROVIDER_KIND", "").strip()
    base_url = env.get("LICH_BASE_URL", "").strip()
    model = env.get("LICH_MODEL", "").strip()
    fell_back = False
    if kind and kind not in ("openai_compat", "anthropic", "ollama"):
        raise ConfigError(
            f"LICH_PROVIDER_KIND: expected openai_compat, anthropic or ollama, got {kind!r}"
        )
    if not kind:
        if base_url:
            kind = "openai_compat"
        elif env.get("OPENAI_API_KEY"):
            kind = "openai_compat"
        elif env.get("ANTHROPIC_API_KEY"):
            kind = "anthropic"
        else:
            kind = "ollama"
            fell_back = True
    entry: dict[str, Any] = {
        "name": "default",
        "kind": kind,
        "model": model or DEFAULT_MODELS[kind],
    }
    if base_url:
        entry["base_url"] = base_url
    try:
        spec = parse_provider(entry, 0, env)
    except ConfigError as err:
        # The entry came from the environment, so name the variables rather than providers[0].
        message = str(err).split(": ", 1)[-1].replace(" or providers[0].api_key_env", "")
        raise ConfigError(f"default provider ({kind} from the environment): {message}") from None
    spec.where = "environment"
    spec.from_env = True
    spec.no_key_fallback = fell_back
    return spec


def provider_specs(
    config: Mapping[str, Any], env: Mapping[str, str] | None = None
) -> list[ProviderSpec]:
    env = os.environ if env is None else env
    settings = settings_of(config)
    entries = settings.providers
    if not isinstance(entries, list):
        raise ConfigError("providers: expected a list of provider objects")
    work_dir = settings.work_dir
    specs: list[ProviderSpec] = []
    seen: set[str] = set()
    for index, entry in enumerate(entries):
        spec = parse_provider(entry, index, env, work_dir)
        if spec.name in seen:
            raise ConfigError(f"providers[{index}].name: duplicate provider name {spec.name!r}")
        seen.add(spec.name)
        specs.append(spec)
    return specs


def role_specs(
    config: Mapping[str, Any], role: str = "chat", env: Mapping[str, str] | None = None
) -> list[ProviderSpec]:
    """The ordered providers for `role`."""
    env = os.environ if env is None else env
    specs = provider_specs(config, env)
    roles = settings_of(config).models
    if not isinstance(roles, Mapping):
        raise ConfigError('models: expected an object like {"chat": [names], "compress": [names]}')
    if not specs:
        dropped = _dropped_provider_entries(config)
        if dropped:
            # The user configured providers and every one was broken: the default provider
            # would send their prompts somewhere they did not choose.
            raise ConfigError(
                f"providers: every configured provider entry was dropped ({dropped}); fix the "
                "entry or remove it to use the default provider"
            )
        if any(roles.get(r) for r in roles):
            raise ConfigError(
                f"models: names providers but no providers are configured (roles: {', '.join(roles)})"
            )
        return [default_provider(env)]
    wanted = roles.get(role)
    if not wanted and role != "chat":
        return role_specs(config, "chat", env)
    if not wanted:
        return specs
    if isinstance(wanted, str):
        wanted = [wanted]
    if not isinstance(wanted, list):
        raise ConfigError(f"models.{role}: expected a list of provider names")
    by_name = {spec.name: spec for spec in specs}
    chain: list[ProviderSpec] = []
    for index, name in enumerate(wanted):
        if not isinstance(name, str):
            raise ConfigError(f"models.{role}[{index}]: expected a provider name, got {name!r}")
        if name not in by_name:
            raise ConfigError(
                f"models.{role}[{index}]: unknown provider {name!r} (configured: {', '.join(by_name)})"
            )
        chain.append(by_name[name])
    return chain


def _dropped_provider_entries(config: Mapping[str, Any]) -> str:
    """The config problems (lich_core.config.ConfigProblem) of provider entries from a source
    that counts (not an untrusted workspace file, whose providers are ignored anyway)."""
    trust = getattr(config, "trust", None)
    ignored_source = (
        str(trust.config_path)
        if trust is not None and not getattr(trust, "trusted", False)
        else None
    )
    texts = [
        problem.text()
        for problem in getattr(config, "problems", ())
        if problem.path.startswith("providers") and problem.source != ignored_source
    ]
    return "; ".join(texts)


def build_provider(spec: ProviderSpec) -> Model:
    if spec.kind == "replay":
        return ReplayModel(spec.path, name=spec.name, model=spec.model)
    hint_key = (
        default_provider_hint() if spec.from_env else f"set {spec.where}.base_url or LICH_BASE_URL"
    )
    key_env = KEY_ENV_VARS.get(spec.kind, "api_key")
    auth_hint = (
        f"check the API key ({key_env})"
        if spec.from_env
        else f"check the API key ({spec.where}.api_key_env or {key_env})"
    )
    connect_hint = f"is the server running? {hint_key}"
    if spec.kind == "ollama":
        connect_hint = f"is Ollama running (`ollama serve`)? {hint_key}"
    if spec.no_key_fallback:
        connect_hint = no_key_fallback_hint()
    return HTTP_CLASSES[spec.kind](
        name=spec.name,
        model=spec.model,
        base_url=spec.base_url,
        api_key=spec.api_key,
        headers=spec.headers,
        timeout_ms=spec.timeout_ms,
        stream=spec.stream,
        max_tokens=spec.max_tokens,
        connect_hint=connect_hint,
        auth_hint=auth_hint,
    )


def build_model(
    config: Mapping[str, Any], role: str = "chat", *, env: Mapping[str, str] | None = None
) -> Model:
    """The Model (a ProviderChain, so retries and failover apply) for `role`."""
    return ProviderChain([build_provider(spec) for spec in role_specs(config, role, env)])


def chosen_model(
    config: Mapping[str, Any], name: str, *, env: Mapping[str, str] | None = None
) -> Model:
    """The configured provider `name` alone, as a chain (retries apply): the model a user picked
    for one turn. ConfigError when no provider has that name."""
    specs = provider_specs(config, env)
    for spec in specs:
        if spec.name == name:
            return ProviderChain([build_provider(spec)])
    configured = ", ".join(spec.name for spec in specs) or "none"
    raise ConfigError(
        f"unknown_model: no configured provider is named {name!r} (configured: {configured})"
    )


def describe_model(
    config: Mapping[str, Any], role: str = "chat", *, env: Mapping[str, str] | None = None
) -> str:
    """Short "kind model @ url" text for status displays; never raises."""
    try:
        specs = role_specs(config, role, env)
    except ConfigError as err:
        return f"misconfigured: {err}"
    return ", then ".join(spec.describe() for spec in specs)
