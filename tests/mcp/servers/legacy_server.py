"""A hand-written MCP server (no SDK) that speaks the 2025 handshake-era protocol over stdio.

It declines `server/discover` (so the client falls back to `initialize`, as with most servers in
the wild) and lists tools whose input schemas are unusable: lich must offer them with a plain
object schema instead of failing the whole server.
"""

import json

from stdio_protocol import serve, text_result

TOOLS = [
    {
        "name": "plain",
        "description": "A usable schema.",
        "inputSchema": {"type": "object", "properties": {"q": {"type": "string"}}},
    },
    {
        "name": "stringly",
        "description": "A schema of type string.",
        "inputSchema": {"type": "string"},
    },
    {
        "name": "listy",
        "description": "Properties is a list.",
        "inputSchema": {"type": "object", "properties": ["q"]},
    },
    {"name": "untyped", "description": "No type at all.", "inputSchema": {"properties": {}}},
    {"name": "schemaless", "description": "No input schema."},
]


def call(name, arguments):
    return text_result(f"{name} called with {json.dumps(arguments, sort_keys=True)}")


serve("legacy", TOOLS, call)
