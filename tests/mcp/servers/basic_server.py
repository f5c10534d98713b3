"""A small MCP server for the tests, written with the SDK's MCPServer.

stdio by default; `--http` serves streamable HTTP on 127.0.0.1 (a free port, printed as
`PORT <n>` once the socket listens). Options add tool sets for particular tests.
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys

import anyio
import mcp_types as types
from mcp.server.mcpserver import Context, MCPServer

parser = argparse.ArgumentParser()
parser.add_argument("--http", action="store_true")
parser.add_argument(
    "--require-header", default="", help="NAME=VALUE: HTTP requests without it get 401"
)
parser.add_argument("--many", type=int, default=0, help="add this many generated tools")
options = parser.parse_args()

server = MCPServer("lich-test")


@server.tool()
def echo(text: str) -> str:
    """Echo the text back."""
    return text


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@server.tool()
def info() -> dict[str, str]:
    """The server's pid, working directory and LICH_TEST_* environment."""
    found = {key: value for key, value in os.environ.items() if key.startswith("LICH_TEST_")}
    return {"pid": str(os.getpid()), "cwd": os.getcwd(), **found}


@server.tool()
def env_has(name: str) -> str:
    """Whether the variable is set."""
    return "yes" if name in os.environ else "no"


@server.tool()
def mixed() -> types.CallToolResult:
    """Text, an image, an embedded resource, a link and structured content."""
    return types.CallToolResult(
        content=[
            types.TextContent(type="text", text="first"),
            types.ImageContent(type="image", data="aGVsbG8=", mime_type="image/png"),
            types.EmbeddedResource(
                type="resource",
                resource=types.TextResourceContents(
                    uri="file:///notes.txt", mime_type="text/plain", text="abc"
                ),
            ),
            types.ResourceLink(type="resource_link", uri="file:///big.bin", name="big.bin"),
            types.TextContent(type="text", text="last"),
        ],
        structured_content={"count": 2},
    )


@server.tool()
def fail(message: str) -> types.CallToolResult:
    """A result with isError set."""
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=message)], is_error=True
    )


@server.tool()
def crash() -> str:
    """Exit the whole server in the middle of the call."""
    sys.stderr.write("crashing on purpose\n")
    sys.stderr.flush()
    os._exit(3)


@server.tool()
def exit_soon() -> str:
    """Answer, then exit (code 4) a moment later, while nothing is being called."""
    import threading

    threading.Timer(0.2, os._exit, (4,)).start()
    return "bye"


@server.tool()
async def hang() -> str:
    """Never answers."""
    await anyio.sleep_forever()
    return "unreachable"


CHILD = "import time; time.sleep(600)"
STUBBORN_CHILD = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); print('ready', flush=True); time.sleep(600)"


@server.tool()
def spawn_child(ignore_term: bool = False) -> str:
    """Start a long-lived child process (in this server's process group) and return its pid."""
    if ignore_term:
        child = subprocess.Popen(
            [sys.executable, "-c", STUBBORN_CHILD],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        assert child.stdout is not None
        child.stdout.readline()  # its SIGTERM handler is in place
        return str(child.pid)
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    return str(child.pid)


@server.tool()
def whoami(ctx: Context) -> str:
    """The request's Authorization header (HTTP only)."""
    headers = ctx.headers or {}
    return headers.get("authorization", "<none>")


def _generated(index: int):
    def tool() -> str:
        return f"generated {index}"

    return tool


for number in range(options.many):
    # Half short and distinct; half long names that only differ after 64 characters, with a
    # character that must be sanitised, so truncation makes them collide.
    if number % 2:
        name = f"long.tool.name.that.goes.on.and.on.well.past.the.limit.of.sixty.four.{number:03d}"
    else:
        name = f"tool_{number:03d}"
    server.add_tool(_generated(number), name=name, description=f"Generated tool {number}.")


def serve_http() -> None:
    import uvicorn

    app = server.streamable_http_app()
    required = options.require_header

    async def guarded(scope, receive, send):
        if scope["type"] == "http" and required:
            name, _, value = required.partition("=")
            sent = dict(scope.get("headers") or [])
            if sent.get(name.lower().encode()) != value.encode():
                await send(
                    {
                        "type": "http.response.start",
                        "status": 401,
                        "headers": [(b"content-type", b"text/plain")],
                    }
                )
                await send({"type": "http.response.body", "body": b"missing or wrong credentials"})
                return
        await app(scope, receive, send)

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    print(f"PORT {sock.getsockname()[1]}", flush=True)
    config = uvicorn.Config(guarded, log_level="warning", lifespan="on")
    uvicorn.Server(config).run(sockets=[sock])


if options.http:
    serve_http()
else:
    server.run()
