"""A stdlib-only MCP server over stdio with basic_server.py's process tools, for the tests of how
lich handles a server's process (crashes, exits, hangs, children, cancels).

Those tests are about the connection and the process, not the SDK: this server starts in a few
milliseconds where the SDK's costs about a second of CPU (its models load at import). It speaks
the handshake-era protocol (stdio_protocol.py); a `hang` call is never answered, and the calls
after it are.
"""

import json
import os
import subprocess
import sys
import threading

from stdio_protocol import serve, text_result

TEXT = {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}
NUMBERS = {
    "type": "object",
    "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
    "required": ["a", "b"],
}
NOTHING = {"type": "object", "properties": {}}
SPAWN = {"type": "object", "properties": {"ignore_term": {"type": "boolean"}}}
TOOLS = [
    {"name": "echo", "description": "Echo the text back.", "inputSchema": TEXT},
    {"name": "add", "description": "Add two integers.", "inputSchema": NUMBERS},
    {
        "name": "info",
        "description": "The server's pid, working directory and LICH_TEST_* environment.",
        "inputSchema": NOTHING,
    },
    {
        "name": "crash",
        "description": "Exit the whole server in the middle of the call.",
        "inputSchema": NOTHING,
    },
    {
        "name": "exit_soon",
        "description": "Answer, then exit (code 4) a moment later.",
        "inputSchema": NOTHING,
    },
    {"name": "hang", "description": "Never answers.", "inputSchema": NOTHING},
    {
        "name": "spawn_child",
        "description": "Start a long-lived child process; return its pid.",
        "inputSchema": SPAWN,
    },
]
CHILD = "import time; time.sleep(600)"
STUBBORN_CHILD = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); print('ready', flush=True); time.sleep(600)"


def spawn_child(ignore_term):
    """A child in this server's process group (the group lich kills on close)."""
    if not ignore_term:
        child = subprocess.Popen(
            [sys.executable, "-c", CHILD],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        return str(child.pid)
    child = subprocess.Popen(
        [sys.executable, "-c", STUBBORN_CHILD],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    child.stdout.readline()  # its SIGTERM handler is in place
    return str(child.pid)


def call(name, arguments):
    """The call's result, or None for a call that is never answered."""
    text = tool_text(name, arguments)
    return None if text is None else text_result(text)


def tool_text(name, arguments):
    if name == "echo":
        return arguments["text"]
    if name == "add":
        return str(arguments["a"] + arguments["b"])
    if name == "info":
        found = {key: value for key, value in os.environ.items() if key.startswith("LICH_TEST_")}
        return json.dumps({"pid": str(os.getpid()), "cwd": os.getcwd(), **found})
    if name == "crash":
        sys.stderr.write("crashing on purpose\n")
        sys.stderr.flush()
        os._exit(3)
    if name == "exit_soon":
        threading.Timer(0.2, os._exit, (4,)).start()
        return "bye"
    if name == "hang":
        return None
    if name == "spawn_child":
        return spawn_child(bool(arguments.get("ignore_term")))
    raise KeyError(name)


serve("plain", TOOLS, call)
