"""The trust side of each key: what a workspace file (`.lich/config.json`) may do before the user
trusts it, how it may narrow a trusted value, and what a key it may not set would have done.

Every key declares one side (docs/trust.md, "What an untrusted workspace file may do"):
  SIDE_ANY     harmless either way: an untrusted workspace file sets it as it likes;
  SIDE_NARROW  an untrusted workspace file may only narrow the trusted value (KeySpec.narrow says
               how; a value that would loosen is ignored and reported);
  SIDE_USER    runs a program, loads code, sends data somewhere or widens what tools touch: ignored
               from an untrusted workspace file (KeySpec.effects says what it would do);
  SIDE_NEVER   never read from a workspace file, trusted or not.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from lich_core.tools.types import CAPABILITIES

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


def next_edit_effects(value: Any, root: Path) -> list[str]:
    return [
        "send the text around your cursor and your recent edits, as you type, to "
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
