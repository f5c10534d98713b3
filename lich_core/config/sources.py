"""The sources of configuration and the check each goes through on its own.

Sources: the editor's settings (initializationOptions, workspace/configuration, CLI flags: the
`overrides`), an explicit `--config` file, the user's config file, `LICH_*` environment variables
(all trusted), and the workspace's `.lich/config.json` (untrusted until the user trusts it).

`check_source` checks every value of one source on its own: a bad value is dropped alone (a bad
entry of a list or object alone) and named once as a ConfigProblem; the rest of the source
applies. A trusted source's bad value for a key that restricts the agent fails closed
(KeySpec.closed) instead of letting a looser value from below through.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lich_core.config.display import is_secret_name
from lich_core.config.keys import DROPPED, JUST_DROP, KEYS
from lich_core.errors import ConfigError, did_you_mean

CONFIG_DIR_NAME = ".lich"
CONFIG_FILE_NAME = "config.json"

# The names sources go by in messages and in `lich config`'s source column.
EDITOR_SOURCE = "the editor's settings"
ENV_SOURCE = "environment"
DEFAULT_SOURCE = "default"
UNKNOWN_KEY_HINT = "the keys are listed in docs/configuration.md"


@dataclass(frozen=True)
class ConfigProblem:
    """A value (or a whole file) that was not applied, and what happened instead.

    `path` is the key path (`providers[0].baseurl`; empty for a whole file), `detail` what is wrong
    with the value and what is allowed, `outcome` what lich does instead.
    """

    source: str
    path: str
    detail: str
    outcome: str

    def text(self) -> str:
        where = f"{self.source}: {self.path}" if self.path else self.source
        return f"lich: {where}: {self.detail}; {self.outcome}"

    def to_json(self) -> dict[str, str]:
        return {
            "source": self.source,
            "key": self.path,
            "detail": self.detail,
            "outcome": self.outcome,
            "message": self.text(),
        }


# A validator's message echoes the value after this; for a secret-named field it is cut there.
ECHOED_VALUE = ", got "


def problem_of(source: str, message: str, outcome: str) -> ConfigProblem:
    """A ConfigProblem from a validator's `<path>: <detail>` message, with the value cut out
    when the path names a secret (`providers[0].api_key`, `headers.Authorization`)."""
    path, _, detail = message.partition(": ")
    detail = detail or message
    fields = [part for part in re.split(r"[.\[\]]", path) if part]
    if any(is_secret_name(part) for part in fields) and ECHOED_VALUE in detail:
        detail = detail.split(ECHOED_VALUE, 1)[0] + ", got a value not shown (it may be a secret)"
    return ConfigProblem(source, path, detail, outcome)


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
    user named it), a broken one a ConfigError naming it and the line."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        if must_exist:
            raise ConfigError(f"{path}: no such file") from None
        return {}
    except (OSError, UnicodeDecodeError) as err:
        reason = err.strerror if isinstance(err, OSError) else "not UTF-8 text"
        raise ConfigError(f"{path}: cannot read ({reason})") from err
    try:
        data = json.loads(strip_json_comments(text)) if text.strip() else {}
    except json.JSONDecodeError as err:
        raise ConfigError(
            f"{path}: invalid JSON at line {err.lineno} column {err.colno}: {err.msg}"
        ) from err
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: the top level must be an object")
    return data


def strip_json_comments(text: str) -> str:
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


def env_values(env: Mapping[str, str]) -> dict[str, Any]:
    return {key: env[spec.env] for key, spec in KEYS.items() if spec.env and env.get(spec.env)}


def _closed_text(value: Any) -> str:
    return json.dumps(value) if not isinstance(value, str) else repr(value)


def check_source(
    values: Mapping[str, Any], source: str, *, trusted: bool
) -> tuple[dict[str, Any], list[ConfigProblem]]:
    """Every value of one source checked on its own (see the module docstring). Unknown keys are
    kept as they are (plugins may read them) and named, with the known key they look like."""
    checked: dict[str, Any] = {}
    problems: list[ConfigProblem] = []
    for key, value in values.items():
        spec = KEYS.get(key)
        if spec is None:
            checked[key] = value
            problems.append(
                ConfigProblem(
                    source,
                    str(key),
                    f"unknown key{did_you_mean(key, KEYS)}",
                    f"lich has no such setting and ignores it ({UNKNOWN_KEY_HINT})",
                )
            )
            continue
        if value is None:
            continue
        result, entry_problems = spec.check(key, value)
        if result is DROPPED:
            message = entry_problems[0][2]
            if trusted and spec.closed is not JUST_DROP:
                checked[key] = spec.closed
                outcome = (
                    f"it restricts the agent, so lich uses {_closed_text(spec.closed)} instead"
                )
            else:
                outcome = f"the value is dropped; the rest of {source} applies"
            problems.append(problem_of(source, message, outcome))
            continue
        for name, _path, message in entry_problems:
            if trusted and spec.closed_entry is not JUST_DROP and isinstance(result, dict):
                result[name] = spec.closed_entry
                outcome = (
                    f"it restricts the agent, so lich uses {_closed_text(spec.closed_entry)} for it"
                )
            else:
                outcome = "the entry is dropped; the others apply"
            problems.append(problem_of(source, message, outcome))
        checked[key] = result
    return checked, problems
