"""terminal: run a shell command (`bash -lc`) in the work dir and return its merged output.

Process rules, all of which exist so a model-issued command can never outlive or flood the call:
- the command runs in its own session and process group; the whole group gets SIGKILL on
  timeout, on cancellation (ctx.cancel or asyncio task cancellation) and also once bash itself
  has exited, so background jobs started by the command do not survive the call;
- stdout and stderr are merged and read as they arrive; past TERMINAL_MAX_OUTPUT_CHARS the text is
  counted and dropped, so memory stays bounded however much the command prints;
- interactive programs (editors, pagers, ssh, ...) are refused before anything runs, because
  without a terminal they either hang until the timeout or print garbage;
- provider API keys are scrubbed from the child's environment here as well as in the runtime, so
  a direct call with an unscrubbed context is just as safe.
"""

from __future__ import annotations

import asyncio
import codecs
import os
import re
import shlex
import signal
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from lich_core.errors import ToolError
from lich_core.tools.executor import TERMINAL_TOOL_TIMEOUT_MS
from lich_core.tools.guard import (
    capture_errors,
    optional_int_arg,
    optional_string_arg,
    relative_to_root,
    require_string_arg,
    resolve_safe_path,
    truncation_marker,
)
from lich_core.tools.runtime import scrubbed_env
from lich_core.tools.types import FunctionTool, ToolContext, ToolResult

TERMINAL_MAX_OUTPUT_CHARS = 50_000
DEFAULT_COMMAND_TIMEOUT_MS = 60_000
MAX_COMMAND_TIMEOUT_MS = 300_000
TERMINAL_TIMEOUT_ENV = "LICH_TERMINAL_TIMEOUT_MS"
TERMINAL_TIMEOUT_SETTING = "terminal_timeout_ms"
# After the group is killed, how long to keep reading for output already in the pipe. Only a
# process that escaped the group (its own setsid) can hold the pipe open past this.
DRAIN_GRACE_MS = 2_000
# Room for the truncation note and the `[exit N]` line on top of the capped text.
TERMINAL_RESULT_SLACK_CHARS = 200

# kli's list; each entry says what to do instead, so the model can recover in one step.
INTERACTIVE_PROGRAMS: Mapping[str, str] = {
    "vi": "edit files with edit_file or write_file",
    "vim": "edit files with edit_file or write_file",
    "nvim": "edit files with edit_file or write_file",
    "nano": "edit files with edit_file or write_file",
    "emacs": "edit files with edit_file or write_file",
    "less": "print the text with cat, head, tail or sed -n 'A,Bp'",
    "more": "print the text with cat, head, tail or sed -n 'A,Bp'",
    "man": "read `<program> --help`",
    "top": "use process_list or `ps aux`",
    "htop": "use process_list or `ps aux`",
    "watch": "run the command once, or a bounded loop with sleep",
    "ssh": "run commands locally; remote shells are not available",
    "mosh": "run commands locally; remote shells are not available",
    "tmux": "run the command directly",
    "screen": "run the command directly",
}

# Words that run the next word as the command; their options may take a value.
COMMAND_WRAPPERS = frozenset({"env", "command", "exec", "time", "sudo", "doas"})
WRAPPER_OPTIONS_WITH_VALUE: Mapping[str, frozenset[str]] = {
    "env": frozenset({"-u", "--unset", "-C", "--chdir", "-S", "--split-string"}),
    "exec": frozenset({"-a"}),
    "time": frozenset({"-f", "--format", "-o", "--output"}),
    "sudo": frozenset({"-u", "--user", "-g", "--group", "-h", "--host", "-p", "--prompt",
                       "-C", "--close-from", "-D", "--chdir", "-r", "--role", "-t", "--type",
                       "-T", "--command-timeout", "-U", "--other-user"}),
    "doas": frozenset({"-u", "-C"}),
}
# Shell words that may precede a command without being one.
SHELL_PREFIX_WORDS = frozenset({"!", "{", "}", "if", "then", "else", "elif", "do", "while", "until", "fi", "done"})
# shlex (punctuation_chars) yields these as separate tokens; each starts a new simple command.
COMMAND_SEPARATORS = frozenset({"|", "||", "&", "&&", ";", ";;", "|&", "(", ")", ";&", ";;&"})
REDIRECTIONS = frozenset({">", ">>", "<", "<<", "<<<", "<>", ">|", "&>", "&>>", ">&", "<&"})
ASSIGNMENT_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\[[^\]]*\])?\+?=")

# Defaults that keep well-behaved programs from paging even if something allocates a terminal.
NON_INTERACTIVE_ENV_DEFAULTS: Mapping[str, str] = {"PAGER": "cat", "GIT_PAGER": "cat"}


# --- interactive-program refusal ---


def _tokens(command: str) -> list[str]:
    # A heredoc body is data, not commands: analyse only up to its first line.
    text = command.split("\n", 1)[0] if "<<" in command else command
    # Newlines separate commands; inside quotes the replacement stays part of one word.
    text = text.replace("\n", " ; ")
    lexer = shlex.shlex(text, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    try:
        return list(lexer)
    except ValueError:  # unbalanced quotes: bash will reject it anyway; check the plain words
        return text.split()


def _segments(tokens: list[str]) -> list[list[str]]:
    segments: list[list[str]] = [[]]
    for token in tokens:
        if token in COMMAND_SEPARATORS:
            segments.append([])
        else:
            segments[-1].append(token)
    return [segment for segment in segments if segment]


def effective_command(words: list[str]) -> str | None:
    """The program a simple command runs, looking past wrappers, assignments and their options."""
    index = 0
    wrapper: str | None = None
    while index < len(words):
        word = words[index]
        if word in REDIRECTIONS:
            index += 2  # the operator and its target
            continue
        if ASSIGNMENT_RE.match(word) or word in SHELL_PREFIX_WORDS:
            index += 1
            continue
        if wrapper is not None and word.startswith("-") and word != "-":
            takes_value = word in WRAPPER_OPTIONS_WITH_VALUE.get(wrapper, frozenset())
            index += 2 if takes_value else 1
            continue
        name = os.path.basename(word)
        if name in COMMAND_WRAPPERS:
            wrapper = name
            index += 1
            continue
        return name
    return None


def interactive_refusal(command: str) -> str | None:
    """The `interactive_command:` error for a command that would start an interactive program."""
    for segment in _segments(_tokens(command)):
        name = effective_command(segment)
        if name is not None and name in INTERACTIVE_PROGRAMS:
            return (
                f"interactive_command: {name} needs an interactive terminal, which this tool does not "
                f"have (nothing was run); instead, {INTERACTIVE_PROGRAMS[name]}"
            )
    return None


# --- settings ---


def _parse_ms(value: Any) -> int | None:
    try:
        number = int(str(value).strip())
    except (TypeError, ValueError):
        return None
    return number if number > 0 else None


def default_command_timeout_ms(ctx: ToolContext) -> int:
    """Config's terminal_timeout_ms, as injected into the env by the runtime, else the setting."""
    value = _parse_ms(ctx.env.get(TERMINAL_TIMEOUT_ENV))
    if value is None:
        value = _parse_ms(ctx.settings.get(TERMINAL_TIMEOUT_SETTING))
    return min(value or DEFAULT_COMMAND_TIMEOUT_MS, MAX_COMMAND_TIMEOUT_MS)


def tool_process_env(ctx: ToolContext) -> dict[str, str]:
    """The environment a tool's child process gets.

    An empty ctx.env is ToolContext's default, meaning "not configured" (a direct call), so the
    server's own environment is used; either way provider API keys are removed.
    """
    return scrubbed_env(ctx.env or os.environ)


# --- running ---


class _OutputSink(asyncio.SubprocessProtocol):
    """Collects merged output up to a cap; everything past it is only counted."""

    def __init__(self, loop: asyncio.AbstractEventLoop, max_chars: int) -> None:
        self.max_chars = max_chars
        self.decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self.parts: list[str] = []
        self.kept_chars = 0
        self.omitted_chars = 0
        self.exited: asyncio.Future[None] = loop.create_future()
        self.output_closed: asyncio.Future[None] = loop.create_future()

    def pipe_data_received(self, fd: int, data: bytes) -> None:
        self._add(self.decoder.decode(data))

    def _add(self, text: str) -> None:
        room = self.max_chars - self.kept_chars
        if room > 0:
            kept = text[:room]
            self.parts.append(kept)
            self.kept_chars += len(kept)
        self.omitted_chars += max(0, len(text) - max(room, 0))

    def pipe_connection_lost(self, fd: int, exc: Exception | None) -> None:
        if fd == 1 and not self.output_closed.done():
            self.output_closed.set_result(None)

    def process_exited(self) -> None:
        if not self.exited.done():
            self.exited.set_result(None)

    def text(self) -> str:
        self._add(self.decoder.decode(b"", final=True))
        return "".join(self.parts)


def kill_process_group(pgid: int) -> None:
    """SIGKILL a whole process group (a child started with start_new_session=True)."""
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass  # the group is already gone


def _exit_status(returncode: int | None) -> int | None:
    if returncode is None:
        return None
    # A signal death reads like the shell reports it (SIGKILL -> 137).
    return 128 - returncode if returncode < 0 else returncode


def _working_dir(ctx: ToolContext, directory: str | None) -> Path:
    if directory is None:
        return ctx.work_dir
    path = resolve_safe_path(ctx.work_dir, directory)
    if not path.exists():
        raise ToolError(f"not_found: directory {directory}")
    if not path.is_dir():
        raise ToolError(f"not_a_directory: {directory}")
    return path


def _compose_output(sink: _OutputSink, trailer: str) -> str:
    text = sink.text()
    if sink.omitted_chars:
        text += ("" if text.endswith("\n") else "\n") + truncation_marker(sink.omitted_chars)
    if text and not text.endswith("\n"):
        text += "\n"
    return text + trailer


@capture_errors
async def run_terminal(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    command = require_string_arg(args, "command")
    refusal = interactive_refusal(command)
    if refusal:
        return ToolResult(ok=False, error=refusal)
    timeout_ms = optional_int_arg(
        args, "timeout_ms", default_command_timeout_ms(ctx), low=1, high=MAX_COMMAND_TIMEOUT_MS
    )
    assert timeout_ms is not None
    cwd = _working_dir(ctx, optional_string_arg(args, "directory"))
    stdin_text = args.get("input") if isinstance(args.get("input"), str) else None
    env = tool_process_env(ctx)
    for key, value in NON_INTERACTIVE_ENV_DEFAULTS.items():
        env.setdefault(key, value)

    if ctx.cancel.cancelled:
        return ToolResult(ok=False, error="cancelled")
    loop = asyncio.get_running_loop()
    sink = _OutputSink(loop, TERMINAL_MAX_OUTPUT_CHARS)
    transport, _ = await loop.subprocess_exec(
        lambda: sink,
        "bash",
        "-lc",
        command,
        stdin=subprocess.PIPE if stdin_text is not None else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        cwd=str(cwd),
        env=env,
        start_new_session=True,  # pid == pgid: one killpg reaches every descendant
    )
    pgid = transport.get_pid()
    unsubscribe = ctx.cancel.on_cancel(lambda: kill_process_group(pgid))
    if stdin_text is not None:
        stdin = transport.get_pipe_transport(0)
        if stdin is not None:
            try:
                stdin.write(stdin_text.encode("utf-8"))
                stdin.write_eof()
            except (BrokenPipeError, ConnectionResetError, RuntimeError):
                pass  # the command exited without reading its input; that is its business
    cancel_wait = asyncio.ensure_future(ctx.cancel.wait())
    finished = False
    try:
        await asyncio.wait({sink.exited, cancel_wait}, timeout=timeout_ms / 1000, return_when=asyncio.FIRST_COMPLETED)
        finished = True
        # Decide now: killing the group below makes the process exit, which must not read as
        # a normal exit (137) once the deadline or a cancellation has fired.
        cancelled = ctx.cancel.cancelled
        exited = sink.exited.done() and not cancelled
    finally:
        kill_process_group(pgid)
        unsubscribe()
        cancel_wait.cancel()
        if not finished:  # task cancelled: no more awaiting, just release the pipes
            transport.close()
    try:
        await asyncio.wait_for(asyncio.shield(sink.output_closed), DRAIN_GRACE_MS / 1000)
    except asyncio.TimeoutError:
        pass  # a process that left our group still holds the pipe; stop reading it
    transport.close()

    status = _exit_status(transport.get_returncode()) if exited else None
    details: dict[str, Any] = {
        "exit_code": status,
        "directory": relative_to_root(ctx.work_dir, cwd),
        "truncated_chars": sink.omitted_chars,
        "timeout_ms": timeout_ms,
    }
    if cancelled:
        output = _compose_output(sink, "[cancelled; process group killed]")
        return ToolResult(ok=False, output=output, error="cancelled", details=details)
    if not exited:
        details["timed_out"] = True
        output = _compose_output(sink, f"[timeout after {timeout_ms} ms; process group killed]")
        return ToolResult(
            ok=False, output=output, error=f"timeout: command exceeded {timeout_ms} ms", details=details
        )
    output = _compose_output(sink, f"[exit {status}]")
    if status != 0:
        return ToolResult(ok=False, output=output, error=f"exit_code: {status}", details=details)
    return ToolResult(ok=True, output=output, details=details)


TOOL = FunctionTool(
    name="terminal",
    description=(
        "Run a shell command with `bash -lc` in the work dir (or `directory`, inside it) and return "
        "its combined stdout and stderr followed by `[exit N]`. Succeeds only when the command exits "
        "with 0. Output is capped at 50,000 characters. The command is killed with all its child "
        "processes when it runs past `timeout_ms` (default 60000, max 300000) or the call is "
        "cancelled; background jobs do not outlive the call. Interactive programs (editors, pagers, "
        "top, watch, ssh, tmux, ...) are refused: there is no terminal. Use `input` for stdin."
    ),
    parameters={
        "type": "object",
        "properties": {
            "command": {"type": "string", "description": "Shell command, run with bash -lc."},
            "timeout_ms": {
                "type": "integer",
                "description": "Kill the command after this many milliseconds (max 300000).",
                "minimum": 1,
                "maximum": MAX_COMMAND_TIMEOUT_MS,
            },
            "input": {"type": "string", "description": "Text fed to the command's stdin (default: none)."},
            "directory": {
                "type": "string",
                "description": "Working directory, relative to the work dir (must stay inside it).",
            },
        },
        "required": ["command"],
        "additionalProperties": False,
    },
    run=run_terminal,
    capability="process/exec",
    timeout_ms=TERMINAL_TOOL_TIMEOUT_MS,
    # The tool caps itself; the executor's generic 20,000-char clamp would cut off `[exit N]`.
    max_output_chars=TERMINAL_MAX_OUTPUT_CHARS + TERMINAL_RESULT_SLACK_CHARS,
)
