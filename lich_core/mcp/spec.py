"""MCP server entries: config validation, the trust effects, and the refusal rules.

Config shape (`mcp_servers`, a SIDE_USER key: a workspace file counts only once trusted)::

    "mcp_servers": {
      "files": {"command": "python", "args": ["-m", "files_server"], "env": {"ROOT": "."}, "cwd": "tools"},
      "search": {"url": "https://mcp.example.org/mcp", "headers_env": {"Authorization": "SEARCH_MCP_AUTH"}},
      "off": {"enabled": false, "command": "my-server"}
    }

Names are snake_case (`[a-z0-9_]+`, at most MAX_SERVER_NAME chars): they become part of the tool
names (`mcp_<server>_<tool>`). A stdio entry has `command` (no shell: the program and `args` are
exec'd as they are), `args`, `env` (added to the tools' environment) and `cwd` (relative to the
work dir); an HTTP entry (streamable HTTP) has `url` and `headers_env` ({header: ENV_VAR}, read
when connecting). Both take `enabled` (default true) and `allow_runner` (default false).

Validation (`v_mcp_servers`) rejects malformed entries with a ConfigError naming the key path.
`refusal(spec)` is the policy on well-formed entries: a command that downloads and runs code
(package runners, `curl | sh`), that hides a shell (`bash -c`, `python -c`, metacharacters), or a
plain-http URL off the loopback interface is refused with an `mcp_refused:` reason; stdio
refusals are lifted by `allow_runner: true` on that server, the URL rule never is.
"""

from __future__ import annotations

import ipaddress
import os
import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from lich_core.errors import ConfigError, did_you_mean

REFUSED_PREFIX = "mcp_refused"
STDIO = "stdio"
HTTP = "http"

SERVER_NAME_RE = re.compile(r"^[a-z0-9_]+$")
# Room for `mcp_<server>_` and a readable tool name inside the 64-character tool name limit.
MAX_SERVER_NAME = 32
ENV_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# An HTTP header name (RFC 9110 token).
HEADER_NAME_RE = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")

COMMON_FIELDS = ("enabled", "allow_runner")
STDIO_FIELDS = ("command", "args", "env", "cwd")
HTTP_FIELDS = ("url", "headers_env")
KNOWN_FIELDS = COMMON_FIELDS + STDIO_FIELDS + HTTP_FIELDS


@dataclass(frozen=True)
class McpServerSpec:
    """One validated `mcp_servers` entry."""

    name: str
    transport: str  # STDIO or HTTP
    enabled: bool = True
    allow_runner: bool = False
    command: str = ""
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    cwd: str | None = None
    url: str = ""
    headers_env: Mapping[str, str] = field(default_factory=dict)

    def command_line(self) -> str:
        return shlex.join([self.command, *self.args])

    def where(self) -> str:
        """What starting this server means, for status lines and effects."""
        return self.command_line() if self.transport == STDIO else self.url


# --- validation ---


def _type_name(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def _string(path: str, value: Any, *, non_empty: bool = False) -> str:
    if not isinstance(value, str):
        raise ConfigError(f"{path}: expected a string, got {_type_name(value)} {value!r}")
    if non_empty and not value.strip():
        raise ConfigError(f"{path}: expected a non-empty string")
    return value


def _bool(path: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise ConfigError(f"{path}: expected true or false, got {_type_name(value)} {value!r}")
    return value


def _string_map(
    path: str, value: Any, key_re: re.Pattern[str], key_what: str, value_is_env: bool
) -> dict[str, str]:
    if not isinstance(value, dict):
        raise ConfigError(f"{path}: expected an object, got {_type_name(value)}")
    checked: dict[str, str] = {}
    for key, item in value.items():
        if not isinstance(key, str) or not key_re.match(key):
            raise ConfigError(f"{path}: {key!r} is not a valid {key_what}")
        text = _string(f"{path}.{key}", item)
        if value_is_env and not ENV_NAME_RE.match(text):
            raise ConfigError(f"{path}.{key}: expected an environment variable name, got {text!r}")
        checked[key] = text
    return checked


def _http_url(path: str, value: Any) -> str:
    url = _string(path, value, non_empty=True).strip()
    try:
        parts = urlsplit(url)
        valid = parts.scheme in ("http", "https") and bool(parts.hostname)
        parts.port  # noqa: B018 - raises ValueError on a bad port
    except ValueError:
        valid = False
    if not valid:
        raise ConfigError(f"{path}: expected an http(s) URL with a host, got {url!r}")
    return url


def validate_entry(path: str, value: Any) -> dict[str, Any]:
    """One server entry, normalised (defaults filled in); ConfigError naming `path.<field>`."""
    if not isinstance(value, dict):
        raise ConfigError(f"{path}: expected an object, got {_type_name(value)}")
    for name in value:
        if name not in KNOWN_FIELDS:
            raise ConfigError(
                f"{path}.{name}: unknown field{did_you_mean(name, KNOWN_FIELDS)} "
                f"(known: {', '.join(KNOWN_FIELDS)})"
            )
    has_command = "command" in value
    has_url = "url" in value
    if has_command == has_url:
        what = "both a command and a url" if has_command else "neither a command nor a url"
        raise ConfigError(
            f"{path}: expected a command (stdio server) or a url (streamable HTTP server), got {what}"
        )
    checked: dict[str, Any] = {
        "enabled": _bool(f"{path}.enabled", value.get("enabled", True)),
        "allow_runner": _bool(f"{path}.allow_runner", value.get("allow_runner", False)),
    }
    if has_command:
        for name in HTTP_FIELDS:
            if name in value:
                raise ConfigError(
                    f"{path}.{name}: only for an HTTP server (url), this one has a command"
                )
        checked["command"] = _string(f"{path}.command", value["command"], non_empty=True)
        args = value.get("args", [])
        if not isinstance(args, list):
            raise ConfigError(f"{path}.args: expected a list of strings, got {_type_name(args)}")
        checked["args"] = [_string(f"{path}.args[{index}]", arg) for index, arg in enumerate(args)]
        checked["env"] = _string_map(
            f"{path}.env", value.get("env", {}), ENV_NAME_RE, "environment variable name", False
        )
        if value.get("cwd") is not None:
            checked["cwd"] = _string(f"{path}.cwd", value["cwd"], non_empty=True)
    else:
        for name in STDIO_FIELDS:
            if name in value:
                raise ConfigError(
                    f"{path}.{name}: only for a stdio server (command), this one has a url"
                )
        checked["url"] = _http_url(f"{path}.url", value["url"])
        checked["headers_env"] = _string_map(
            f"{path}.headers_env",
            value.get("headers_env", {}),
            HEADER_NAME_RE,
            "HTTP header name",
            True,
        )
    return checked


def validate_server_name(key: str, name: Any) -> None:
    """A server's name becomes part of its tools' names: snake_case, short."""
    if not isinstance(name, str) or not SERVER_NAME_RE.match(name):
        raise ConfigError(f"{key}: server name {name!r} must be snake_case ([a-z0-9_]+)")
    if len(name) > MAX_SERVER_NAME:
        raise ConfigError(
            f"{key}: server name {name!r} is longer than {MAX_SERVER_NAME} characters"
        )


def v_mcp_servers(key: str, value: Any) -> dict[str, dict[str, Any]]:
    """A whole `mcp_servers` value, every entry valid or a ConfigError (the config loader checks
    entries one by one instead, with validate_server_name and validate_entry)."""
    if not isinstance(value, dict):
        raise ConfigError(
            f"{key}: expected an object of server entries ({{name: {{command, args}} | {{url}}}}), got {_type_name(value)}"
        )
    checked: dict[str, dict[str, Any]] = {}
    for name, entry in value.items():
        validate_server_name(key, name)
        checked[name] = validate_entry(f"{key}.{name}", entry)
    return checked


def specs_from_config(value: Any) -> list[McpServerSpec]:
    """The servers of a (validated) `mcp_servers` value, in config order; {} or None: none."""
    if not value:
        return []
    specs = []
    for name, entry in v_mcp_servers("mcp_servers", value).items():
        common = {"name": name, "enabled": entry["enabled"], "allow_runner": entry["allow_runner"]}
        if "command" in entry:
            specs.append(
                McpServerSpec(
                    transport=STDIO,
                    command=entry["command"],
                    args=tuple(entry["args"]),
                    env=dict(entry["env"]),
                    cwd=entry.get("cwd"),
                    **common,
                )
            )
        else:
            specs.append(
                McpServerSpec(
                    transport=HTTP,
                    url=entry["url"],
                    headers_env=dict(entry["headers_env"]),
                    **common,
                )
            )
    return specs


def mcp_effects(value: Any, root: Path) -> list[str]:
    """What an untrusted workspace's `mcp_servers` would make lich do (lich_core.config effects)."""
    effects = []
    for spec in specs_from_config(value):
        if spec.transport == STDIO:
            what = f"start MCP server {spec.name}: {spec.command_line()}"
        else:
            what = f"connect to MCP server {spec.name} at {spec.url}"
        effects.append(what if spec.enabled else f"{what} (disabled)")
    return effects


# --- refusal rules ---

SHELLS = frozenset(
    {"sh", "bash", "zsh", "dash", "ksh", "mksh", "ash", "fish", "csh", "tcsh", "busybox"}
)
# Programs that fetch a package and run it: a config line that runs whatever the registry serves.
RUNNERS = frozenset({"npx", "pnpx", "bunx", "uvx"})
# program -> sub-command words (the first arguments) that fetch and run a package.
RUNNER_SUBCOMMANDS: Mapping[str, tuple[tuple[str, ...], ...]] = {
    "pnpm": (("dlx",),),
    "yarn": (("dlx",),),
    "npm": (("exec",), ("x",)),
    "bun": (("x",),),
    "uv": (("tool", "run"), ("tool", "uvx")),
    "pipx": (("run",),),
}


@dataclass(frozen=True)
class Interpreter:
    """How an interpreter's command line can carry code: `eval_short` letters and `eval_long`
    options take code; `value_short` letters and `value_long` options take a value (the rest of the
    cluster, or the next argument), which is skipped. The first other argument is the script."""

    eval_short: str
    eval_long: frozenset[str] = frozenset()
    value_short: str = ""
    value_long: frozenset[str] = frozenset()


INTERPRETERS: Mapping[str, Interpreter] = {
    "python": Interpreter("c", value_short="WXQ"),
    "node": Interpreter(
        "ep",
        frozenset({"--eval", "--print"}),
        "rC",
        frozenset(
            {
                "--require",
                "--import",
                "--loader",
                "--experimental-loader",
                "--conditions",
                "--env-file",
                "--title",
            }
        ),
    ),
    "bun": Interpreter(
        "ep", frozenset({"--eval", "--print"}), "r", frozenset({"--preload", "--cwd", "--env-file"})
    ),
    "perl": Interpreter("eE", value_short="IMmdDxliC0"),
    "ruby": Interpreter("e", value_short="IrCEFKTWx"),
    "php": Interpreter("r", value_short="cdz"),
    "lua": Interpreter("e", value_short="l"),
}
SHELL_METACHARACTERS = frozenset(";|&$`<>\n\r")
DOWNLOAD_PIPE_RE = re.compile(
    r"\b(?:curl|wget)\b[^|]*\|\s*(?:sudo\s+)?(?:\S*/)?(?:ba|z|da|k|mk|fi)?sh\b"
)
ENV_ASSIGNMENT_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
URL_RE = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")
REMOTE_SPECIFIER_RE = re.compile(r"^(?:https?://|npm:|jsr:)")
LOOPBACK_NAMES = frozenset({"localhost"})


def _program(command: str) -> str:
    """The program's name: basename, without `.exe`, interpreter versions folded (`python3.12`)."""
    name = os.path.basename(command.strip()).lower().removesuffix(".exe")
    if re.match(r"^(?:python|pypy)[0-9.]*$", name):
        return "python"
    if name == "nodejs":
        return "node"
    return name


def _interpreter_eval(interpreter: Interpreter, args: tuple[str, ...]) -> str | None:
    """The argument that makes the interpreter run code from the command line, if any."""
    index = 0
    while index < len(args):
        arg = args[index]
        index += 1
        if arg == "--" or not arg.startswith("-") or arg == "-":
            return None  # the script (or stdin): what follows are its arguments
        if arg.startswith("--"):
            option = arg.split("=", 1)[0]
            if option in interpreter.eval_long:
                return arg
            if option in interpreter.value_long and "=" not in arg:
                index += 1
            continue
        if arg == "-m" and interpreter is INTERPRETERS["python"]:
            return None  # a module: the rest are its arguments
        for position, letter in enumerate(arg[1:], start=1):
            if letter in interpreter.eval_short:
                return arg
            if letter in interpreter.value_short:
                if position == len(arg) - 1:
                    index += 1  # the value is the next argument
                break
    return None


def _shell_runs_string(program: str, args: tuple[str, ...]) -> bool:
    """`bash -c ...`, `sh -lc ...`, `busybox sh -c ...`, `fish --command ...`."""
    if program == "busybox":
        if not args or _program(args[0]) not in SHELLS - {"busybox"}:
            return False
        args = args[1:]
    index = 0
    while index < len(args):
        arg = args[index]
        index += 1
        if arg == "--command" or arg.startswith("--command="):
            return True
        if arg in ("-o", "+o", "-O", "+O", "--init-command", "-C"):
            index += 1  # takes a value
            continue
        if re.match(r"^[-+][A-Za-z]*c[A-Za-z]*$", arg):
            return True
        if not arg.startswith(("-", "+")) or arg in ("-", "--"):
            return False  # a script file: what follows are its arguments
    return False


def _runner(program: str, args: tuple[str, ...]) -> str | None:
    if program in RUNNERS:
        return program
    for words in RUNNER_SUBCOMMANDS.get(program, ()):
        if tuple(args[: len(words)]) == words:
            return " ".join((program, *words))
    if (
        program == "deno"
        and args[:1] == ("run",)
        and any(REMOTE_SPECIFIER_RE.match(arg) for arg in args[1:])
    ):
        return "deno run <remote module>"
    if (
        program == "go"
        and args[:1] == ("run",)
        and any("@" in arg and not arg.startswith("-") for arg in args[1:])
    ):
        return "go run <module>@<version>"
    return None


def stdio_refusal(command: str, args: tuple[str, ...]) -> str | None:
    """Why this command line is refused without `allow_runner`, or None."""
    line = " ".join([command, *args])
    if DOWNLOAD_PIPE_RE.search(line):
        return "downloads a script and pipes it into a shell (curl/wget | sh)"
    if URL_RE.match(command.strip()):
        return f"the command is a URL ({command}); name a program installed on this machine"
    bad = sorted(SHELL_METACHARACTERS.intersection(command))
    if bad:
        shown = " ".join(repr(char) for char in bad)
        return f"shell metacharacters in the command ({shown}): servers start without a shell; put arguments in args"
    if ENV_ASSIGNMENT_RE.match(command.strip()):
        return "the command is a variable assignment (FOO=1 cmd); set variables in the entry's env"
    program = _program(command)
    if program == "env":
        return "the command is `env` (env FOO=1 cmd); set variables in the entry's env and name the program"
    runner = _runner(program, args)
    if runner is not None:
        return f"{runner} downloads and runs a package; install the server and name its program"
    if program in SHELLS and _shell_runs_string(program, args):
        return (
            f"{program} -c runs a command string through a shell; name the server's program instead"
        )
    if program in ("cmd", "pwsh", "powershell") and any(
        arg.lower() in ("/c", "/k", "-c", "-command", "-encodedcommand", "-ec") for arg in args
    ):
        return f"{program} runs a command string through a shell; name the server's program instead"
    if program == "deno" and args[:1] == ("eval",):
        return "deno eval runs code given on the command line; point deno run at a local script"
    interpreter = INTERPRETERS.get(program)
    if interpreter is not None:
        flag = _interpreter_eval(interpreter, args)
        if flag is not None:
            return f"{program} {flag} runs code given on the command line; point it at a script or module"
    return None


def http_refusal(url: str) -> str | None:
    parts = urlsplit(url)
    if parts.scheme == "https":
        return None
    host = (parts.hostname or "").lower()
    if host in LOOPBACK_NAMES or host.endswith(".localhost"):
        return None
    try:
        if ipaddress.ip_address(host).is_loopback:
            return None
    except ValueError:
        pass
    return f"plain http to {host or url} is not allowed: use https, or a loopback address (127.0.0.1, ::1, localhost)"


def refusal(spec: McpServerSpec) -> str | None:
    """`mcp_refused: <reason>` when this entry must not be started or connected to, else None.

    Pure: the decision depends on the entry alone. `allow_runner` lifts the stdio rules for its
    own server; the plain-http rule has no opt-out.
    """
    if spec.transport == HTTP:
        reason = http_refusal(spec.url)
    elif spec.allow_runner:
        reason = None
    else:
        reason = stdio_refusal(spec.command, spec.args)
        if reason is not None:
            reason += " (or set allow_runner: true on this server)"
    return f"{REFUSED_PREFIX}: {spec.name}: {reason}" if reason else None
