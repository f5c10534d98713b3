"""MCP tools as lich tools: names, parameter schemas, descriptions, and result conversion.

A server's tool `read` becomes `mcp_<server>_read`: the tool name sanitised to [a-zA-Z0-9_-],
the whole name at most 64 characters (what providers accept). Names that would clash (two tools
that sanitise or truncate alike, or a name already taken by a builtin, plugin or other server's
tool) get a short hash of `<server>/<tool>` instead of their tail, so the same listing always
gives the same names, whatever order the tools come in. `assign_names` does this; the manager
keeps the names it gave, so a restarted server's tools keep theirs.

`convert_result` turns a CallToolResult into a ToolResult (see its docstring); this module does
not import the SDK at run time, so it is cheap to import and to test.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import re
from collections.abc import Awaitable, Callable, Collection, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from lich_core.tools.guard import clamp_output
from lich_core.tools.types import ToolContext
from lich_core.vocabulary import JsonSchemaObject, ToolResult

if TYPE_CHECKING:
    import mcp_types

CAPABILITY = "mcp/call"
TIMEOUT_MS = 120_000
MAX_TOOL_NAME = 64
TOOL_PREFIX = "mcp_"
HASH_CHARS = 6
# Descriptions are the server's text: bounded, so one server cannot flood every request.
MAX_DESCRIPTION_CHARS = 2_000
# An `mcp_error:` message carries the server's text; the executor clamps only successful output.
MAX_ERROR_CHARS = 4_000
ERROR_PREFIX = "mcp_error"
UNAVAILABLE_PREFIX = "mcp_unavailable"

OBJECT_SCHEMA: JsonSchemaObject = {"type": "object"}
_UNSAFE_RE = re.compile(r"[^a-zA-Z0-9_-]")


def _sanitise(name: str) -> str:
    return _UNSAFE_RE.sub("_", name) or "_"


def _short_hash(server: str, tool: str) -> str:
    return hashlib.sha256(f"{server}/{tool}".encode()).hexdigest()[:HASH_CHARS]


def base_name(server: str, tool: str) -> str:
    """`mcp_<server>_<tool>`, sanitised and truncated to MAX_TOOL_NAME."""
    return f"{TOOL_PREFIX}{server}_{_sanitise(tool)}"[:MAX_TOOL_NAME]


def hashed_name(server: str, tool: str, salt: int = 0) -> str:
    suffix = "_" + _short_hash(server, tool if not salt else f"{tool}#{salt}")
    return base_name(server, tool)[: MAX_TOOL_NAME - len(suffix)] + suffix


def assign_names(server: str, tools: Iterable[str], taken: Collection[str]) -> dict[str, str]:
    """Lich names for a server's (new) tools: {tool name: lich name}, none in `taken`, all distinct.

    A base name shared by two tools of the listing, or already taken, is replaced by the hashed
    name for every tool that has it (not only the later ones), so the result does not depend on
    the listing's order.
    """
    unique = list(dict.fromkeys(tools))
    by_base: dict[str, list[str]] = {}
    for tool in unique:
        by_base.setdefault(base_name(server, tool), []).append(tool)
    used = set(taken)
    names: dict[str, str] = {}
    for base, group in by_base.items():
        if len(group) == 1 and base not in used:
            names[group[0]] = base
            used.add(base)
    for group in by_base.values():
        for tool in sorted(group):
            if tool in names:
                continue
            salt = 0
            name = hashed_name(server, tool)
            while name in used or name in by_base:
                salt += 1
                name = hashed_name(server, tool, salt)
            names[tool] = name
            used.add(name)
    return {tool: names[tool] for tool in unique}


def _is_schema_map(value: Any) -> bool:
    return isinstance(value, dict) and all(
        isinstance(key, str) and isinstance(item, (dict, bool)) for key, item in value.items()
    )


def parameters_schema(schema: Any) -> JsonSchemaObject:
    """The server's input schema when it is a usable object schema, else {"type": "object"}.

    Usable: a JSON object whose `type` is "object", whose `properties` (if any) map names to
    schemas and whose `required` (if any) is a list of strings. Providers reject anything else,
    and one bad tool must not break every request.
    """
    if not isinstance(schema, dict) or schema.get("type") != "object":
        return dict(OBJECT_SCHEMA)
    if "properties" in schema and not _is_schema_map(schema["properties"]):
        return dict(OBJECT_SCHEMA)
    required = schema.get("required")
    if required is not None and not (
        isinstance(required, list) and all(isinstance(item, str) for item in required)
    ):
        return dict(OBJECT_SCHEMA)
    try:
        json.dumps(schema)
    except (TypeError, ValueError):
        return dict(OBJECT_SCHEMA)
    return schema


def describe(server: str, tool: str, description: str | None) -> str:
    text = " ".join((description or "").split())
    if len(text) > MAX_DESCRIPTION_CHARS:
        text = text[: MAX_DESCRIPTION_CHARS - 3] + "..."
    head = f"[MCP server {server}, tool {tool}]"
    return f"{head} {text}" if text else head


# --- results ---


def _decoded_size(data: str) -> int:
    """Bytes a base64 string decodes to (without decoding a large payload twice)."""
    text = data.strip()
    try:
        if len(text) <= 4096:
            return len(base64.b64decode(text, validate=False))
    except (binascii.Error, ValueError):
        return len(text)
    return len(text) * 3 // 4 - text[-2:].count("=")


def _block_text(block: Any) -> str:
    kind = getattr(block, "type", None)
    if kind == "text":
        return str(getattr(block, "text", ""))
    if kind in ("image", "audio"):
        mime = getattr(block, "mime_type", None) or "unknown type"
        return f"[{kind}: {mime}, {_decoded_size(str(getattr(block, 'data', '') or ''))} bytes]"
    if kind == "resource":
        resource = getattr(block, "resource", None)
        uri = str(getattr(resource, "uri", "") or "")
        mime = getattr(resource, "mime_type", None)
        text = getattr(resource, "text", None)
        size = (
            f"{len(text)} chars"
            if isinstance(text, str)
            else f"{_decoded_size(str(getattr(resource, 'blob', '') or ''))} bytes"
        )
        return f"[embedded resource: {uri}{f' ({mime})' if mime else ''}, {size}]"
    if kind == "resource_link":
        uri = str(getattr(block, "uri", "") or "")
        name = getattr(block, "name", None)
        mime = getattr(block, "mime_type", None)
        details = ", ".join(str(part) for part in (name, mime) if part)
        return f"[resource link: {uri}{f' ({details})' if details else ''}]"
    return f"[{kind or 'unknown'} content]"


def _says_the_same(text: str, structured: Mapping[str, Any]) -> bool:
    """Whether the text content already is the structured content: its JSON (what the spec asks
    servers to send alongside), or the value the Python SDK wraps as {"result": value}."""
    try:
        parsed: Any = json.loads(text)
    except ValueError:
        parsed = text
    if parsed == structured:
        return True
    return list(structured) == ["result"] and structured["result"] in (parsed, text)


def result_text(content: Iterable[Any], structured: Mapping[str, Any] | None) -> str:
    text = "\n".join(_block_text(block) for block in content)
    if structured is None:
        return text
    if not text:
        return json.dumps(structured, ensure_ascii=False, default=str)
    if _says_the_same(text, structured):
        return text
    return f"{text}\n{json.dumps(structured, ensure_ascii=False, default=str)}"


def convert_result(result: mcp_types.CallToolResult) -> ToolResult:
    """A CallToolResult as a ToolResult.

    Text blocks are joined with newlines; an image or audio block becomes
    `[image: <mime>, <n> bytes]`; an embedded resource `[embedded resource: <uri> (<mime>), <n>
    chars|bytes]`; a resource link `[resource link: <uri> (<name>, <mime>)]`; structuredContent is
    appended as JSON (unless the text already is that JSON). `isError: true` gives ok=False with
    `mcp_error: <text>`. The executor clamps successful output as for every tool.
    """
    text = result_text(result.content, result.structured_content)
    if result.is_error:
        return error(f"{ERROR_PREFIX}: {text or 'the tool reported an error without a message'}")
    return ToolResult(ok=True, output=text)


def error(message: str) -> ToolResult:
    return ToolResult(ok=False, output="", error=clamp_output(message, MAX_ERROR_CHARS))


def unavailable(server: str, reason: str) -> ToolResult:
    return error(f"{UNAVAILABLE_PREFIX}: {server}: {reason}")


# --- the tool ---

# (server, remote tool name, args, cancel token) -> result; McpManager.call.
CallFn = Callable[[str, str, dict[str, Any], ToolContext], Awaitable[ToolResult]]


class McpTool:
    """One MCP server tool in the registry. Holds no connection: each call goes through the
    manager to the server's current connection, so a restarted server serves the same tool."""

    capability = CAPABILITY
    timeout_ms = TIMEOUT_MS

    def __init__(
        self,
        name: str,
        server: str,
        remote_name: str,
        description: str | None,
        schema: Any,
        call: CallFn,
    ) -> None:
        self.name = name
        self.server = server
        self.remote_name = remote_name
        self.description = describe(server, remote_name, description)
        self.parameters = parameters_schema(schema)
        self._call = call

    async def execute(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        try:
            return await self._call(self.server, self.remote_name, args, ctx)
        except Exception as err:  # noqa: BLE001 - never throw (the manager already catches; belt and braces)
            return error(f"{ERROR_PREFIX}: {type(err).__name__}: {err}")
