"""The input line of `lich chat` (prompt_toolkit): keys, history, completion, the status line.

Enter sends; Alt+Enter (and Shift+Enter where the terminal reports it, as CSI 27;2;13~ or
CSI 13;2u) adds a line. Up/Down walk the history: this thread's prompts first (newest first),
then the first prompts of the workspace's other threads. `@` completes the workspace's paths (the
editors' mention candidates), `/` the commands. While a question waits, y, a and n answer it.
Escape or Ctrl-C stops a running turn; at an empty prompt a second Ctrl-C quits; Ctrl-D quits.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any

from prompt_toolkit import PromptSession
from prompt_toolkit.completion import Completer, Completion, ThreadedCompleter
from prompt_toolkit.document import Document
from prompt_toolkit.filters import Condition
from prompt_toolkit.formatted_text import HTML
from prompt_toolkit.history import History
from prompt_toolkit.input.ansi_escape_sequences import ANSI_SEQUENCES
from prompt_toolkit.key_binding import KeyBindings
from prompt_toolkit.keys import Keys

from lich_cli.chat.commands import COMMANDS
from lich_core.agent.sessions import SessionError

if TYPE_CHECKING:
    from prompt_toolkit.key_binding import KeyPressEvent

    from lich_cli.chat.session import ChatSession

QUIT = "\x00quit"  # what the prompt returns when a key asked to leave (never typed text)
RESTART = "\x00restart"  # ... when the thread changed: a new prompt, with that thread's history
MENTION_COMPLETIONS = 50
HISTORY_OTHER_THREADS = 200
REFRESH_S = 0.1  # the spinner's frame
# Shift+Enter as the terminals that report it send it: a new line, not a send. prompt_toolkit
# reads the first as Enter and knows no key for it, so both are read as a key nothing else
# uses. (Not Ctrl-J: a line typed before the prompt is up arrives with the terminal's cooked
# mode's Enter, a Ctrl-J, and must be sent, not joined to the next one.)
SHIFT_ENTER_SEQUENCES = ("\x1b[27;2;13~", "\x1b[13;2u")
SHIFT_ENTER = Keys.F24


class Controls:
    """What the keys act on (lich_cli.chat.tty.Terminal implements it)."""

    quit_armed = False  # Ctrl-C was pressed once at an empty prompt (a submission disarms it)

    def running(self) -> bool:
        raise NotImplementedError

    def stop_turn(self) -> None:
        raise NotImplementedError

    def question_pending(self) -> bool:
        raise NotImplementedError

    def answer(self, key: str) -> None:
        raise NotImplementedError

    def note(self, text: str) -> None:
        raise NotImplementedError

    def status(self) -> str:
        raise NotImplementedError


class ThreadHistory(History):
    """The prompts Up walks: the current thread's, newest first, then other threads' first ones."""

    def __init__(self, session: ChatSession) -> None:
        super().__init__()
        self.session = session

    def load_history_strings(self) -> Iterable[str]:
        store = self.session.store
        own: list[str] = []
        if self.session.thread is not None:
            try:
                _, replay = store.replay(self.session.thread)
                own = [turn.prompt for turn in replay.live_turns() if turn.prompt]
            except SessionError:
                own = []
        seen = set(own)
        yield from reversed(own)
        try:
            infos = store.list()[:HISTORY_OTHER_THREADS]
        except (OSError, SessionError):
            return
        for info in infos:
            if info.session_id != self.session.thread and info.title and info.title not in seen:
                seen.add(info.title)
                yield info.title

    def store_string(self, string: str) -> None:
        pass  # the prompts are kept in the threads themselves


class ChatCompleter(Completer):
    """`/` at the start: the commands; a word starting with `@`: the workspace's paths."""

    def __init__(self, candidates: Callable[[str], list[str]]) -> None:
        self.candidates = candidates

    def get_completions(self, document: Document, complete_event: Any) -> Iterator[Completion]:
        before = document.text_before_cursor
        if before.startswith("/") and " " not in before:
            for command in COMMANDS:
                if command.name.startswith(before):
                    yield Completion(command.name, -len(before), display_meta=command.help)
            return
        word = document.get_word_before_cursor(WORD=True)
        if word.startswith("@"):
            for path in self.candidates(word[1:]):
                yield Completion("@" + path, -len(word))


def mention_completions(session: ChatSession) -> Callable[[str], list[str]]:
    def candidates(prefix: str) -> list[str]:
        from lich_core.agent.mentions import mention_candidates

        return mention_candidates(session.root, prefix, limit=MENTION_COMPLETIONS)

    return candidates


def key_bindings(controls: Controls) -> KeyBindings:
    bindings = KeyBindings()
    asking = Condition(controls.question_pending)
    empty = Condition(lambda: _buffer_empty())

    def _buffer_empty() -> bool:
        from prompt_toolkit.application.current import get_app

        return not get_app().current_buffer.text

    @bindings.add("escape", "enter")
    @bindings.add(SHIFT_ENTER)
    def _newline(event: KeyPressEvent) -> None:
        event.current_buffer.insert_text("\n")

    for key in ("y", "a", "n", "Y", "A", "N"):

        @bindings.add(key, filter=asking & empty)
        def _answer(event: KeyPressEvent) -> None:
            controls.answer(event.data.lower())

    @bindings.add("escape")
    def _escape(event: KeyPressEvent) -> None:
        if controls.running():
            controls.stop_turn()
        elif controls.question_pending():
            controls.answer("n")  # a rewind's question: Escape is no

    @bindings.add("c-c")
    def _interrupt(event: KeyPressEvent) -> None:
        buffer = event.current_buffer
        if controls.running():
            controls.quit_armed = False
            controls.stop_turn()
        elif controls.question_pending():
            controls.answer("n")
        elif buffer.text:
            controls.quit_armed = False
            buffer.reset()
        elif controls.quit_armed:
            event.app.exit(result=QUIT)
        else:
            controls.quit_armed = True
            controls.note("Ctrl-C again (or Ctrl-D) to quit")

    @bindings.add("c-d")
    def _eof(event: KeyPressEvent) -> None:
        buffer = event.current_buffer
        if buffer.text:
            buffer.delete()
        else:
            event.app.exit(result=QUIT)

    return bindings


def prompt_session(session: ChatSession, controls: Controls) -> PromptSession[str]:
    for sequence in SHIFT_ENTER_SEQUENCES:
        ANSI_SEQUENCES[sequence] = SHIFT_ENTER
    return PromptSession(
        message=HTML("<ansicyan><b>›</b></ansicyan> "),
        prompt_continuation="  ",
        # Loaded right after the first draw, before any key is read (a task the draw starts),
        # so an Up pressed at once finds it: not in a thread, which an Up could overtake.
        history=ThreadHistory(session),
        completer=ThreadedCompleter(ChatCompleter(mention_completions(session))),
        complete_while_typing=True,
        key_bindings=key_bindings(controls),
        bottom_toolbar=lambda: controls.status(),
        enable_history_search=False,
    )
