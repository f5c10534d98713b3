"""`lich chat`: the conversation in a terminal (docs/chat.md).

    lich chat [--thread ID|latest] [--model NAME] [--work-dir DIR] [--config FILE]

In a terminal: prompt_toolkit reads the input (history, completion, keys), rich renders the
answer (markdown, code, diffs); without one (stdin not a TTY) each line of stdin is one prompt or
command and the output is plain text. The threads are the store every face uses.

Only argparse and the CLI's config loading are imported here: the prompt must be on screen
before the agent (providers, tools, httpx) is built, which happens in the background.
"""

from __future__ import annotations

import argparse
import sys

from lich_cli.common import add_common_options

EXIT_OK = 0
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
        from lich_cli.chat.tty import run_terminal

        return run_terminal(session)
    from lich_cli.chat.script import run_script

    return run_script(session, sys.stdin, sys.stdout)
