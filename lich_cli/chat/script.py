"""`lich chat` without a terminal: one prompt (or /command) per line of stdin, plain text out.

    printf 'explain @src/app.py\\n/threads\\n' | lich chat

Each line runs to its end before the next is read; a line ending in a backslash continues on the
next one (a prompt of several lines). Nothing can be asked here, so tool approvals follow the
one-shot command line (lich_core.approvals.CliApprovalCheck: an "ask" entry of the `approval`
key refuses, saying what would have run). A /rewind is done without a question: the line is the
decision. Exit status 0, or 1 when a turn failed (an error, no provider).
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Iterator
from typing import TextIO

from lich_cli.chat.commands import QUIT, run_command
from lich_cli.chat.render import PlainView
from lich_cli.chat.session import AgentUnavailable, ChatSession
from lich_core.approvals import CliApprovalCheck
from lich_core.vocabulary import CancelToken


def run_script(session: ChatSession, stdin: TextIO, stdout: TextIO) -> int:
    session.call_check = CliApprovalCheck(session.config.settings.approval)
    return asyncio.run(_run(session, stdin, stdout))


def prompts(stdin: TextIO) -> Iterator[str]:
    """The prompts of `stdin`: one per line, a trailing backslash joining the next line."""
    held: list[str] = []
    for raw in stdin:
        line = raw.rstrip("\n")
        if line.endswith("\\"):
            held.append(line[:-1])
            continue
        text = "\n".join([*held, line]).strip()
        held = []
        if text:
            yield text
    if held and "\n".join(held).strip():
        yield "\n".join(held).strip()


async def _run(session: ChatSession, stdin: TextIO, stdout: TextIO) -> int:
    view = PlainView(session.root, stdout, sys.stderr)
    failed = False
    try:
        for text in prompts(stdin):
            if text.startswith("/"):
                if await run_command(text, session, view, None) == QUIT:
                    break
                continue
            failed = not await _turn(session, view, text) or failed
    finally:
        await session.close()
    if session.thread is not None:
        print(f"lich: thread {session.thread}", file=sys.stderr)
    return 1 if failed else 0


async def _turn(session: ChatSession, view: PlainView, text: str) -> bool:
    view.begin_turn()
    try:
        outcome = await session.run_turn(
            text,
            on_event=view.on_event,
            on_changes=view.on_changes,
            cancel=CancelToken(),
            on_note=view.error,
        )
    except AgentUnavailable as err:
        view.error(f"lich: error: {err}")
        return False
    return outcome.stopped_reason == "final"
