"""`lich chat`: the conversation in a terminal (docs/chat.md).

    lich chat [--thread ID|latest] [--model NAME] [--work-dir DIR] [--config FILE]

In a terminal: prompt_toolkit reads the input (history, completion, keys), rich renders the
answer (markdown, code, diffs); without one (stdin not a TTY) each line of stdin is one prompt or
command and the output is plain text. The threads are the store every face uses.

Only argparse, termios and the CLI's config loading are imported here: the prompt is drawn
before prompt_toolkit loads, and the agent (providers, tools, httpx) is built in the background
once the input line is live.
"""

from __future__ import annotations

import argparse
import sys
import termios
from typing import Any

from lich_cli.common import add_common_options

EXIT_FAILED = 1


def chat_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="lich chat",
        description="Talk with the agent in the terminal; the threads are the ones every editor "
        "shows (see docs/chat.md). Without a terminal, each line of stdin is one prompt.",
    )
    add_common_options(parser)
    parser.add_argument(
        "--thread",
        default=None,
        metavar="ID|latest",
        help="continue a thread (see `lich threads`); default: a new one",
    )
    parser.add_argument("--model", default=None, help="model name for the chat provider")
    return parser


def cmd_chat(argv: list[str]) -> int:
    """`lich chat`: the terminal conversation, or the scripted mode when stdin is no terminal."""
    args = chat_parser().parse_args(argv)
    from lich_cli.chat.session import ChatSession, SessionStartError

    try:
        session = ChatSession.open(args)
    except SessionStartError as err:
        print(f"lich: {err}", file=sys.stderr)
        return EXIT_FAILED
    if sys.stdin.isatty() and sys.stdout.isatty():
        saved = early_prompt(session.greeting())
        try:
            from lich_cli.chat.tty import run_terminal

            return run_terminal(session)
        finally:
            restore_terminal(saved)
    from lich_cli.chat.script import run_script

    return run_script(session, sys.stdin, sys.stdout)


def early_prompt(greeting: str) -> list[Any] | None:
    """Print `greeting` and draw the prompt line now, while prompt_toolkit loads (~100 ms), and
    stop the terminal from echoing or cooking what is typed meanwhile: the keys wait in the
    terminal's buffer and reach the input line as they were pressed (an Enter stays an Enter,
    not a Ctrl-J). The terminal's attributes as they were, for restore_terminal; None when
    they cannot be read."""
    print(greeting, flush=True)
    fd = sys.stdin.fileno()
    try:
        saved = termios.tcgetattr(fd)
        quiet = termios.tcgetattr(fd)
        quiet[0] &= ~termios.ICRNL  # iflag
        quiet[3] &= ~(termios.ECHO | termios.ICANON)  # lflag
        termios.tcsetattr(fd, termios.TCSANOW, quiet)
    except termios.error:
        return None
    # The line prompt_toolkit draws over, from its start ("\r"), as soon as it is up.
    sys.stdout.write("\x1b[1;36m›\x1b[0m \r")
    sys.stdout.flush()
    return saved


def restore_terminal(saved: list[Any] | None) -> None:
    if saved is not None:
        try:
            termios.tcsetattr(sys.stdin.fileno(), termios.TCSADRAIN, saved)
        except termios.error:
            pass  # the terminal is gone
