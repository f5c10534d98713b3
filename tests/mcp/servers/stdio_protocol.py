"""The handshake-era MCP protocol over stdio, in the standard library: what the test servers that
need no SDK (legacy_server.py, plain_server.py) share. Requests are answered one at a time as
they arrive; `server/discover` is declined, so a client falls back to `initialize`."""

import json
import sys


def send(message):
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def text_result(text):
    return {"content": [{"type": "text", "text": text}], "isError": False}


def serve(name, tools, call):
    """Answer requests on stdin until it closes. `call(tool, arguments)` returns the call's
    result, None to leave the call unanswered, or raises KeyError for an unknown tool."""
    for line in sys.stdin:
        if not line.strip():
            continue
        request = json.loads(line)
        method = request.get("method")
        if "id" not in request:
            continue  # a notification (initialized, cancelled)
        answer = {"jsonrpc": "2.0", "id": request["id"]}
        if method == "initialize":
            answer["result"] = {
                "protocolVersion": "2025-06-18",
                "capabilities": {"tools": {}},
                "serverInfo": {"name": name, "version": "1"},
            }
        elif method == "tools/list":
            answer["result"] = {"tools": tools}
        elif method == "tools/call":
            params = request.get("params") or {}
            try:
                result = call(params.get("name"), params.get("arguments") or {})
            except KeyError:
                answer["error"] = {"code": -32602, "message": f"Unknown tool: {params.get('name')}"}
            else:
                if result is None:
                    continue
                answer["result"] = result
        elif method == "ping":
            answer["result"] = {}
        else:
            answer["error"] = {"code": -32601, "message": f"Method not found: {method}"}
        send(answer)
