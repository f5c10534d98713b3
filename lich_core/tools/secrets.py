"""What looks like a secret: variable names, command-line arguments and values.

Shared by env_get (names and values of the environment) and process_list (command lines), so both
mask the same things. The rules err on the side of masking: a hidden non-secret costs the model a
question, a shown secret cannot be taken back.

- names: any of secret, token, password, passwd, passphrase, key, credential, auth, webhook,
  cookie anywhere in the name (any case); or a whole segment (split at `_ - .` and
  camelCase) PAT, PASS, PW, PWD or DSN (so `GITHUB_PAT` and `DB_PASS` are masked, `PATH` and
  `PASSENGER_ENV` are not). `PWD` and `OLDPWD` are the working directory, not a password: PWD
  counts only as the last segment of a longer name (`MYSQL_PWD`, `DB_PWD`).
- arguments: `NAME=value` / `--name=value` / `name:value` with a secret-looking name;
  `--name VALUE` with a secret-looking option; password flags of known programs (`mysql
  -pSECRET`, `sshpass -p SECRET`, `curl -u user:SECRET`, ...); the same inside a shell command
  string (`bash -c "mysql -pSECRET"`).
- values: credentials in URLs (`scheme://user:pw@host`) and well-known token formats (GitHub,
  GitLab, Slack, OpenAI/Anthropic, AWS, Google, npm, PyPI, JWTs, private-key blocks, Slack and
  Discord webhook URLs).

The same rules decide which variables tool processes never get (`scrubbed_env`): the provider
credentials and every variable the config names as holding a key.

Files: SECRET_FILE_PATTERNS names the files that hold secrets (`.env*`, keys, `.netrc`, ...);
`prompt_refusal` says why a file's text may not go into any prompt to a model (completions'
current document and neighbouring snippets, lich.ask's selection context): the tools' read guard
refuses it (outside the root, through a symbolic link or not; the agent's own config), or it is
a secret file.
"""

from __future__ import annotations

import fnmatch
import os
import re
from collections.abc import Iterable, Mapping
from typing import Any

from lich_core.errors import ToolError
from lich_core.settings import settings_of
from lich_core.tools.guard import resolve_file_in

SECRET_WORDS_RE = re.compile(
    r"secret|token|password|passwd|passphrase|key|credential|auth|webhook|cookie", re.IGNORECASE
)
SECRET_SEGMENTS = frozenset({"pat", "pass", "pw", "pwd", "dsn"})
# Segments: runs of capitals (`PAT` in `GITHUB_PAT`), capitalised or lower-case words (`Pat` in
# `githubPat`), digits.
SEGMENT_RE = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")

URL_CREDENTIALS_RE = re.compile(r"(\w[\w+.-]*://[^/\s:@]*):[^/\s@]+@")
SECRET_VALUE_RE = re.compile(
    r"gh[pousr]_[A-Za-z0-9]{20,}"
    r"|github_pat_[A-Za-z0-9_]{20,}"
    r"|glpat-[A-Za-z0-9_-]{20,}"
    r"|xox[abposr]-[A-Za-z0-9-]{10,}"
    r"|sk-[A-Za-z0-9_-]{20,}"
    r"|AKIA[0-9A-Z]{16}"
    r"|AIza[0-9A-Za-z_-]{35}"
    r"|npm_[A-Za-z0-9]{36}"
    r"|pypi-[A-Za-z0-9_-]{40,}"
    r"|eyJ[A-Za-z0-9_-]{10,}\.eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]*"
    r"|-----BEGIN [A-Z ]*PRIVATE KEY-----"
    r"|https://hooks\.slack\.com/\S+"
    r"|https://(?:[a-z]+\.)?discord(?:app)?\.com/api/webhooks/\S+"
)

ASSIGNMENT_RE = re.compile(r"^(-{0,2})([A-Za-z_][\w.-]*)([=:])(.+)$", re.DOTALL)
OPTION_RE = re.compile(r"^--?([A-Za-z_][\w.-]*)$")

# How a program's password flag carries the secret.
ATTACHED = "attached"  # only `-pSECRET`; a bare `-p` prompts and the next word is something else
SEPARATE = "separate"  # `-P SECRET` (and `-PSECRET`)
USERPASS = "userpass"  # `-u user:SECRET` (and `-uuser:SECRET`, `--user=user:SECRET`)
SMB_USERPASS = "smb"  # `-U user%SECRET`

_MYSQL_TOOLS = (
    "mysql mysqldump mysqladmin mysqlimport mysqlshow mysqlcheck mysqlpump mysqlslap mysqlbinlog "
    "mariadb mariadb-dump mariadb-admin mariadb-import mariadb-show mariadb-check mariadb-slap mariadb-binlog"
)
PASSWORD_FLAGS: Mapping[str, Mapping[str, str]] = {
    **{name: {"-p": ATTACHED} for name in _MYSQL_TOOLS.split()},
    "sshpass": {"-p": SEPARATE},
    "redis-cli": {"-a": SEPARATE, "--pass": SEPARATE},
    "zip": {"-P": SEPARATE, "--password": SEPARATE},
    "unzip": {"-P": SEPARATE},
    "7z": {"-p": ATTACHED},
    "7za": {"-p": ATTACHED},
    "7zz": {"-p": ATTACHED},
    "sqlcmd": {"-P": SEPARATE},
    "bcp": {"-P": SEPARATE},
    "curl": {"-u": USERPASS, "--user": USERPASS, "-U": USERPASS, "--proxy-user": USERPASS},
    "smbclient": {"-U": SMB_USERPASS, "--user": SMB_USERPASS},
}


def redacted(text: str) -> str:
    return f"<redacted: {len(text)} chars>"


def is_secret_name(name: str) -> bool:
    """True for a variable, option or field name that looks like it holds a secret."""
    if SECRET_WORDS_RE.search(name):
        return True
    segments = [segment.lower() for segment in SEGMENT_RE.findall(name)]
    for index, segment in enumerate(segments):
        if segment not in SECRET_SEGMENTS:
            continue
        if segment == "pwd" and (len(segments) == 1 or index != len(segments) - 1):
            continue  # `PWD` itself is the working directory; only `X_PWD` is a password
        return True
    return False


def looks_like_secret_value(value: str) -> bool:
    return SECRET_VALUE_RE.search(value) is not None or URL_CREDENTIALS_RE.search(value) is not None


def mask_url_credentials(text: str) -> str:
    """`postgres://user:pw@host` -> `postgres://user:<redacted>@host`."""
    return URL_CREDENTIALS_RE.sub(r"\1:<redacted>@", text)


def mask_value(text: str) -> str:
    """`text` with URL credentials and well-known tokens inside it masked."""
    text = mask_url_credentials(text)
    return SECRET_VALUE_RE.sub(lambda match: redacted(match.group(0)), text)


def _mask_flag_value(value: str, how: str) -> str:
    if how == USERPASS:
        user, colon, secret = value.partition(":")
        return f"{user}:{redacted(secret)}" if colon and secret else value
    if how == SMB_USERPASS:
        user, percent, secret = value.partition("%")
        return f"{user}%{redacted(secret)}" if percent and secret else value
    return redacted(value)


def _program_flag(arg: str, flags: Mapping[str, str]) -> tuple[str | None, str | None]:
    """(masked arg, how to mask the next arg) for a known program's password flag."""
    for flag, how in flags.items():
        if arg == flag:
            return arg, (None if how == ATTACHED else how)
        if flag.startswith("--") and arg.startswith(flag + "="):
            return f"{flag}={_mask_flag_value(arg[len(flag) + 1 :], how)}", None
        if not flag.startswith("--") and arg.startswith(flag) and len(arg) > len(flag):
            return flag + _mask_flag_value(arg[len(flag) :], how), None
    return None, None


def mask_arguments(argv: list[str]) -> list[str]:
    """`argv` with secret-looking arguments masked (one output word per input word)."""
    masked: list[str] = []
    pending: str | None = None  # how to mask this argument, set by the option before it
    flags: Mapping[str, str] = {}
    for arg in argv:
        if pending is not None:
            masked.append(_mask_flag_value(arg, pending))
            pending = None
            continue
        if not arg.startswith("-") and os.path.basename(arg) in PASSWORD_FLAGS:
            flags = PASSWORD_FLAGS[os.path.basename(arg)]  # the program whose flags come next
            masked.append(arg)
            continue
        if arg.startswith("-") and flags:
            shown, pending = _program_flag(arg, flags)
            if shown is not None:
                masked.append(shown)
                continue
        assignment = ASSIGNMENT_RE.match(arg)
        if assignment and is_secret_name(assignment.group(2)):
            dashes, name, separator, value = assignment.groups()
            masked.append(f"{dashes}{name}{separator}{redacted(value)}")
            continue
        option = OPTION_RE.match(arg)
        if option and is_secret_name(option.group(1)):
            pending = "next"
            masked.append(arg)
            continue
        if any(space in arg for space in " \t\n"):
            # A shell command line in one argument (`bash -c "mysql -pX db"`): mask its words.
            parts = re.split(r"(\s+)", arg)
            parts[0::2] = mask_arguments(parts[0::2])
            masked.append("".join(parts))
            continue
        masked.append(mask_value(arg))
    return masked


# --- the environment tools' processes get ---

# Provider credentials never reach tool child processes (terminal, tests, MCP servers): the
# well-known names, anything ending like an API key, every variable a provider entry (or
# `web_search`, `completion` or `next_edit`) names in `api_key_env` (whatever it is called:
# `OPENROUTER_KEY`, `GITHUB_TOKEN`, ...) and every variable an MCP server's `headers_env` reads.
SCRUBBED_ENV_SUFFIXES = ("_API_KEY", "_API_TOKEN", "_ACCESS_TOKEN")
SCRUBBED_ENV_NAMES = frozenset(
    {"OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENROUTER_API_KEY", "LICH_API_KEY"}
)


def configured_key_env_names(config: Mapping[str, Any] | None) -> frozenset[str]:
    """The variable names `providers[*].api_key_env`, `web_search.api_key_env`,
    `completion.api_key_env`, `next_edit.api_key_env` and `mcp_servers.*.headers_env.*` point
    at (ignoring malformed entries)."""
    if not isinstance(config, Mapping):
        return frozenset()
    settings = settings_of(config)
    providers = settings.providers
    entries: list[Any] = list(providers) if isinstance(providers, (list, tuple)) else []
    entries.append(settings.web_search)
    entries.append(settings.completion)
    entries.append(settings.next_edit)
    names = set()
    for entry in entries:
        name = entry.get("api_key_env") if isinstance(entry, Mapping) else None
        if isinstance(name, str) and name.strip():
            names.add(name.strip())
    # MCP servers' `headers_env` values: {header: VARIABLE} (lich_core.mcp.spec).
    servers = settings.mcp_servers
    for server in servers.values() if isinstance(servers, Mapping) else ():
        headers = server.get("headers_env") if isinstance(server, Mapping) else None
        if isinstance(headers, Mapping):
            names.update(
                value.strip()
                for value in headers.values()
                if isinstance(value, str) and value.strip()
            )
    return frozenset(names)


def scrubbed_env(env: Mapping[str, str], extra_names: Iterable[str] = ()) -> dict[str, str]:
    """`env` without provider credentials; `extra_names` are removed too (configured key names)."""
    removed = SCRUBBED_ENV_NAMES | frozenset(extra_names)
    return {
        key: value
        for key, value in env.items()
        if key not in removed and not key.upper().endswith(SCRUBBED_ENV_SUFFIXES)
    }


# --- files whose text never reaches a model ---

# Base names (compared case-folded, shell-style patterns) of files that hold secrets: dotenv files,
# TLS and SSH keys, package-registry and netrc credentials, cloud credentials files. Their text
# never goes into a prompt to a model, whatever the tools may read.
SECRET_FILE_PATTERNS = (
    ".env*",
    "*.pem",
    "*.key",
    "*.p12",
    "*.pfx",
    "id_*",
    ".npmrc",
    ".netrc",
    "_netrc",
    ".pypirc",
    ".pgpass",
    ".git-credentials",
    "credentials",
    "credentials.*",
    "*credentials.json",
)


def is_secret_file_name(name: str) -> bool:
    """True for a file's base name that matches SECRET_FILE_PATTERNS."""
    folded = name.casefold()
    return any(fnmatch.fnmatchcase(folded, pattern) for pattern in SECRET_FILE_PATTERNS)


def prompt_refusal(root: str | os.PathLike[str], path: str | os.PathLike[str]) -> str | None:
    """Why the text of the file at `path` may not go into a prompt to a model, or None when it
    may: the error of the tools' read guard (resolve_file_in: outside `root`, also through a
    symbolic link; the agent's config), or `secret_file:` for a secret file by its own name or by
    the name of the file a symbolic link leads to (`notes.txt -> .env`)."""
    base = os.path.abspath(root)
    target = os.path.abspath(path)
    if os.path.commonpath((base, target)) != base:
        # Another spelling of a path under the root (the editor opened it through a link).
        target = os.path.realpath(target)
    try:
        resolved = resolve_file_in(base, target, write=False)
    except ToolError as err:
        return str(err)
    for name in {resolved.name, os.path.basename(os.path.realpath(resolved))}:
        if is_secret_file_name(name):
            return f"secret_file: {name} is named like a file that holds secrets"
    return None
