"""The slash commands of `lich chat`, the same in a terminal and in the scripted mode.

    /new  /threads  /thread ID  /rewind N  /undo  /model [NAME]  /show N  /help  /quit

A command's problem is one line with a stable prefix (`unknown_command:`, `no_thread:`,
`no_such_turn:`, ...); nothing here raises to the loop.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Protocol

from lich_cli.chat.session import ChatSession
from lich_core.agent.sessions import InvalidThreadId, SessionError

QUIT = "quit"


@dataclass(frozen=True)
class Command:
    name: str
    usage: str
    help: str


COMMANDS = (
    Command("/new", "/new", "start a new thread with the next prompt"),
    Command("/threads", "/threads", "this workspace's threads: id, title, turns, last use"),
    Command("/thread", "/thread ID|latest", "continue another thread"),
    Command("/rewind", "/rewind N", "take back turn N and those after it (files too)"),
    Command("/undo", "/undo", "take back the last turn's file edits"),
    Command("/model", "/model [NAME]", "show the model, or use NAME from the next turn"),
    Command("/show", "/show N", "a tool call in full: arguments, result, diff"),
    Command("/help", "/help", "this list, and the keys"),
    Command("/quit", "/quit", "leave (Ctrl-D too)"),
)
COMMAND_NAMES = tuple(command.name for command in COMMANDS)

KEYS_HELP = (
    "Enter sends; Alt+Enter adds a line; Up/Down walk the history; @path attaches a file; "
    "Esc or Ctrl-C stops a turn; Ctrl-D quits"
)


class Output(Protocol):
    def info(self, text: str) -> None: ...
    def error(self, text: str) -> None: ...
    def show_call(self, number: int) -> None: ...


# The question, and the turn's prompt; True for yes.
Confirm = Callable[[str], Awaitable[bool]]


async def run_command(
    line: str, session: ChatSession, out: Output, confirm: Confirm | None
) -> str | None:
    """Run one `/command` line; QUIT when the chat should end. `confirm`: None when nothing can
    ask (the scripted mode: the line itself is the decision)."""
    name, _, rest = line.strip().partition(" ")
    rest = rest.strip()
    if name in ("/quit", "/exit"):
        return QUIT
    if name == "/help":
        width = max(len(c.usage) for c in COMMANDS)
        out.info("\n".join(f"{c.usage:<{width}}  {c.help}" for c in COMMANDS) + f"\n{KEYS_HELP}")
    elif name == "/new":
        session.thread = None
        session.last_task_id = None
        out.info("lich: a new thread starts with your next prompt")
    elif name == "/threads":
        out.info(threads_table(session))
    elif name == "/thread":
        switch_thread(session, rest, out)
    elif name == "/rewind":
        await rewind(session, rest, out, confirm)
    elif name == "/undo":
        undo(session, out)
    elif name == "/model":
        if rest:
            await session.set_model(rest)
            out.info(f"lich: model {rest} from the next turn")
        else:
            out.info(f"lich: model {session.describe_model()}")
    elif name == "/show":
        if not rest.isdigit():
            out.error("usage: /show N (the number on a tool call's line)")
        else:
            out.show_call(int(rest))
    else:
        out.error(f"unknown_command: {name} (/help lists the commands)")
    return None


def threads_table(session: ChatSession) -> str:
    infos = session.store.list()
    if not infos:
        return f"no threads in {session.store.directory}"
    lines = []
    for info in infos:
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(info.modified))
        current = "*" if info.session_id == session.thread else " "
        turns = "turn " if info.turns == 1 else "turns"
        lines.append(f"{current} {info.session_id}  {info.turns:>3} {turns}  {when}  {info.title}")
    return "\n".join(lines)


def switch_thread(session: ChatSession, ref: str, out: Output) -> None:
    if not ref:
        out.error("usage: /thread ID|latest (/threads lists them)")
        return
    try:
        thread = session.store.resolve(ref)
        _, replay = session.store.replay(thread)
    except InvalidThreadId as err:
        out.error(str(err))
        return
    except SessionError as err:
        message = str(err)
        if message.startswith("session_not_found:"):
            message = f"unknown_thread: {ref} (/threads lists them)"
        out.error(message)
        return
    session.thread = thread
    session.last_task_id = None
    live = replay.live_turns()
    title = replay.meta.get("title") or ""
    out.info(f"lich: continuing thread {thread} ({len(live)} turns): {title}")


async def rewind(session: ChatSession, arg: str, out: Output, confirm: Confirm | None) -> None:
    from lich_cli.chat.rewind import RewindError, rewind_thread, turn_to_rewind

    if session.thread is None:
        out.error("no_thread: nothing to rewind yet (this thread has no turn)")
        return
    if not arg.isdigit():
        out.error("usage: /rewind N (the turn to take back, with those after it)")
        return
    number = int(arg)
    try:
        target = turn_to_rewind(session.store, session.thread, number)
        if confirm is not None and not await confirm(
            f"Rewind turn {number} of this thread? Turn {number}: {target.prompt}"
        ):
            out.info("lich: not rewound")
            return
        outcome = rewind_thread(session.store, session.journal, session.thread, number)
    except RewindError as err:
        out.error(str(err))
        return
    if outcome.kept:
        session.notes.append(
            "The user rewound the conversation to before their request "
            f"{target.prompt[:80]!r}, but these files keep changes from the rewound turns: "
            f"{', '.join(outcome.kept)}. Read them before editing."
        )
    (out.info if outcome.ok else out.error)(outcome.message)


def undo(session: ChatSession, out: Output) -> None:
    from lich_cli.chat.rewind import RewindError, undo_task

    task_id = session.last_task_id or _last_turn_task(session)
    try:
        outcome = undo_task(session.journal, task_id)
    except RewindError as err:
        out.error(str(err))
        return
    restored = [f["path"] for f in outcome.files if f["outcome"] in ("undone", "rebased")]
    if restored:
        session.notes.append(
            f"The user took back your changes to {', '.join(restored)}; those files are as "
            "they were before. Read them again before editing them."
        )
    (out.info if outcome.ok else out.error)(outcome.message)


def _last_turn_task(session: ChatSession) -> str | None:
    if session.thread is None:
        return None
    try:
        _, replay = session.store.replay(session.thread)
    except SessionError:
        return None
    live = replay.live_turns()
    return live[-1].task_id if live else None
