"""The `lich` command line.

    lich demo [--editor nvim]                      the agent on a sample project, no key needed
    lich tool NAME 'JSON-ARGS' [--work-dir DIR]   run one tool (exit 0 on ok, 1 otherwise)
    lich tools [--work-dir DIR] [--json]           list tools with capability and enabled state
    lich --version

Agent commands (`lich "task"`, `lich init`, `lich config`, `lich threads`, `lich sessions`,
`lich mcp`) live in lich_cli/agent.py and are dispatched from here; `lich acp` and `lich demo`
start their faces, `lich chat` the conversation in a terminal (lich_cli/chat).
"""

from __future__ import annotations

import argparse
import asyncio
import atexit
import contextlib
import json
import os
import re
import shlex
import sys
import threading
from collections.abc import Callable
from typing import Any

from lich_cli.agent import COMMANDS as AGENT_COMMANDS
from lich_cli.agent import task_options_help
from lich_cli.common import add_common_options, cli_root, load_cli_config, warn_problems
from lich_core import __version__
from lich_core.errors import ConfigError

# Where `lich tool` keeps the read state between calls (hashline read-before-edit), inside the
# workspace's folder in the user state dir: the CLI writes nothing into the directory it runs in.
CLI_READ_STATE_FILE_NAME = "read_state.json"


def warn_plugin_errors(runtime: Any) -> None:
    """The one summary of the plugins that failed to load (a run reports it as its plugin_warning)."""
    host = getattr(runtime, "plugins", None)
    if host is not None and host.warnings:
        from lich_core.plugins.loader import load_errors_summary

        print(f"lich: warning: {load_errors_summary(host.warnings)}", file=sys.stderr)


def cmd_tool(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="lich tool", description="Run one tool through the executor and capability gate."
    )
    parser.add_argument("name", help="tool name (see `lich tools`)")
    parser.add_argument(
        "args", nargs="?", default="{}", help="tool arguments as a JSON object ('-' reads stdin)"
    )
    add_common_options(parser)
    parser.add_argument("--json", action="store_true", help="print the whole result as JSON")
    args = parser.parse_args(argv)
    raw = sys.stdin.read() if args.args == "-" else args.args
    try:
        tool_args = json.loads(raw)
    except json.JSONDecodeError as err:
        print(f"lich: invalid JSON arguments: {err.msg} at column {err.colno}", file=sys.stderr)
        return 2
    if not isinstance(tool_args, dict):
        print("lich: tool arguments must be a JSON object", file=sys.stderr)
        return 2
    config = load_cli_config(args)
    from lich_core.read_state_file import load_read_state, save_read_state
    from lich_core.runtime import build_tool_runtime

    runtime = build_tool_runtime(config)
    warn_plugin_errors(runtime)
    # Each `lich tool` call is a new process; the read state (what the model has "seen") is kept
    # between calls so `read_file` then `apply_patch` works from the shell as in a session.
    from lich_core.userstate import workspace_state_dir

    state_file = (
        workspace_state_dir(config.settings.work_dir or os.getcwd()) / CLI_READ_STATE_FILE_NAME
    )
    read_state = load_read_state(state_file)
    ctx = runtime.context(read_state=read_state)
    result = asyncio.run(runtime.executor.execute(args.name, tool_args, ctx))
    try:
        save_read_state(read_state, state_file)
    except OSError as err:
        print(
            f"lich: note: could not save the read state to {state_file}: {err.strerror}",
            file=sys.stderr,
        )
    if args.json:
        print(json.dumps(result.to_json_dict(), ensure_ascii=False, indent=2))
    elif result.ok:
        sys.stdout.write(result.output if result.output.endswith("\n") else result.output + "\n")
    else:
        if result.output:
            sys.stdout.write(
                result.output if result.output.endswith("\n") else result.output + "\n"
            )
        print(f"error: {result.error}", file=sys.stderr)
    return 0 if result.ok else 1


def cmd_tools(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="lich tools", description="List tools, their capability and whether they are enabled."
    )
    add_common_options(parser)
    parser.add_argument("--json", action="store_true", help="print definitions as JSON")
    args = parser.parse_args(argv)
    config = load_cli_config(args)
    from lich_core.runtime import build_tool_runtime

    runtime = build_tool_runtime(config)
    warn_plugin_errors(runtime)
    tools = runtime.describe()
    if args.json:
        print(json.dumps(tools, indent=2))
        return 0
    print(render_tool_table(tools))
    return 0


# One line per tool; the full description is in `lich tools --json`.
TOOL_SUMMARY_MAX_CHARS = 72


def tool_state(tool: dict[str, Any]) -> str:
    """enabled (runs), denied (selected, capability not granted) or disabled (not in tools_enabled)."""
    if tool["enabled"]:
        return "enabled"
    return "denied" if tool.get("selected") else "disabled"


def tool_summary(description: str) -> str:
    """The description's first sentence, cut to fit one terminal line."""
    text = " ".join(description.split())
    end = re.search(r"(?<!e\.g)(?<!i\.e)\.\s", text)  # "e.g. src" does not end a sentence
    first = text[: end.start() + 1] if end else text
    if len(first) > TOOL_SUMMARY_MAX_CHARS:
        first = first[: TOOL_SUMMARY_MAX_CHARS - 3].rstrip() + "..."
    return first


def render_tool_table(tools: list[dict[str, Any]]) -> str:
    rows = [("TOOL", "STATE", "CAPABILITY", "SUMMARY")]
    rows += [
        (t["name"], tool_state(t), t["capability"] or "-", tool_summary(t["description"] or ""))
        for t in tools
    ]
    widths = [max(len(row[column]) for row in rows) for column in range(3)]
    lines = [
        "  ".join(cell.ljust(width) for cell, width in zip(row[:3], widths, strict=True))
        + "  "
        + row[3]
        for row in rows
    ]
    return "\n".join(line.rstrip() for line in lines)


def cmd_trust(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="lich trust",
        description="Trust this workspace's .lich/config.json as it is now (and the code of the plugins, replay files, "
        "MCP servers and test command it names); also your yes to what a task without process/exec wrote here. "
        "Any later change to them revokes it. Says exactly what the file changes from your own settings.",
    )
    parser.add_argument(
        "--work-dir", default=None, help="workspace root (default: $LICH_WORK_DIR, else cwd)"
    )
    parser.add_argument(
        "--revoke", action="store_true", help="forget the trust given to this workspace"
    )
    parser.add_argument(
        "--json", action="store_true", help="print {state, config, keys, changes, message} as JSON"
    )
    args = parser.parse_args(argv)
    from lich_core.config import set_workspace_trust

    root = cli_root(args)
    # A user config that cannot be parsed stops here (exit 2); a bad value is named once.
    before = load_cli_config(args, quiet=True)
    warn_problems(before)
    try:
        change = set_workspace_trust(root, trust=not args.revoke)
    except (ConfigError, OSError) as err:  # a state dir refused or unwritable
        print(f"lich: error: cannot change workspace trust: {err}", file=sys.stderr)
        return 1
    report = change.to_json()
    if args.json:
        print(json.dumps(report, indent=2, ensure_ascii=False))
    else:
        print(report["message"])
    return 0 if change.after.state in ("trusted", "no_config") or args.revoke else 1


def cmd_demo(argv: list[str]) -> int:
    from lich_cli.demo import main as demo_main  # lazily: only `lich demo` loads it

    return demo_main(argv)


def cmd_chat(argv: list[str]) -> int:
    # Lazily: prompt_toolkit and rich load only for `lich chat`.
    from lich_cli.chat import cmd_chat as chat_main

    return chat_main(argv)


def cmd_acp(argv: list[str]) -> int:
    from lich_acp.__main__ import main as acp_main  # lazily: the ACP SDK loads only for `lich acp`

    return acp_main(argv)


USAGE = """usage: lich demo [--editor nvim]      watch the agent fix a bug in a sample project (no API key, no network)
       lich "task" [options]          run the agent on a task (quote it: one argument)
       lich run TASK... [options]     the same, with the task in any number of words
       lich tool NAME 'JSON-ARGS'     run one tool
       lich tools                     list tools
       lich trust [--revoke]          trust this workspace's .lich/config.json (docs/trust.md)
       lich mcp list|add|enable|disable|remove   the MCP servers in your user config (docs/mcp.md)
       lich acp [--work-dir D]        the agent over the Agent Client Protocol on stdio (for ACP editors)
       lich --thread ID "follow-up"   continue a thread (conversation) with everything said so far
       lich threads [--json]          this workspace's threads, newest first (docs/conversations.md)
       lich chat [--thread ID|latest] the conversation in the terminal, the editors' threads (docs/chat.md)
       lich init | config | sessions
       lich --version"""


def full_usage() -> str:
    """USAGE, then the options of a task (`lich "task" --help` has them too)."""
    return f'{USAGE}\n\nrunning a task: lich "task" [options]\n\n{task_options_help()}\n\nEach command has its own --help (lich tool --help, lich demo --help, ...).'


def looks_like_subcommand(word: str) -> bool:
    """A lone word such as `update` or `upgrade` is a mistyped or unknown command, not a task."""
    return bool(re.fullmatch(r"[A-Za-z][\w-]*", word))


def main(argv: list[str] | None = None) -> int:
    """Run one `lich` command; its exit code. Called as the process's entry point (argv None: the
    `lich` script, `python -m lich_cli`), a task run does not return: it leaves through
    exit_now (flushed, atexit work done, no interpreter teardown)."""
    entry_point = argv is None
    argv = list(sys.argv[1:] if argv is None else argv)
    code = _dispatch(argv)
    if entry_point and is_task_run(argv):
        exit_now(code)
    return code


def is_task_run(argv: list[str]) -> bool:
    """Whether `argv` is `lich "task"` / `lich run ...` (what _dispatch hands to the run command)."""
    if not argv or argv[0] in ("-h", "--help", "help", "-V", "--version"):
        return False
    if argv[0] == "run":
        return True
    known = {"tool", "tools", "trust", "acp", "demo", "chat", *AGENT_COMMANDS}
    return argv[0] not in known and not looks_like_subcommand(argv[0])


def exit_now(code: int) -> None:
    """End the process with `code` at once, without the interpreter's teardown.

    After a task run the interpreter would spend 50-115 ms tearing down ~550 modules and
    collecting the heap, with nothing left to do. What a normal exit does that matters is done
    here first: the run has closed its HTTP clients, MCP servers and plugins (lich_cli/agent.py
    _run_task); the thread file was written record by record through an unbuffered file and
    closed, and the trust store through a closed temp file and a rename, so the kernel has every
    byte (os._exit loses none; neither path fsyncs, then or now). Then the atexit callbacks, as
    at a normal exit (python_eval's interpreters and leftover MCP servers killed, weakref
    finalizers, logging's handlers flushed), then stdout and stderr flushed. A reader gone from
    stdout (`lich "task" | head -1`) is not an error here: the rest goes to /dev/null and the
    run's code stands.

    Returns (and the interpreter exits as usual) while a non-daemon thread still runs: a normal
    exit would wait for it, and so must this.
    """
    main_thread = threading.main_thread()
    if any(t is not main_thread and not t.daemon and t.is_alive() for t in threading.enumerate()):
        return
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:
                stream.flush()
        except BrokenPipeError:
            with contextlib.suppress(OSError, ValueError):
                os.dup2(os.open(os.devnull, os.O_WRONLY), stream.fileno())
        except (OSError, ValueError):
            pass  # a closed or broken stream: a normal exit could not flush it either
    os._exit(code)


def _dispatch(argv: list[str]) -> int:
    try:
        if not argv:
            # A bare `lich` is a usage error (as in git or pip): the help goes to stderr, exit 2.
            print(full_usage(), file=sys.stderr)
            return 2
        if argv[0] in ("-h", "--help", "help"):
            print(full_usage())
            return 0
        if argv[0] in ("-V", "--version"):
            print(f"lich {__version__}")
            return 0
        commands: dict[str, Callable[[list[str]], int]] = {
            "tool": cmd_tool,
            "tools": cmd_tools,
            "trust": cmd_trust,
        }
        commands.update(AGENT_COMMANDS)
        commands["acp"] = cmd_acp
        commands["demo"] = cmd_demo
        commands["chat"] = cmd_chat
        if argv[0] in commands:
            return commands[argv[0]](argv[1:])
        if looks_like_subcommand(argv[0]):
            # `lich update` must not become a prompt to the agent: a task is one quoted argument
            # (it has spaces), follows `run`, or comes after options such as --model. Quoting a
            # lone word changes nothing in argv, so `lich run` is the one way to suggest.
            print(
                f"lich: unknown command {argv[0]!r}; to give the agent this as a task, use "
                f"`lich run {shlex.join(argv)}`\n{USAGE}",
                file=sys.stderr,
            )
            return 2
        return commands["run"](argv)
    except ConfigError as err:
        print(f"lich: config error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("lich: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # The reader went away (`lich tools | head`): stop quietly, as a SIGPIPE'd tool would.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
