"""A hand-written MCP server (no SDK) that speaks the 2025 handshake-era protocol over stdio.

It declines `server/discover` (so the client falls back to `initialize`, as with most servers in
the wild) and lists tools whose input schemas are unusable: lich must offer them with a plain
object schema instead of failing the whole server.
"""

import json
import sys

TOOLS = [
    {"name": "plain", "description": "A usable schema.", "inputSchema": {"type": "object", "properties": {"q": {"type": "string"}}}},
    {"name": "stringly", "description": "A schema of type string.", "inputSchema": {"type": "string"}},
    {"name": "listy", "description": "Properties is a list.", "inputSchema": {"type": "object", "properties": ["q"]}},
    {"name": "untyped", "description": "No type at all.", "inputSchema": {"properties": {}}},
    {"name": "schemaless", "description": "No input schema."},
]


def send(message):
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


for line in sys.stdin:
    if not line.strip():
        continue
    request = json.loads(line)
    method = request.get("method")
    if "id" not in request:
        continue  # a notification
    answer = {"jsonrpc": "2.0", "id": request["id"]}
    if method == "initialize":
        answer["result"] = {
            "protocolVersion": "2025-06-18",
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "legacy", "version": "1"},
        }
    elif method == "tools/list":
        answer["result"] = {"tools": TOOLS}
    elif method == "tools/call":
        params = request.get("params") or {}
        text = f"{params.get('name')} called with {json.dumps(params.get('arguments') or {}, sort_keys=True)}"
        answer["result"] = {"content": [{"type": "text", "text": text}], "isError": False}
    elif method == "ping":
        answer["result"] = {}
    else:
        answer["error"] = {"code": -32601, "message": f"Method not found: {method}"}
    send(answer)
