"""Run the `lich` CLI inside the test process, as `python -m lich_cli ARGS` would run it.

A subprocess costs an interpreter start and every import (0.3-1 s a call on a loaded 2-core
machine); `run_lich` calls `lich_cli.main.main(argv)` instead and hands back what the tests read
from a subprocess: returncode, stdout, stderr. What the child process would have had of its own
is set up for the call and put back afterwards:

- the working directory (`cwd`), and stdin: the `stdin` text, else an empty stream (a child with
  nothing piped in reads end of file);
- stdout and stderr: byte buffers behind UTF-8 text streams (not a tty, `.buffer` and `.flush()`
  work), decoded with universal newlines as `subprocess.run(text=True)` does;
- log records of WARNING and above go to that stderr, as Python's last-resort handler prints
  them in a process that configures no logging (pytest's own handlers would swallow them, and
  with them a `log.exception` traceback a test asserts is absent);
- `os.environ`: the CLI writes LICH_MODEL / LICH_PROVIDER_KIND / LICH_BASE_URL into it for the
  flags (lich_cli/agent.py apply_provider_flags), which a process would drop on exit;
- `sys.modules`: plugin modules (`lich_plugin_<index>_<stem>`, lich_core/plugins/loader.py) that
  a fresh interpreter would not have;
- SystemExit (argparse usage errors) becomes the exit code, as the interpreter would make it.

The SIGINT handler is deliberately not restored here: a CLI that leaves its handler installed
in the caller's process is a bug `test_an_in_process_run_leaves_sigint_alone` must see.

Tests whose point is the process itself (signals, a closed stdout pipe, `python -m` end to end)
use `run_lich_subprocess`, with the same result shape.
"""

from __future__ import annotations

import asyncio
import io
import logging
import os
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

SUBPROCESS_TIMEOUT_S = 60
PLUGIN_MODULE_PREFIX = "lich_plugin_"


@dataclass(frozen=True)
class CliResult:
    """What `subprocess.run(..., capture_output=True, text=True)` gives, for one `lich` call."""

    args: list[str]
    returncode: int
    stdout: str
    stderr: str
    in_process: bool = field(default=True, compare=False)


def _capture_stream() -> io.TextIOWrapper:
    # write_through: nothing is held back in the text layer when the bytes are read.
    return io.TextIOWrapper(
        io.BytesIO(), encoding="utf-8", errors="backslashreplace", write_through=True
    )


def _captured_text(stream: io.TextIOWrapper) -> str:
    stream.flush()
    raw = stream.buffer.getvalue()  # type: ignore[attr-defined]
    # Universal newlines, as a text-mode pipe reader decodes a child's output.
    return io.TextIOWrapper(
        io.BytesIO(raw), encoding="utf-8", errors="replace", newline=None
    ).read()


def _exit_code(exit: SystemExit, stderr: io.TextIOWrapper) -> int:
    """The status the interpreter gives `raise SystemExit(code)`."""
    code = exit.code
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    print(code, file=stderr)
    return 1


def run_lich(*args: str, cwd: Path | str, stdin: str | None = None) -> CliResult:
    """`lich ARGS` in `cwd`, run in this process; see the module docstring for what is isolated."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        pass
    else:
        # The CLI calls asyncio.run, which cannot nest: from an async test use
        # `await asyncio.to_thread(run_lich, ...)`.
        raise RuntimeError("run_lich called from a running event loop; use asyncio.to_thread")
    from lich_cli.main import main

    argv = [str(arg) for arg in args]
    out, err = _capture_stream(), _capture_stream()
    given_stdin = io.TextIOWrapper(io.BytesIO((stdin or "").encode("utf-8")), encoding="utf-8")
    log_handler = logging.StreamHandler(err)
    log_handler.setLevel(logging.WARNING)
    root_logger = logging.getLogger()

    saved_cwd = os.getcwd()
    saved_env = dict(os.environ)
    saved_streams = (sys.stdin, sys.stdout, sys.stderr)
    saved_modules = set(sys.modules)
    os.chdir(cwd)
    sys.stdin, sys.stdout, sys.stderr = given_stdin, out, err
    root_logger.addHandler(log_handler)
    try:
        try:
            # `python -m lich_cli` is `raise SystemExit(main())`.
            raise SystemExit(main(argv))
        except SystemExit as exit:
            returncode = _exit_code(exit, err)
    except BaseException:
        # Show what the CLI printed before it crashed, beside pytest's traceback.
        sys.stdin, sys.stdout, sys.stderr = saved_streams
        print(f"--- lich {argv} stdout ---\n{_captured_text(out)}", file=sys.stderr)
        print(f"--- lich {argv} stderr ---\n{_captured_text(err)}", file=sys.stderr)
        raise
    finally:
        root_logger.removeHandler(log_handler)
        sys.stdin, sys.stdout, sys.stderr = saved_streams
        os.chdir(saved_cwd)
        if dict(os.environ) != saved_env:
            os.environ.clear()
            os.environ.update(saved_env)
        for name in set(sys.modules) - saved_modules:
            if name.startswith(PLUGIN_MODULE_PREFIX):
                del sys.modules[name]
    return CliResult(argv, returncode, _captured_text(out), _captured_text(err))


def lich_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "lich_cli", *(str(arg) for arg in args)]


def run_lich_subprocess(*args: str, cwd: Path | str, stdin: str | None = None) -> CliResult:
    """`python -m lich_cli ARGS` as a real child process (the environment is this process's)."""
    done = subprocess.run(
        lich_command(*args),
        cwd=cwd,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=SUBPROCESS_TIMEOUT_S,
        env=os.environ.copy(),
    )
    return CliResult(list(done.args), done.returncode, done.stdout, done.stderr, in_process=False)
