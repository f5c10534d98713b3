"""One `lich chat` conversation: the config, the thread it continues, the agent, a turn's run.

The agent (models, tools, plugins, MCP) is built once, by `prepare`, which the terminal calls in
a worker thread once the prompt is on screen. Each turn is one run of the core's agent with the
thread as `resume`, recorded with face "cli" and a task id whose changes go to the editors' undo
journal (lich_cli.chat.rewind), so a rewind anywhere restores them.
"""

from __future__ import annotations

import argparse
import asyncio
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lich_cli.agent import ThreadRefError, apply_provider_flags, resolve_thread
from lich_cli.common import cli_root, load_cli_config
from lich_core.agent.events import AgentEvent
from lich_core.agent.sessions import SessionStore, new_session_id
from lich_core.config import Config
from lich_core.errors import ConfigError
from lich_core.workspace import FileChange

TITLE_CHARS = 60


class SessionStartError(Exception):
    """`lich chat` cannot start (an unknown --thread); one line."""


class AgentUnavailable(Exception):
    """The agent could not be built (no provider, a bad one); one line saying why."""


@dataclass
class TurnOutcome:
    stopped_reason: str  # final, budget, aborted, error
    thread: str
    task_id: str
    error: str | None = None


class ChatSession:
    def __init__(self, config: Config, root: Path) -> None:
        self.config = config
        self.root = root
        self.store = SessionStore.for_config(config)
        self.thread: str | None = None
        self.last_task_id: str | None = None
        # Said to the model with the next prompt (a rewind that left files changed, an undo).
        self.notes: list[str] = []
        # Set by the face before prepare(): the terminal's asking check, else the one-shot CLI's.
        self.call_check: Any = None
        self._agent: Any = None
        self._agent_error: str | None = None
        self._journal: Any = None
        self._built = threading.Event()
        self._build_lock = threading.Lock()

    @classmethod
    def open(cls, args: argparse.Namespace) -> ChatSession:
        config = load_cli_config(args)
        apply_provider_flags(config, model=args.model, kind=None, base_url=None)
        session = cls(config, Path(config.settings.work_dir or cli_root(args)).resolve())
        if args.thread is not None:
            try:
                session.thread = resolve_thread(config, args.thread)
            except ThreadRefError as err:
                raise SessionStartError(str(err)) from None
        return session

    def greeting(self) -> str:
        where = f"thread {self.thread}" if self.thread else "a new thread"
        return f"lich chat · {where} · {self.root} · /help for commands"

    # --- the agent ---

    def prepare(self) -> None:
        """Build the agent (imports the providers and tools: seconds on a cold disk). Safe to
        call from a worker thread, and again (it builds once)."""
        with self._build_lock:
            if self._built.is_set():
                return
            try:
                from lich_core.agent.factory import build_agent
                from lich_core.providers.base import ProviderError

                try:
                    checks = [self.call_check] if self.call_check is not None else []
                    self._agent = build_agent(self.config, call_checks=checks)
                except (ProviderError, ConfigError) as err:
                    self._agent_error = str(err)
                except Exception as err:  # noqa: BLE001 - said at the next prompt, one line
                    self._agent_error = f"{type(err).__name__}: {err}"
            finally:
                self._built.set()

    async def agent(self) -> Any:
        if not self._built.is_set():
            await asyncio.to_thread(self.prepare)
        if self._agent is None:
            raise AgentUnavailable(self._agent_error or "the agent could not be built")
        return self._agent

    async def set_model(self, name: str) -> None:
        """Use model `name` from the next turn on: the agent is built again (the old one's MCP
        servers are closed first)."""
        apply_provider_flags(self.config, model=name, kind=None, base_url=None)
        with self._build_lock:
            old, self._agent = self._agent, None
            self._agent_error = None
            self._built.clear()
        if old is not None and old.runtime.mcp is not None:
            await old.runtime.aclose()

    def describe_model(self) -> str:
        if self._agent is None:
            from lich_core.providers.factory import describe_model

            try:
                return describe_model(self.config, "chat")
            except Exception as err:  # noqa: BLE001 - a description, not a failure
                return f"(not configured: {err})"
        describe = getattr(self._agent.model, "describe", None)
        return describe() if describe else "?"

    @property
    def journal(self) -> Any:
        """The editors' undo journal for this workspace (lich_lsp.journal.TaskJournal)."""
        if self._journal is None:
            from lich_lsp.journal import TaskJournal

            self._journal = TaskJournal(self.root)
        return self._journal

    # --- a turn ---

    async def run_turn(
        self,
        prompt: str,
        *,
        on_event: Callable[[AgentEvent], None],
        on_changes: Callable[[Sequence[FileChange]], None],
        cancel: Any,
        on_note: Callable[[str], None],
    ) -> TurnOutcome:
        """Run `prompt` as the thread's next turn (a new thread's first); AgentUnavailable when
        there is no agent."""
        from lich_cli.chat.rewind import JournalingWorkspace, fresh_task_id

        agent = await self.agent()
        title = _title(prompt)
        task_id = fresh_task_id(self.journal)
        workspace = JournalingWorkspace(self.root, self.journal, task_id, title, on_changes)
        context, read_state = self._mentions(prompt, on_note)
        if self.notes:
            notes = "\n".join(self.notes)
            context = f"{notes}\n\n{context}" if context else notes
            self.notes = []
        new = self.thread is None
        session_id = new_session_id() if new else None
        result = await agent.run(
            prompt,
            on_event=on_event,
            cancel=cancel,
            resume=self.thread,
            context=context,
            workspace=workspace,
            read_state=read_state,
            edit_label=f"lich: {title}",
            project_rules=self._project_rules() if new else None,
            session_id=session_id,
            run_record={"face": "cli", "task_id": task_id},
        )
        thread = result.session_id or session_id or self.thread or ""
        self.thread = thread or None
        self.last_task_id = task_id
        return TurnOutcome(result.stopped_reason, thread, task_id, result.error)

    def _mentions(self, prompt: str, on_note: Callable[[str], None]) -> tuple[str | None, Any]:
        """The files `@path` mentions attach (from the disk), as the editors' lich.ask does."""
        from lich_core.agent.mentions import DiskSource, resolve_mentions
        from lich_core.hashline.read_state import ReadState

        mentioned = resolve_mentions(prompt, self.root, DiskSource())
        for note in mentioned.notes:
            on_note(f"not attached: {note}")
        read_state = ReadState()
        for path in mentioned.paths:
            read_state.record(path)
        return mentioned.text() or None, read_state

    def _project_rules(self) -> str | None:
        if not self.config.settings.project_rules:
            return None
        from lich_core.project_rules import load_project_rules, render_project_rules

        return render_project_rules(load_project_rules(self.root)) or None

    async def close(self) -> None:
        """Close what the agent opened (MCP servers, HTTP clients)."""
        if self._agent is not None and self._agent.runtime.mcp is not None:
            await self._agent.runtime.aclose()
        try:
            from lich_core.providers.http import aclose_client
        except ImportError:
            return
        await aclose_client()


def _title(prompt: str) -> str:
    line = " ".join(prompt.split())
    return line if len(line) <= TITLE_CHARS else line[: TITLE_CHARS - 1] + "…"
