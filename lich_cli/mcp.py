"""What `lich mcp list|add|enable|disable|remove` does to the configuration (lich_cli/agent.py
parses the arguments and prints; everything that reads or rewrites a file is here).

The edits go to the USER config file only (lich_core.config.user_config_path()): the workspace's
`.lich/config.json` belongs to the repository and is never written. An edit keeps the rest of the
file as it is (keys, their order, unknown keys), writes through a temp file and a rename in the
same folder (a reader sees the old file or the new one, never half of one), keeps the file's
permissions (0600 for a new file), follows a symlinked config (dotfile managers) and refuses to
rewrite a file with `//` comments, which a JSON rewrite would drop.

Entries are checked with the loader's own rule (lich_core.config.validate_value("mcp_servers", ...), i.e.
lich_core/mcp/spec.py's v_mcp_servers), and `add` refuses what the core would refuse to start
(spec.refusal: package runners, shell commands, plain http off loopback) instead of writing a
server that never runs.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import stat
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lich_core.config import (
    Config,
    mask_secrets,
    read_config_file,
    strip_json_comments,
    validate_value,
)
from lich_core.errors import ConfigError

MCP_KEY = "mcp_servers"
SERVER_NAME_RE = re.compile(r"[a-z0-9_]+")
NEW_FILE_MODE = 0o600  # the user config may hold API keys

EXIT_FAILED = 1
EXIT_USAGE = 2


class McpCliError(Exception):
    """One line for stderr and the exit status (1: the edit failed, 2: bad usage)."""

    def __init__(self, message: str, exit_code: int = EXIT_FAILED) -> None:
        super().__init__(message)
        self.message = message
        self.exit_code = exit_code


# --- names and entries ---


def check_server_name(name: str) -> None:
    if SERVER_NAME_RE.fullmatch(name):
        return
    suggestion = re.sub(r"_+", "_", re.sub(r"[^a-z0-9_]", "_", name.lower())).strip("_")
    hint = f" (e.g. {suggestion!r})" if suggestion and SERVER_NAME_RE.fullmatch(suggestion) else ""
    raise McpCliError(
        f"bad MCP server name {name!r}: use lowercase letters, digits and _ only{hint}", EXIT_USAGE
    )


def parse_pairs(
    values: Iterable[str], flag: str, *, left: str = "NAME", right: str = "VALUE"
) -> dict[str, str]:
    """`K=V` flag values as a dict; a value without `=` or with an empty left side is bad usage."""
    pairs: dict[str, str] = {}
    for raw in values:
        key, sep, value = raw.partition("=")
        if not sep or not key.strip():
            raise McpCliError(f"{flag} {raw!r}: expected {left}={right}", EXIT_USAGE)
        pairs[key.strip()] = value
    return pairs


def build_entry(
    *,
    command: str | None = None,
    args: list[str] | None = None,
    env: Mapping[str, str] | None = None,
    cwd: str | None = None,
    allow_runner: bool = False,
    url: str | None = None,
    headers_env: Mapping[str, str] | None = None,
    enabled: bool = True,
) -> dict[str, Any]:
    """The config entry for one server: stdio (`command`) or HTTP (`url`), exactly one of them."""
    if (command is None) == (url is None):
        raise McpCliError(
            "give exactly one of --command (a local program) or --url (an HTTP server)", EXIT_USAGE
        )
    if command is not None:
        if headers_env:
            raise McpCliError(
                "--header-env is for --url servers; a --command server gets --env", EXIT_USAGE
            )
        entry: dict[str, Any] = {
            "enabled": enabled,
            "command": command,
            "args": list(args or []),
            "env": dict(env or {}),
        }
        if cwd is not None:
            entry["cwd"] = cwd
        if allow_runner:
            entry["allow_runner"] = True
        return entry
    if args or env or cwd is not None or allow_runner:
        raise McpCliError(
            "--arg, --env, --cwd and --allow-runner are for --command servers", EXIT_USAGE
        )
    entry = {"enabled": enabled, "url": url}
    if headers_env:
        entry["headers_env"] = dict(headers_env)
    return entry


def transport_of(entry: Mapping[str, Any]) -> str:
    return "http" if "url" in entry else "stdio"


def target_of(entry: Mapping[str, Any]) -> str:
    """The command line (shell-quoted) or the URL."""
    if "url" in entry:
        return str(entry.get("url"))
    args = entry.get("args")
    words = [str(arg) for arg in args] if isinstance(args, list) else []
    line = shlex.join([str(entry.get("command", "")), *words])
    return f"{line} (in {entry['cwd']})" if isinstance(entry.get("cwd"), str) else line


# --- validation: the loader's rule, and the refusal rule the core applies before starting a server ---


def validate_entry(name: str, entry: Any, source: str) -> None:
    """Raise ConfigError when the loader would refuse `{name: entry}` (the message names the key)."""
    try:
        validate_value(MCP_KEY, {name: entry})
    except ConfigError as err:
        raise ConfigError(f"{err} (in {source})") from None


def refusal_of(name: str, entry: Any) -> str | None:
    """`mcp_refused: <name>: <reason>` when lich would refuse to start or connect to this (valid)
    entry (package runners, shell commands, plain http off loopback), else None."""
    from lich_core.mcp.spec import refusal, specs_from_config

    try:
        (spec,) = specs_from_config({name: entry})
    except (ConfigError, ValueError):
        return None  # not a valid entry: validation says why
    return refusal(spec)


# --- the user config file ---


class UserConfig:
    """The user config file as read: its text (None when missing), data and MCP servers."""

    def __init__(self, path: Path) -> None:
        self.path = path
        try:
            self.text: str | None = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            self.text = None
        except OSError as err:
            raise McpCliError(f"{path}: cannot read ({err.strerror})") from err
        self.data: dict[str, Any] = read_config_file(path) if self.text is not None else {}
        servers = self.data.get(MCP_KEY)
        if servers is not None and not isinstance(servers, dict):
            raise ConfigError(f"{MCP_KEY}: expected an object of servers by name (in {path})")
        self.servers: dict[str, Any] = dict(servers or {})

    @property
    def has_comments(self) -> bool:
        return self.text is not None and strip_json_comments(self.text) != self.text

    def save(self, servers: dict[str, Any], *, refusal_hint: str) -> None:
        """Write the file with `servers` as its mcp_servers (every other key as it was)."""
        if self.has_comments:
            raise McpCliError(
                f"{self.path} has // comments, which rewriting it would drop; nothing written: "
                f"{refusal_hint} by hand, or remove the comments and run the command again"
            )
        data = dict(self.data)
        data[MCP_KEY] = servers
        write_atomic(
            self.path, json.dumps(data, indent=2, ensure_ascii=False) + "\n", expected=self.text
        )


def write_atomic(path: Path, text: str, *, expected: str | None) -> None:
    """Replace `path` with `text` through a temp file and a rename, keeping its permissions.

    `expected` is the content the edit started from (None: no file); if the file changed in the
    meantime nothing is written, so a concurrent edit is never lost silently.
    """
    target = Path(os.path.realpath(path))  # a symlinked config stays a symlink
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            mode = stat.S_IMODE(os.stat(target).st_mode)
        except FileNotFoundError:
            mode = NEW_FILE_MODE
        fd, temp_name = tempfile.mkstemp(
            prefix=f".{target.name}.", suffix=".tmp", dir=target.parent
        )
    except OSError as err:
        raise McpCliError(f"{path}: cannot write ({err.strerror})") from err
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temp_name, mode)
        if _current_text(target) != expected:
            raise McpCliError(
                f"{path} changed while lich was editing it; nothing written, run the command again"
            )
        os.replace(temp_name, target)
    except BaseException as err:
        try:
            os.unlink(temp_name)
        except OSError:
            pass
        if isinstance(err, OSError):
            raise McpCliError(f"{path}: cannot write ({err.strerror or err})") from err
        raise


def _current_text(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None


# --- the commands' edits ---


@dataclass(frozen=True)
class Outcome:
    """What a command did: a line for stdout, and maybe a warning for stderr."""

    message: str
    warning: str | None = None


ALLOW_RUNNER_HINT = "(or set allow_runner: true on this server)"


def add_server(path: Path, name: str, entry: dict[str, Any], *, force: bool = False) -> Outcome:
    check_server_name(name)
    try:
        validate_entry(name, entry, "the new entry")
    except ConfigError as err:
        raise McpCliError(str(err), EXIT_USAGE) from None
    refused = refusal_of(name, entry)
    if refused:
        # lich would never start it: say so now rather than write a server that never runs.
        raise McpCliError(
            f"{refused.replace(ALLOW_RUNNER_HINT, '(or add --allow-runner)')}; nothing written"
        )
    user = UserConfig(path)
    replaced = name in user.servers
    if replaced and not force:
        raise McpCliError(
            f"MCP server {name!r} already exists in {path}; use --force to replace it, or `lich mcp remove {name}`"
        )
    servers = dict(user.servers)
    servers[name] = entry
    snippet = json.dumps({name: entry}, ensure_ascii=False)[1:-1]
    user.save(servers, refusal_hint=f'add {snippet} to its "{MCP_KEY}"')
    state = "" if entry.get("enabled", True) else ", disabled"
    what = "replaced" if replaced else "added"
    return Outcome(
        f"lich: {what} MCP server {name!r} ({transport_of(entry)}: {target_of(entry)}{state}) in {path}"
    )


def set_server_enabled(
    path: Path, name: str, enabled: bool, *, workspace_file: Path | None = None
) -> Outcome:
    user, entry = _existing(path, name, workspace_file)
    word = "enabled" if enabled else "disabled"
    refused = refusal_of(name, entry) if enabled else None
    warning = f"lich: warning: {refused}: lich will not start it" if refused else None
    if entry.get("enabled", True) is enabled and "enabled" in entry:
        return Outcome(f"lich: MCP server {name!r} is already {word} in {path}", warning)
    changed = {**entry, "enabled": enabled}
    try:
        validate_entry(name, changed, str(path))
    except ConfigError as err:
        raise McpCliError(f"{err}; fix the entry by hand") from None
    servers = dict(user.servers)
    servers[name] = changed
    user.save(
        servers, refusal_hint=f'set "enabled": {json.dumps(enabled)} in its "{MCP_KEY}.{name}"'
    )
    return Outcome(f"lich: {word} MCP server {name!r} in {path}", warning)


def remove_server(path: Path, name: str, *, workspace_file: Path | None = None) -> Outcome:
    user, _ = _existing(path, name, workspace_file)
    servers = {key: value for key, value in user.servers.items() if key != name}
    user.save(servers, refusal_hint=f'delete "{name}" from its "{MCP_KEY}"')
    return Outcome(f"lich: removed MCP server {name!r} from {path}")


def _existing(
    path: Path, name: str, workspace_file: Path | None
) -> tuple[UserConfig, dict[str, Any]]:
    check_server_name(name)
    user = UserConfig(path)
    entry = user.servers.get(name)
    if isinstance(entry, dict):
        return user, entry
    if entry is not None:
        raise McpCliError(f"{MCP_KEY}.{name}: expected an object (in {path}); fix it by hand")
    if workspace_file is not None and name in _servers_in(workspace_file):
        raise McpCliError(
            f"MCP server {name!r} is defined only in the workspace file {workspace_file}, not in your user "
            f"config {path}; `lich mcp` edits only the user config: edit that file instead"
        )
    known = ", ".join(sorted(user.servers)) or "none"
    raise McpCliError(f"no MCP server {name!r} in {path} (configured there: {known})")


def _servers_in(path: Path) -> dict[str, Any]:
    """A config file's mcp_servers, or nothing when the file is missing, broken or has none."""
    try:
        servers = read_config_file(path).get(MCP_KEY)
    except ConfigError:
        return {}
    return servers if isinstance(servers, dict) else {}


# --- lich mcp list ---


def server_rows(config: Config, candidates: list[tuple[str, Path]]) -> list[dict[str, Any]]:
    """One row per server of the effective config: name, transport, enabled, refused (the
    `mcp_refused:` reason lich would not start it for, or None), target, source, config.

    `candidates` are the files that may define servers, in the loader's precedence order (an
    explicit --config file, the workspace file when trusted, the user file): a server's source is
    the first that names it, else the key's source in `config.sources`.
    """
    servers = config.get(MCP_KEY) or {}
    if not isinstance(servers, dict):
        return []
    files = [(label, _servers_in(path)) for label, path in candidates]
    fallback = config.sources.get(MCP_KEY, "?")
    rows = []
    for name in sorted(servers):
        entry = servers[name] if isinstance(servers[name], dict) else {}
        source = next((label for label, defined in files if name in defined), fallback)
        rows.append(
            {
                "name": name,
                "transport": transport_of(entry),
                "enabled": entry.get("enabled", True) is not False,
                "refused": refusal_of(name, entry),
                "target": target_of(entry),
                "source": source,
                "config": masked_entry(entry),
            }
        )
    return rows


def masked_entry(entry: Mapping[str, Any]) -> dict[str, Any]:
    """The entry for display: secret-looking `env` values masked; `headers_env` names variables, kept."""
    return {
        key: value if key == "headers_env" else mask_secrets({key: value})[key]
        for key, value in entry.items()
    }


def ignored_servers(config: Config) -> list[dict[str, str]]:
    """What an untrusted (or refused) workspace file asked for under mcp_servers and did not get."""
    return [item.to_json() for item in config.trust.ignored if item.key == MCP_KEY]


def _state(row: Mapping[str, Any]) -> str:
    if not row["enabled"]:
        return "disabled"
    return "refused" if row["refused"] else "enabled"


def render_rows(rows: list[dict[str, Any]]) -> str:
    table = [("NAME", "TRANSPORT", "STATE", "SOURCE", "COMMAND / URL")]
    table += [
        (row["name"], row["transport"], _state(row), row["source"], row["target"]) for row in rows
    ]
    widths = [max(len(line[column]) for line in table) for column in range(4)]
    return "\n".join(
        (
            "  ".join(cell.ljust(width) for cell, width in zip(line[:4], widths, strict=True))
            + "  "
            + line[4]
        ).rstrip()
        for line in table
    )
