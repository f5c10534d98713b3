"""`lich chat` in a terminal: the prompt stays on screen while turns run below it.

The input line (lich_cli.chat.input) is always there: a line sent while a turn runs is queued
(shown as such) and sent when the turn ends; one worker runs the lines in order, prompts as turns
and `/commands`. Output goes above the prompt (prompt_toolkit's patch_stdout), rendered by
lich_cli.chat.render. The agent is built in a worker thread once the prompt is up, so the first
keystrokes never wait for the providers' and tools' imports. An approval or a rewind's question
is answered with a single key (y, a, n); stopping the turn answers it "no".
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

from lich_cli.chat.commands import QUIT as QUIT_COMMAND
from lich_cli.chat.commands import run_command
from lich_cli.chat.input import QUIT, REFRESH_S, RESTART, Controls, prompt_session
from lich_cli.chat.session import AgentUnavailable, ChatSession

SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
STATUS_TEXT_CHARS = 60
LEAVE = "\x00leave"  # the worker's last line
# How long leaving waits for a stopped turn to end (the providers stop on the token at once).
LEAVE_GRACE_S = 5.0
ANSWER_KEYS = {"y": "y", "yes": "y", "a": "a", "always": "a", "n": "n", "no": "n"}


def run_terminal(session: ChatSession) -> int:
    return asyncio.run(Terminal(session).run())


class Terminal(Controls):
    def __init__(self, session: ChatSession) -> None:
        self.session = session
        # (the line, whether it waited for a turn to end)
        self.queue: asyncio.Queue[tuple[str, bool]] = asyncio.Queue()
        self.busy = False  # the worker runs a line (a turn or a command)
        self.turn_running = False
        self.cancel: Any = None  # the running turn's CancelToken
        self.question: asyncio.Future[str] | None = None
        self.question_keys = ""
        self.view: Any = None
        self.leaving = False
        self.prompt = prompt_session(session, self)
        self._carry = ""  # the line being typed when the prompt was made again
        self._restarted: asyncio.Event | None = None  # set once the new prompt is drawn

    # --- Controls (the keys) ---

    def running(self) -> bool:
        return self.turn_running

    def stop_turn(self) -> None:
        if self.cancel is not None and not self.cancel.cancelled:
            self.cancel.cancel("stopped by the user")
            self.note("stopping the turn")
        self.answer("n")

    def question_pending(self) -> bool:
        return self.question is not None and not self.question.done()

    def answer(self, key: str) -> None:
        question = self.question
        if question is not None and not question.done() and key in self.question_keys:
            question.set_result(key)

    def note(self, text: str) -> None:
        if self.view is not None:
            self.view.console.print(f"[dim]lich: {text}[/dim]")

    def status(self) -> str:
        queued = self.queue.qsize()
        tail = f" · {queued} queued" if queued else ""
        if self.question_pending():
            return f" answer with {'/'.join(self.question_keys)}{tail}"
        view = self.view
        if self.turn_running and view is not None:
            if view.waiting_since is not None:
                elapsed = time.monotonic() - view.waiting_since
                frame = SPINNER[int(elapsed * 10) % len(SPINNER)]
                return f" {frame} waiting for the model · {elapsed:.1f} s · Esc stops{tail}"
            pending = " ".join(view.pending_text().split())[-STATUS_TEXT_CHARS:]
            return f" ▍{pending} · Esc stops{tail}"
        thread = self.session.thread or "new thread"
        return f" {thread} · /help · Ctrl-D quits{tail}"

    # --- questions ---

    async def ask(self, question: str, scope: str) -> str:
        """An approval: y (once), a (always, for `scope`) or n."""
        return await self._ask(question, f"y allow once · a always ({scope}) · n deny", "yan")

    async def confirm(self, question: str) -> bool:
        return await self._ask(question, "y yes · n no", "yn") == "y"

    async def _ask(self, question: str, answers: str, keys: str) -> str:
        self.view.show_question(question, answers)
        future: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        self.question, self.question_keys = future, keys
        try:
            return await future
        finally:
            self.question = None

    # --- the loop ---

    async def run(self) -> int:
        from prompt_toolkit.patch_stdout import patch_stdout

        session = self.session
        started: list[asyncio.Future[None]] = []

        def after_render(_app: object) -> None:
            # Once the prompt is drawn: the renderer, the approvals and, in a worker thread,
            # the agent's imports and build, while the user types the first prompt.
            if not started:
                self._set_up()
                started.append(asyncio.get_running_loop().run_in_executor(None, session.prepare))

        self.prompt.app.after_render += after_render
        with patch_stdout(raw=True):
            worker = asyncio.create_task(self._work())
            ticker = asyncio.create_task(self._tick())
            try:
                while not self.leaving:
                    text = await self.prompt.prompt_async(default=self._carry)
                    self._carry = ""
                    if text == QUIT:
                        break
                    if text == RESTART:
                        self.prompt = prompt_session(session, self)
                        self.prompt.app.after_render += self._redrawn
                        continue
                    self.quit_armed = False
                    if not self._submit(text.strip()):
                        break
            finally:
                await self._leave(worker)
                ticker.cancel()
                await asyncio.gather(ticker, *started, return_exceptions=True)
                await session.close()
        if session.thread is not None:
            print(
                f"lich: thread {session.thread} (continue with: lich chat --thread {session.thread})"
            )
        return 0

    async def _leave(self, worker: asyncio.Task[None]) -> None:
        """Stop the running turn and let it end as a stopped turn does (its end is recorded in
        the thread), within LEAVE_GRACE_S; the queued lines are dropped."""
        self.leaving = True
        while not self.queue.empty():
            self.queue.get_nowait()
        self.queue.put_nowait((LEAVE, False))
        self.stop_turn()
        try:
            await asyncio.wait_for(asyncio.shield(worker), LEAVE_GRACE_S)
        except (asyncio.TimeoutError, Exception):  # noqa: BLE001 - leaving all the same
            worker.cancel()
            await asyncio.gather(worker, return_exceptions=True)

    async def _tick(self) -> None:
        """Redraw the status line's spinner and seconds while a turn runs (idle, nothing moves)."""
        while True:
            await asyncio.sleep(REFRESH_S)
            if self.turn_running:
                self.prompt.app.invalidate()

    async def _restart_prompt(self) -> None:
        """Make the prompt again (keeping what is being typed), for the new thread's history;
        returns once the new one is drawn."""
        app = self.prompt.app
        if not app.is_running:
            return
        self._restarted = asyncio.Event()
        self._carry = app.current_buffer.text
        app.exit(result=RESTART)
        await self._restarted.wait()

    def _redrawn(self, _app: object) -> None:
        if self._restarted is not None:
            self._restarted.set()

    def _set_up(self) -> None:
        from lich_cli.chat.approvals import ChatApprovalCheck
        from lich_cli.chat.render import TerminalView

        self.view = TerminalView(self.session.root)
        self.session.call_check = ChatApprovalCheck(self.session.root, self.ask)

    def _submit(self, text: str) -> bool:
        """Take one submitted line; False to leave."""
        if not text:
            return True
        if self.question_pending():
            key = ANSWER_KEYS.get(text.lower())
            if key is not None:
                self.answer(key)
                return True
        if text in ("/quit", "/exit") and not self.busy:
            return False
        queued = self.busy or not self.queue.empty()
        if queued:
            self.view.console.print(f"[dim]queued:[/dim] {_escape(text)}")
        self.queue.put_nowait((text, queued))
        return True

    async def _work(self) -> None:
        while True:
            text, queued = await self.queue.get()
            if text == LEAVE:
                return
            self.busy = True
            try:
                if text.startswith("/"):
                    thread = self.session.thread
                    # What a thread switch says is shown once the new prompt (its history) is up.
                    held = HeldOutput(self.view)
                    try:
                        done = await run_command(text, self.session, held, self.confirm)
                        if done == QUIT_COMMAND:
                            self.leaving = True
                            if self.prompt.app.is_running:
                                self.prompt.app.exit(result=QUIT)
                            return
                        if self.session.thread != thread or text.split()[0] == "/new":
                            await self._restart_prompt()
                    finally:
                        held.release()
                else:
                    await self._turn(text, queued)
            except Exception as err:  # noqa: BLE001 - one line, never a traceback on the screen
                self.view.error(f"lich: error: {type(err).__name__}: {err}")
            finally:
                self.busy = False

    async def _turn(self, text: str, queued: bool) -> None:
        from lich_core.vocabulary import CancelToken

        view = self.view
        if queued:  # the prompt line it was typed on is further up
            view.console.print(f"[bold cyan]›[/bold cyan] {_escape(text)}", highlight=False)
        self.cancel = CancelToken()
        self.turn_running = True
        view.begin_turn()
        try:
            await self.session.run_turn(
                text,
                on_event=view.on_event,
                on_changes=view.on_changes,
                cancel=self.cancel,
                on_note=self.note,
            )
        except AgentUnavailable as err:
            view.error(f"lich: error: {err}")
        finally:
            self.turn_running = False
            self.cancel = None


class HeldOutput:
    """A command's Output whose lines are held until release(), the view's otherwise."""

    def __init__(self, view: Any) -> None:
        self.view = view
        self.lines: list[tuple[Callable[[str], None], str]] = []

    def info(self, text: str) -> None:
        self.lines.append((self.view.info, text))

    def error(self, text: str) -> None:
        self.lines.append((self.view.error, text))

    def show_call(self, number: int) -> None:
        self.view.show_call(number)

    def release(self) -> None:
        lines, self.lines = self.lines, []
        for show, text in lines:
            show(text)


def _escape(text: str) -> str:
    from rich.markup import escape

    return escape(text)
