"""Reading a command's one object argument (a leaf: the command table and every feature that
registers a command use it). A malformed argument raises BadArguments naming the command and the
field; the command table turns it into a JSON-RPC InvalidParams error."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from lich_lsp.paths import path_key, uri_to_path

# LSP positions and line numbers are `uinteger`s: 0 .. 2^31 - 1.
MAX_UINTEGER = 2**31 - 1


class BadArguments(Exception):
    pass


def single_object(command: str, args: tuple[Any, ...], *, required: bool = True) -> dict[str, Any]:
    """The one object argument; `{}` for commands that may be called without one."""
    if not args:
        if required:
            raise BadArguments(f"{command}: expected one object argument, got none")
        return {}
    if len(args) != 1:
        raise BadArguments(f"{command}: expected one object argument, got {len(args)} arguments")
    value = args[0]
    if value is None and not required:
        return {}
    if not isinstance(value, dict):
        raise BadArguments(f"{command}: expected an object argument, got {type(value).__name__}")
    return value


def get_str(command: str, obj: dict[str, Any], key: str, *, required: bool) -> str | None:
    value = obj.get(key)
    if value is None:
        if required:
            raise BadArguments(f"{command}: missing required field '{key}'")
        return None
    if not isinstance(value, str):
        raise BadArguments(f"{command}: field '{key}' must be a string, got {type(value).__name__}")
    if required and not value:
        raise BadArguments(f"{command}: field '{key}' must not be empty")
    return value


def resolve_uri(command: str, root: Path, uri: str) -> Path:
    """The file a `uri` argument names; refused unless it is a file URI inside the workspace root."""
    path = uri_to_path(uri)
    if path is None:
        raise BadArguments(f"{command}: '{uri}' is not a file URI")
    try:
        Path(path_key(path)).relative_to(path_key(root))
    except ValueError:
        raise BadArguments(f"{command}: {uri} is outside the workspace root {root}") from None
    return path
