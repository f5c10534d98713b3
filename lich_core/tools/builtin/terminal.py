"""terminal: run a shell command (`bash -lc`) in the work dir and return its output.

Arguments of both harnesses: lich's `timeout_ms` or kli's `timeout` (seconds), and kli's `shell`
(bash, sh, zsh or dash, found on the command's PATH; run as `SHELL -lc COMMAND`). Output is
stdout and stderr merged as printed, or, with `separate_streams: true`, the two under `[stdout]`
and `[stderr]` headers (kli captures them apart; its schema has no switch, so the name is lich's).

Process rules, all of which exist so a model-issued command can never outlive or flood the call:
- the command runs in its own session and process group; the whole group gets SIGKILL on
  timeout, on cancellation (ctx.cancel or asyncio task cancellation) and also once bash itself
  has exited, so background jobs started by the command do not survive the call;
- on Linux, processes that left the group (`setsid cmd &`, `setsid -f`, double forks) are found
  too and killed at the same moments: this process is a child subreaper during the call and the
  shell's environment carries `LICH_CALL_ID` (lich_core/tools/reaper.py);
- stdout and stderr are read as they arrive; past TERMINAL_MAX_OUTPUT_CHARS (one budget for
  both) the text is counted and dropped, so memory stays bounded however much the command prints;
- interactive programs (editors, pagers, ssh, ...) are refused before anything runs, because
  without a terminal they either hang until the timeout or print garbage; the check looks through
  wrappers (`nice`, `timeout 5`, `xargs`, `sudo`, ...), `sh -c STRING`, `eval` and substitutions;
- so is a command word that is not written out (`$x`, `${x}`, `$(...)`, backticks): which program
  it runs is only known once the shell runs it, so it cannot be vetted (`dynamic_command:`);
- provider API keys (including every configured `api_key_env`) are scrubbed from the child's
  environment here as well as in the runtime, so a direct call with an unscrubbed context is just
  as safe.

When the workspace carries a CommandHost (lich_core.workspace: the ACP face's, when the client
offers `terminal/*`), a call without `input` and without `separate_streams` runs there instead:
the same refusal of interactive programs, the same timeout and cancellation (the host kills the
command), the provider-key names removed from the host's environment, PAGER=cat, and the same
output cap, except that the host keeps the newest output (ACP clients truncate from the start).
The result reads like a local one (`[exit N]`, `timeout:`, `cancelled`); details say
`runner: editor_terminal`. The process rules above are the host's business then.
"""

from __future__ import annotations

import asyncio
import codecs
import os
import shutil
import signal
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lich_core.errors import ToolError
from lich_core.shell import dynamic_command_word, simple_commands
from lich_core.tools.arguments import alias_property, pick_alias, reject_unknown_arguments
from lich_core.tools.executor import TERMINAL_TOOL_TIMEOUT_MS
from lich_core.tools.guard import (
    capture_errors,
    optional_bool_arg,
    optional_int_arg,
    optional_string_arg,
    relative_to_root,
    require_string_arg,
    resolve_safe_path,
    truncation_marker,
)
from lich_core.tools.processes import kill_process_group, tool_process_env
from lich_core.tools.reaper import CallReaper
from lich_core.tools.secrets import SCRUBBED_ENV_NAMES, configured_key_env_names, scrubbed_env
from lich_core.tools.types import FunctionTool, ToolContext
from lich_core.vocabulary import ToolResult
from lich_core.workspace import CommandHost, CommandRequest, command_host

TERMINAL_MAX_OUTPUT_CHARS = 50_000
MAX_COMMAND_TIMEOUT_MS = 300_000
# After the call's processes are killed, how long to keep reading for output already in the pipe.
# Only a process that escaped both the group and the reaper can hold the pipe open past this.
DRAIN_GRACE_MS = 2_000
# Shells the `shell` argument (kli's) may name; each must be on the command's PATH.
ALLOWED_SHELLS = ("bash", "sh", "zsh", "dash")
DEFAULT_SHELL = "bash"
TIMEOUT_NAMES = "timeout is in seconds (kli's name), timeout_ms in milliseconds (lich's)"
# Section headers of `separate_streams: true` output.
STDOUT_HEADER = "[stdout]"
STDERR_HEADER = "[stderr]"
# Room for the truncation notes, the stream headers and the `[exit N]` line on top of the capped text.
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


# Defaults that keep well-behaved programs from paging even if something allocates a terminal.
NON_INTERACTIVE_ENV_DEFAULTS: Mapping[str, str] = {"PAGER": "cat", "GIT_PAGER": "cat"}


# --- interactive-program and dynamic-command refusals ---


def _first_interactive(command: str) -> str | None:
    for simple in simple_commands(command):
        if simple.program in INTERACTIVE_PROGRAMS:
            return simple.program
    return None


def interactive_refusal(command: str) -> str | None:
    """The `interactive_command:` error for a command that would start an interactive program.

    Looks at every simple command, through wrappers (`nice`, `timeout 5`, `xargs`, `sudo -u x`,
    `env A=1`, ...), shells' `-c STRING`, `eval`, substitutions and wrapper options that take a
    command line.
    """
    name = _first_interactive(command)
    if name is None:
        return None
    return (
        f"interactive_command: {name} needs an interactive terminal, which this tool does not "
        f"have (nothing was run); instead, {INTERACTIVE_PROGRAMS[name]}"
    )


def dynamic_refusal(command: str) -> str | None:
    """The `dynamic_command:` error for a command whose program cannot be known before it runs:
    such a word cannot be vetted for interactive programs (`x=vim; $x` would wait for a terminal
    until the timeout)."""
    word = dynamic_command_word(command)
    if word is None:
        return None
    return (
        f"dynamic_command: cannot tell which program {word} runs (its name comes from a variable, "
        "a substitution or backticks), so it cannot be checked for interactive programs (nothing "
        "was run); name the program directly: variables and substitutions are fine in its arguments"
    )


# --- settings ---


def default_command_timeout_ms(ctx: ToolContext) -> int:
    """The context's terminal_timeout_ms (config's, through the runtime), kept within 1..MAX."""
    return max(1, min(ctx.terminal_timeout_ms, MAX_COMMAND_TIMEOUT_MS))


# --- running ---


class _OutputSink(asyncio.SubprocessProtocol):
    """Collects output up to a cap shared by the streams; everything past it is only counted.

    Merged (the default), stderr is the same pipe as stdout (fd 1). Separate, fd 1 and fd 2 are
    kept apart, each with its own decoder, and the output counts as closed once both are.
    """

    def __init__(
        self, loop: asyncio.AbstractEventLoop, max_chars: int, *, separate: bool = False
    ) -> None:
        self.max_chars = max_chars
        self.fds = (1, 2) if separate else (1,)
        self.decoders = {
            fd: codecs.getincrementaldecoder("utf-8")(errors="replace") for fd in self.fds
        }
        self.parts: dict[int, list[str]] = {fd: [] for fd in self.fds}
        self.omitted: dict[int, int] = dict.fromkeys(self.fds, 0)
        self.open_fds = set(self.fds)
        self.kept_chars = 0
        self.exited: asyncio.Future[None] = loop.create_future()
        self.output_closed: asyncio.Future[None] = loop.create_future()

    @property
    def omitted_chars(self) -> int:
        return sum(self.omitted.values())

    def pipe_data_received(self, fd: int, data: bytes) -> None:
        if fd in self.decoders:
            self._add(fd, self.decoders[fd].decode(data))

    def _add(self, fd: int, text: str) -> None:
        room = self.max_chars - self.kept_chars
        if room > 0:
            kept = text[:room]
            self.parts[fd].append(kept)
            self.kept_chars += len(kept)
        self.omitted[fd] += max(0, len(text) - max(room, 0))

    def pipe_connection_lost(self, fd: int, exc: Exception | None) -> None:
        self.open_fds.discard(fd)
        if not self.open_fds and not self.output_closed.done():
            self.output_closed.set_result(None)

    def process_exited(self) -> None:
        if not self.exited.done():
            self.exited.set_result(None)

    def text(self, fd: int = 1) -> str:
        self._add(fd, self.decoders[fd].decode(b"", final=True))
        return "".join(self.parts[fd])


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


def _stream_text(sink: _OutputSink, fd: int) -> str:
    text = sink.text(fd)
    if sink.omitted[fd]:
        text += ("" if text.endswith("\n") else "\n") + truncation_marker(sink.omitted[fd])
    if text and not text.endswith("\n"):
        text += "\n"
    return text


def _compose_output(sink: _OutputSink, trailer: str) -> str:
    if sink.fds == (1,):
        return _stream_text(sink, 1) + trailer
    # Separate streams: both headers always, so an empty stream reads as empty, not as missing.
    return (
        f"{STDOUT_HEADER}\n{_stream_text(sink, 1)}{STDERR_HEADER}\n{_stream_text(sink, 2)}{trailer}"
    )


def _timeout_ms(args: dict[str, Any], ctx: ToolContext) -> int:
    """The command's limit in ms from `timeout_ms` (lich) or `timeout` in seconds (kli), kept in 1..MAX."""
    name = pick_alias(args, "timeout_ms", "timeout", why=TIMEOUT_NAMES)
    if name == "timeout":
        value = args["timeout"]
        seconds: float | None = None
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            seconds = float(value)
        elif isinstance(value, str):
            try:
                seconds = float(value.strip())
            except ValueError:
                seconds = None
        if seconds is not None and seconds == seconds and abs(seconds) != float("inf"):
            return max(1, min(int(seconds * 1000), MAX_COMMAND_TIMEOUT_MS))
    timeout_ms = optional_int_arg(
        args, "timeout_ms", default_command_timeout_ms(ctx), low=1, high=MAX_COMMAND_TIMEOUT_MS
    )
    assert timeout_ms is not None
    return timeout_ms


def resolve_shell(value: str | None, env: Mapping[str, str]) -> str:
    """The shell binary to run the command with: `value` (kli's `shell`), else bash.

    Only ALLOWED_SHELLS, by name or by a path to the same binary PATH finds for that name;
    PATH is the command's own (the context env's), so what runs is what `command -v` would say.
    """
    if value is None:
        return DEFAULT_SHELL
    name = os.path.basename(value.strip())
    if name not in ALLOWED_SHELLS:
        raise ToolError(
            f"invalid_shell: {value!r} is not allowed (use one of: {', '.join(ALLOWED_SHELLS)})"
        )
    found = shutil.which(name, path=env.get("PATH") or os.defpath)
    if found is None:
        raise ToolError(
            f"shell_not_found: {name} is not on PATH (allowed: {', '.join(ALLOWED_SHELLS)})"
        )
    if "/" in value:
        try:
            same = os.path.samefile(value.strip(), found)
        except OSError:
            same = False
        if not same:
            raise ToolError(
                f"invalid_shell: {value!r} is not the {name} on PATH ({found}); give the name {name!r}"
            )
    return DEFAULT_SHELL if name == DEFAULT_SHELL and "/" not in value else found


@capture_errors
async def run_terminal(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    reject_unknown_arguments(TOOL.parameters, args)
    command = require_string_arg(args, "command")
    refusal = interactive_refusal(command) or dynamic_refusal(command)
    if refusal:
        return ToolResult(ok=False, error=refusal)
    timeout_ms = _timeout_ms(args, ctx)
    separate = optional_bool_arg(args, "separate_streams", False)
    cwd = _working_dir(ctx, optional_string_arg(args, "directory"))
    stdin_text = args.get("input") if isinstance(args.get("input"), str) else None
    env = tool_process_env(ctx)
    for key, value in NON_INTERACTIVE_ENV_DEFAULTS.items():
        env.setdefault(key, value)
    shell = resolve_shell(optional_string_arg(args, "shell"), env)

    if ctx.cancel.cancelled:
        return ToolResult(ok=False, error="cancelled")
    host = command_host(ctx.workspace)
    # A host's terminal has no stdin and one merged stream: those calls stay local.
    if host is not None and stdin_text is None and not separate:
        return await _run_on_host(host, command, shell, timeout_ms, cwd, ctx)
    reaper = CallReaper()
    reaper.start()  # Linux: from here on, orphans of the command re-parent to this process
    try:
        run = _Run(command, shell, timeout_ms, cwd, stdin_text, separate)
        return await _run_command(run, reaper.mark(env), reaper, ctx)
    finally:
        reaper.release()


@dataclass(frozen=True)
class _Run:
    """What one call runs: the command line, its shell and how."""

    command: str
    shell: str
    timeout_ms: int
    cwd: Path
    stdin_text: str | None
    separate: bool


async def _run_command(
    run: _Run, env: dict[str, str], reaper: CallReaper, ctx: ToolContext
) -> ToolResult:
    timeout_ms, cwd, stdin_text = run.timeout_ms, run.cwd, run.stdin_text
    loop = asyncio.get_running_loop()
    sink = _OutputSink(loop, TERMINAL_MAX_OUTPUT_CHARS, separate=run.separate)
    transport, _ = await reaper.started(
        loop.subprocess_exec(
            lambda: sink,
            run.shell,
            "-lc",
            run.command,
            stdin=subprocess.PIPE if stdin_text is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE if run.separate else subprocess.STDOUT,
            cwd=str(cwd),
            env=env,
            start_new_session=True,  # pid == pgid: one killpg reaches every descendant that stays
        )
    )
    pgid = transport.get_pid()
    reaper.spawned(pgid)
    unsubscribe = ctx.cancel.on_cancel(lambda: kill_process_group(pgid))
    if stdin_text is not None:
        stdin = transport.get_pipe_transport(0)
        if isinstance(stdin, asyncio.WriteTransport):
            try:
                stdin.write(stdin_text.encode("utf-8"))
                stdin.write_eof()
            except (BrokenPipeError, ConnectionResetError, RuntimeError):
                pass  # the command exited without reading its input; that is its business
    cancel_wait = asyncio.ensure_future(ctx.cancel.wait())
    finished = False
    try:
        await asyncio.wait(
            {sink.exited, cancel_wait},
            timeout=timeout_ms / 1000,
            return_when=asyncio.FIRST_COMPLETED,
        )
        finished = True
        # Decide now: killing the group below makes the process exit, which must not read as
        # a normal exit (137) once the deadline or a cancellation has fired.
        cancelled = ctx.cancel.cancelled
        exited = sink.exited.done() and not cancelled
    finally:
        kill_process_group(pgid)
        # Then everything that left the group: `setsid` daemons, double forks (Linux; reaper.py).
        reaper.kill_leftovers()
        reaper.release()  # nothing of this call is alive any more: stop adopting orphans
        unsubscribe()
        cancel_wait.cancel()
        if not finished:  # task cancelled: no more awaiting, just release the pipes
            reaper.reap_now()
            transport.close()
    try:
        await asyncio.wait_for(asyncio.shield(sink.output_closed), DRAIN_GRACE_MS / 1000)
    except asyncio.TimeoutError:
        pass  # a process we could not kill still holds the pipe; stop reading it
    transport.close()
    await reaper.reap()

    status = _exit_status(transport.get_returncode()) if exited else None
    details: dict[str, Any] = {
        "exit_code": status,
        "directory": relative_to_root(ctx.work_dir, cwd),
        "truncated_chars": sink.omitted_chars,
        "timeout_ms": timeout_ms,
    }
    if run.shell != DEFAULT_SHELL:
        details["shell"] = run.shell
    if cancelled:
        output = _compose_output(sink, "[cancelled; its processes were killed]")
        return ToolResult(ok=False, output=output, error="cancelled", details=details)
    if not exited:
        details["timed_out"] = True
        output = _compose_output(
            sink, f"[timeout after {timeout_ms} ms; its processes were killed]"
        )
        return ToolResult(
            ok=False,
            output=output,
            error=f"timeout: command exceeded {timeout_ms} ms",
            details=details,
        )
    output = _compose_output(sink, f"[exit {status}]")
    if status != 0:
        return ToolResult(ok=False, output=output, error=f"exit_code: {status}", details=details)
    return ToolResult(ok=True, output=output, details=details)


# --- through a CommandHost (an ACP client's terminal) ---

# The host keeps output in its own unit (ACP: bytes, the newest kept); this many of them.
HOST_OUTPUT_LIMIT = TERMINAL_MAX_OUTPUT_CHARS
HOST_TRUNCATED_MARKER = "[... earlier output dropped by the editor's terminal ...]"


def removed_env_names(ctx: ToolContext) -> tuple[str, ...]:
    """The variables the local run scrubs (provider keys), for a host to remove from its own env.

    The host's environment is not ours to read (an editor's), so these are the fixed names, the
    configured key names, and the names of this process's environment (which the host's mostly
    is: it started us) and of the context's that the scrubbing drops.
    """
    configured = configured_key_env_names(ctx.settings)
    candidates = set(os.environ) | set(ctx.env)
    kept = scrubbed_env(dict.fromkeys(candidates, ""), configured)
    names = (candidates - set(kept)) | SCRUBBED_ENV_NAMES | configured
    return tuple(sorted(names))


def _signal_status(name: str | None) -> int | None:
    if not name:
        return None
    try:
        return 128 + int(signal.Signals[name if name.startswith("SIG") else f"SIG{name}"])
    except KeyError:
        return None


async def _run_on_host(
    host: CommandHost, command: str, shell: str, timeout_ms: int, cwd: Path, ctx: ToolContext
) -> ToolResult:
    request = CommandRequest(
        shell=shell,
        command=command,
        cwd=cwd,
        env=dict(NON_INTERACTIVE_ENV_DEFAULTS),
        unset_env=removed_env_names(ctx),
        timeout_ms=timeout_ms,
        output_limit=HOST_OUTPUT_LIMIT,
    )
    try:
        outcome = await host.run_command(request, ctx.cancel)
    except ToolError:
        raise
    except Exception as err:  # noqa: BLE001 - the host's failure, as the tool's error
        raise ToolError(
            f"terminal_error: the editor's terminal failed: {err or type(err).__name__}"
        ) from err
    text = outcome.output
    omitted = max(0, len(text) - TERMINAL_MAX_OUTPUT_CHARS)  # a host that ignored the limit
    if omitted:
        text = text[:TERMINAL_MAX_OUTPUT_CHARS] + "\n" + truncation_marker(omitted)
    if outcome.truncated:
        text = f"{HOST_TRUNCATED_MARKER}\n{text}"
    if text and not text.endswith("\n"):
        text += "\n"
    status = outcome.exit_code if outcome.exit_code is not None else _signal_status(outcome.signal)
    details: dict[str, Any] = {
        "exit_code": status if outcome.ended == "exited" else None,
        "directory": relative_to_root(ctx.work_dir, cwd),
        "truncated_chars": omitted,
        "timeout_ms": timeout_ms,
        "runner": "editor_terminal",
        "terminal_id": outcome.terminal_id,
    }
    if outcome.truncated:
        details["truncated_by_editor"] = True
    if outcome.signal:
        details["signal"] = outcome.signal
    if shell != DEFAULT_SHELL:
        details["shell"] = shell
    if outcome.ended == "cancelled":
        return ToolResult(
            ok=False,
            output=text + "[cancelled; the command was killed]",
            error="cancelled",
            details=details,
        )
    if outcome.ended == "timeout":
        details["timed_out"] = True
        return ToolResult(
            ok=False,
            output=text + f"[timeout after {timeout_ms} ms; the command was killed]",
            error=f"timeout: command exceeded {timeout_ms} ms",
            details=details,
        )
    if status is None:
        return ToolResult(
            ok=False, output=text + "[exit unknown]", error="exit_code: unknown", details=details
        )
    output = text + f"[exit {status}]"
    if status != 0:
        return ToolResult(ok=False, output=output, error=f"exit_code: {status}", details=details)
    return ToolResult(ok=True, output=output, details=details)


TOOL = FunctionTool(
    name="terminal",
    description=(
        "Run a bash -lc command in the work dir: output (max 50,000 chars) and [exit N]; fails unless 0. No tty: interactive programs are refused."
    ),
    parameters={
        "type": "object",
        "properties": {
            "command": {
                "type": "string",
            },
            "timeout_ms": {
                "type": "integer",
                "minimum": 1,
                "maximum": MAX_COMMAND_TIMEOUT_MS,
            },
            "timeout": alias_property(
                {
                    "type": "number",
                    "exclusiveMinimum": 0,
                    "maximum": MAX_COMMAND_TIMEOUT_MS // 1000,
                },
                harness="kli",
                of="timeout_ms",
                description="In seconds.",
            ),
            "shell": {
                "type": "string",
                "enum": list(ALLOWED_SHELLS),
                "description": "kli's option.",
            },
            "separate_streams": {
                "type": "boolean",
            },
            "input": {
                "type": "string",
                "description": "Stdin.",
            },
            "directory": {
                "type": "string",
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
