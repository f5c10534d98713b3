"""`lich-lsp` / `python -m lich_lsp`: start the language server.

An editor starts it with pipes on stdin and stdout. Someone who types `lich-lsp` in a terminal
gets one line on stderr saying what it waits for, and Ctrl-C ends it with status 0: nothing was
going on, so quitting is not a failure.
"""

from __future__ import annotations

import os
import signal
import sys
from types import FrameType

WAITING_LINE = (
    "lich-lsp: waiting for an editor on stdin (editors start it themselves; to see lich work, "
    "run `lich demo`); Ctrl-C to quit"
)
SOCKET_FLAGS = ("--tcp", "--ws")


def talks_on_a_terminal(argv: list[str]) -> bool:
    """stdio transport (no --tcp/--ws) with a terminal on stdin."""
    if any(arg in SOCKET_FLAGS for arg in argv):
        return False
    try:
        return os.isatty(sys.stdin.fileno())
    except (AttributeError, ValueError, OSError):
        return False  # stdin closed or replaced by something without a descriptor


def _quit_quietly(signum: int, frame: FrameType | None) -> None:
    # The server's stdin reader thread blocks on the terminal, so a normal shutdown would wait
    # for a line that never comes: leave at once (no editor, so nothing is left half done).
    try:
        sys.stderr.write("\n")
        sys.stderr.flush()
    finally:
        os._exit(0)


def main(argv: list[str] | None = None) -> int:
    from lich_core.startup import quiet_start

    with quiet_start():
        from lich_lsp.server import run

    args = sys.argv[1:] if argv is None else argv
    if talks_on_a_terminal(args) and not any(arg in ("-h", "--help", "--version") for arg in args):
        signal.signal(signal.SIGINT, _quit_quietly)  # before the line: Ctrl-C may follow it at once
        print(WAITING_LINE, file=sys.stderr, flush=True)
    return run(argv)


if __name__ == "__main__":
    raise SystemExit(main())
