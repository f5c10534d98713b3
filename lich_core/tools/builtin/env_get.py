"""env_get: environment variables as terminal commands would see them.

Source: the same environment the terminal tool gives its child processes (ctx.env, or the server's
own environment when ctx.env is empty, i.e. unconfigured; provider API keys removed either way),
so what the model learns here is what its commands will actually get.

Values stay hidden unless `reveal` is true, and a name that looks like a secret is always masked as
`<redacted: N chars>`, `reveal` or not: secret, token, password, passwd, passphrase, key,
credential, auth, webhook, cookie anywhere in the name, or a whole name segment PAT, PASS, PW, DSN,
or PWD at the end of a longer name (`DB_PWD`; `PWD` and `OLDPWD` are directories). A revealed value
that holds a well-known token format or URL credentials is masked too (lich_core/tools/secrets.py).

Capability: `process/exec`. Values often hold credentials the name rule cannot spot
(`DATABASE_URL=postgres://user:pw@host`), and a configuration that denies running programs is a
locked-down one, which should not be able to read the process environment either.
"""

from __future__ import annotations

import re
from typing import Any

from lich_core.tools.guard import capture_errors, optional_bool_arg, optional_string_arg
from lich_core.tools.processes import tool_process_env
from lich_core.tools.secrets import SECRET_VALUE_RE, is_secret_name, mask_url_credentials
from lich_core.tools.types import FunctionTool, ToolContext
from lich_core.vocabulary import ToolResult

__all__ = ["TOOL", "is_secret_name", "show_value"]

MAX_ENV_ENTRIES = 500
# A revealed value longer than this is cut (PATH-like lists are the usual long ones).
MAX_VALUE_CHARS = 2_000


def show_value(name: str, value: str, reveal: bool) -> str:
    if is_secret_name(name) or (reveal and SECRET_VALUE_RE.search(value)):
        return f"<redacted: {len(value)} chars>"
    if not reveal:
        return f"<hidden: {len(value)} chars>"
    shown = mask_url_credentials(value)
    if len(shown) > MAX_VALUE_CHARS:
        shown = shown[:MAX_VALUE_CHARS] + f"... [{len(shown) - MAX_VALUE_CHARS} chars omitted]"
    return shown


def _requested_keys(args: dict[str, Any]) -> list[str] | None:
    """`keys` as a list of names; a string is split on commas and whitespace (models send both)."""
    keys = args.get("keys")
    if isinstance(keys, str):
        keys = re.split(r"[,\s]+", keys)
    if not isinstance(keys, list):
        return None
    names = [str(key).strip() for key in keys if isinstance(key, (str, int)) and str(key).strip()]
    return names or None


@capture_errors
async def run_env_get(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    env = tool_process_env(ctx)
    keys = _requested_keys(args)
    prefix = optional_string_arg(args, "prefix")
    reveal = optional_bool_arg(args, "reveal", False)

    names = sorted(keys if keys is not None else env)
    if prefix is not None:
        names = [name for name in names if name.startswith(prefix)]
    lines: list[str] = []
    missing: list[str] = []
    for name in names:
        if name not in env:
            missing.append(name)
            continue
        if len(lines) < MAX_ENV_ENTRIES:
            lines.append(f"{name}={show_value(name, env[name], reveal)}")
    found = len(names) - len(missing)
    if found > len(lines):
        lines.append(f"[{found - len(lines)} more variables not shown; narrow with prefix or keys]")
    lines.extend(f"{name} (not set)" for name in missing)
    if not lines:
        lines.append(
            f"no environment variables starting with {prefix!r}"
            if prefix
            else "no environment variables"
        )
    if not reveal and found:
        lines.append(
            "[values hidden; pass reveal=true to show them (secret-looking names stay redacted)]"
        )
    return ToolResult(
        ok=True, output="\n".join(lines), details={"found": found, "missing": missing}
    )


TOOL = FunctionTool(
    name="env_get",
    description=(
        "Environment variables (keys, prefix or all names); values only with reveal; secrets redacted."
    ),
    parameters={
        "type": "object",
        "properties": {
            "keys": {
                "type": "array",
                "items": {"type": "string"},
            },
            "prefix": {
                "type": "string",
            },
            "reveal": {
                "type": "boolean",
            },
        },
        "additionalProperties": False,
    },
    run=run_env_get,
    capability="process/exec",
)
