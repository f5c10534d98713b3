"""EditorSession: one editor connection's state, built at `initialize`.

The one place the parts of the LSP face are built: each gets what it uses (the documents, the
EditorPort, the config holder, the journal, ...), never the session, and the features add their
commands to the session's CommandTable (lich_lsp.commands). The editor is reached only through
`self.port` (an EditorPort), so the whole session runs in-process against a fake editor in tests
(tests/lsp/fake_editor.py).

The methods named after LSP messages (`did_open`, `execute_command`, `cancel_request`, ...) are
what the editor's messages do; the pygls server (lich_lsp.server) only routes them here.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.uris import to_fs_path

from lich_core import __version__
from lich_core.approvals import ApprovalStore
from lich_core.config import Config
from lich_core.hashline.read_state import ReadState
from lich_lsp import code_actions, config
from lich_lsp.agent_commands import AgentCommands
from lich_lsp.approvals import ApprovalCheck
from lich_lsp.commands import STATUS, CommandTable
from lich_lsp.completions import InlineCompletions
from lich_lsp.context import SessionContext
from lich_lsp.contract import NoParams, StatusResult, result_of
from lich_lsp.documents import DocumentStore
from lich_lsp.edits import ClientFeatures
from lich_lsp.journal import TaskJournal
from lich_lsp.messages import EditorMessages
from lich_lsp.next_edit import NextEdits
from lich_lsp.pending_questions import PendingQuestions
from lich_lsp.port import EditorPort
from lich_lsp.review import ReviewStore, review_style
from lich_lsp.run_tests import TestDiagnostics, TestRunner
from lich_lsp.runtimes import ToolRuntimes
from lich_lsp.tasks import TaskManager
from lich_lsp.threads import ThreadCommands
from lich_lsp.trust import WorkspaceTrust
from lich_lsp.undo import TaskUndo
from lich_lsp.workspace import EditorParts, EditorWorkspace, EditSender

log = logging.getLogger("lich.lsp.session")


class EditorSession:
    """The server's state for one editor. It builds every part with what that part uses (never
    the session itself) and routes the editor's messages to them."""

    def __init__(
        self,
        port: EditorPort,
        root: Path,
        features: ClientFeatures | None = None,
        init_options: dict[str, Any] | None = None,
    ) -> None:
        self.port = port
        self.root = root
        self.features = features = features or ClientFeatures()
        self.messages = messages = EditorMessages(port)
        self.config_holder = holder = config.ConfigHolder(root)
        holder.init_options = dict(init_options or {})
        self.documents = documents = DocumentStore(port, root, messages)
        # The leaves every part uses, built once; each part below gets this and what else it uses,
        # built before it (the one late dependency, tasks -> workspaces, is set by use_workspaces).
        ctx = SessionContext(
            port=port,
            messages=messages,
            documents=documents,
            holder=holder,
            features=features,
            root=root,
        )
        # Questions for a client that cannot show them: diagnostics with code actions.
        self.questions = questions = PendingQuestions(ctx=ctx)
        self.trust = WorkspaceTrust(ctx=ctx, questions=questions)
        approval_check = ApprovalCheck(ctx=ctx, store=ApprovalStore(root), questions=questions)
        self.runtimes = runtimes = ToolRuntimes(ctx=ctx, call_checks=(approval_check,))
        # Every task's changes, for lich.undoTask (read from the user state dir on first use).
        self.journal = journal = TaskJournal(
            root, report=lambda message: messages.log(message, types.MessageType.Warning)
        )
        sender = EditSender(ctx=ctx)
        self.test_diagnostics = TestDiagnostics(ctx=ctx)
        self.tasks = tasks = TaskManager(ctx=ctx, journal=journal, runtimes=runtimes)
        # Pending review hunks (lich_lsp.review) and the notes for the model's next turn; an
        # accepted hunk joins its task's undo, which the task manager records.
        self.review = review = ReviewStore(
            documents,
            port,
            root,
            messages,
            send=sender.send,
            record_accepted=tasks.record_changes,
        )
        parts = EditorParts(
            ctx=ctx,
            sender=sender,
            review=review,
            questions=questions,
            publish_test_results=self.test_diagnostics.publish,
        )

        def new_workspace(mode: str, title: str) -> EditorWorkspace:
            return EditorWorkspace(parts, mode=mode, title=title)

        def new_apply_workspace(title: str) -> EditorWorkspace:
            return new_workspace("apply", title)

        tasks.use_workspaces(new_workspace)
        self.undo = undo = TaskUndo(
            ctx=ctx, journal=journal, sender=sender, tasks=tasks, notes=review.notes
        )
        self.threads = threads = ThreadCommands(
            ctx=ctx, tasks=tasks, journal=journal, undo=undo, notes=review.notes
        )
        self.seen_diagnostics = code_actions.SeenDiagnostics(documents)
        # lich.read arms it; lich.applyPatch, lich.runTool and lich.runTests use it (the user's own session).
        read_state = ReadState()
        self.agent_commands = AgentCommands(
            ctx=ctx,
            tasks=tasks,
            runtimes=runtimes,
            new_workspace=new_apply_workspace,
            read_state=read_state,
            seen_diagnostics=self.seen_diagnostics,
            check_thread=threads.check_can_continue,
            check_new_thread=threads.check_new_thread,
        )
        test_runner = TestRunner(
            ctx=ctx, new_workspace=new_apply_workspace, runtimes=runtimes, read_state=read_state
        )
        self.completions = InlineCompletions(
            documents=documents,
            holder=holder,
            features=features,
            messages=messages,
            port=port,
            root=root,
        )
        self.next_edits = NextEdits(holder=holder, messages=messages, port=port, root=root)
        self.commands = table = CommandTable(messages)
        table.add(STATUS, self._status_command, typed=True)
        for feature in (
            self.agent_commands,
            self.threads,
            self.trust,
            test_runner,
            self.undo,
            questions,
            review,
        ):
            feature.register(table)
        # Looks at the config files between commands (initialized starts it, shutdown stops it).
        self._config_poll: asyncio.Future[None] | None = None

    @classmethod
    def from_initialize(cls, port: EditorPort, params: types.InitializeParams) -> EditorSession:
        """The session for an `initialize` request; each dropped config value is named."""
        session = cls(
            port,
            workspace_root(params),
            ClientFeatures.from_client(params.capabilities),
            config.settings_from_client(params.initialization_options),
        )
        session.config_holder.rebuild()
        config.report_config_warnings(session.config_holder, session.messages)
        return session

    # --- the editor's messages ---

    async def initialized(self) -> None:
        if self.features.configuration:
            await self.did_change_configuration(
                None
            )  # offers trust once the editor's settings are in
        else:
            self.trust.offer()
        if self._config_poll is None:
            self._config_poll = asyncio.ensure_future(self._poll_config_files())

    async def did_change_configuration(self, settings: Any) -> None:
        if await config.refresh_config(
            self.config_holder, self.port, self.features, self.messages, settings
        ):
            self.trust.offer()

    def did_change_watched_files(self) -> None:
        """A client that watches files for us says something changed: look now, not at the next poll."""
        self.reload_config_files()

    def reload_config_files(self) -> bool:
        """Rebuild the config when the user's or the workspace's config file (or a file the
        workspace config runs) changed since it was read; True when it did. The new read's
        problems are shown (each once) and its workspace file is offered for trust as at startup.
        A running task keeps the settings it started with (its agent, tool runtime and workspace
        hold them); the next one gets these. Cheap when nothing changed (a few small files hashed)."""
        holder = self.config_holder
        if not holder.files_changed():
            return False
        holder.rebuild()
        config.report_config_warnings(holder, self.messages)
        self.trust.offer()
        return True

    async def _poll_config_files(self) -> None:
        """Look at the config files every CONFIG_POLL_INTERVAL_MS: editors that cannot watch files
        for the server (Neovim 0.7, Helix) still see a dropped value's warning or the trust
        question soon after a save, with no command sent. Commands look first anyway."""
        while True:
            await asyncio.sleep(config.CONFIG_POLL_INTERVAL_MS / 1000)
            try:
                self.reload_config_files()
            except Exception as err:  # noqa: BLE001 - the next look tries again; the editor is told once
                log.exception("reloading the config failed")
                self.report_unexpected("config reload", err)

    def _stop_config_poll(self) -> None:
        if self._config_poll is not None:
            self._config_poll.cancel()
            self._config_poll = None

    def did_open(self, uri: str) -> None:
        self.documents.did_open(uri)
        self.questions.did_open(uri)
        self.next_edits.did_open(uri)

    def did_close(self, uri: str) -> None:
        self.documents.did_close(uri)
        self.completions.did_close(uri)
        self.next_edits.did_close(uri)

    def did_change(self, uri: str, content_changes: Sequence[Any]) -> None:
        """After the server's copy of the document took the change: move pending review hunks."""
        self.review.did_change(uri, content_changes)
        self.next_edits.did_change(uri)  # joins the recent edits next edits are asked with

    def did_save(self, uri: str) -> None:
        self.documents.did_save(uri)

    async def execute_command(
        self, name: str, arguments: list[Any] | None, request_id: Any = None
    ) -> Any:
        # Every command (lich.ask, lich.status, ...) sees the config files as they are now: what
        # the user just saved applies to this very request, whatever the poll saw so far.
        self.reload_config_files()
        return await self.commands.run(name, tuple(arguments or ()), request_id)

    def code_actions(
        self, params: types.CodeActionParams
    ) -> list[types.CodeAction | types.Command]:
        self.reload_config_files()  # the actions list `code_actions` and `quick_prompts`
        if params.context.diagnostics:
            self.seen_diagnostics.remember(params.text_document.uri, params.context.diagnostics)
        actions = code_actions.compute_code_actions(
            params,
            self.config.settings.code_actions,
            self.features.code_action_literals,
            llm_tag=self.features.code_action_llm_tag,
            undo_tasks=self.undo.code_action_tasks(params),
            quick_prompts=None
            if self.features.can_ask_prompt
            else code_actions.quick_prompts(self.config),
        )
        review = self.review.code_actions(
            params,
            literal_support=self.features.code_action_literals,
            tags=self.features.code_action_llm_tag,
        )
        questions = self.questions.code_actions(
            params, literal_support=self.features.code_action_literals
        )
        return questions + review + actions

    async def inline_completion(
        self, params: types.InlineCompletionParams
    ) -> types.InlineCompletionList | None:
        return await self.completions.inline_completion(params)

    async def completion(self, params: types.CompletionParams) -> types.CompletionList | None:
        return await self.completions.completion(params)

    async def copilot_inline_edit(self, params: Any) -> dict[str, Any]:
        return await self.next_edits.inline_edit(params)

    def cancel_request(self, request_id: Any) -> None:
        self.tasks.cancel_for_request(request_id)
        self.commands.cancel(request_id)

    def cancel_progress(self, token: Any) -> None:
        self.tasks.cancel_for_progress(token)

    async def shutdown(self, wait_s: float) -> None:
        self._stop_config_poll()
        await self.tasks.cancel_all(wait_s=wait_s)
        await self.runtimes.close()

    def exit(self) -> None:
        self._stop_config_poll()
        for task in self.tasks.running():
            self.tasks.cancel_task(task, "exit")

    # --- config ---

    @property
    def config(self) -> Config:
        return self.config_holder.config

    # --- talking to the user (the pygls adapter reports its own failures here) ---

    def report_unexpected(self, where: str, err: BaseException) -> None:
        self.messages.report_unexpected(where, err)

    def report_once(
        self, key: str, message: str, kind: types.MessageType = types.MessageType.Error
    ) -> None:
        self.messages.report_once(key, message, kind)

    # --- lich.status ---

    async def _status_command(self, params: NoParams, request_id: Any) -> StatusResult:
        result = self.status()
        result["edit_mode"], why = self.agent_commands.edit_mode()
        if why is not None:
            result["edit_mode_reason"] = why
        result["client"]["apply_edit"] = self.features.apply_edit
        return result_of(StatusResult, result)

    def status(self) -> dict[str, Any]:
        caps = self.features
        return {
            "version": __version__,
            "provider": _chat_provider(self.config),
            "root": str(self.root),
            "edit_mode": self.config.settings.edit_mode,
            "review": {
                "style": review_style(self.config, caps),
                "pending": len(self.review.pending()),
            },
            "disk_write_policy": self.config.settings.disk_write_policy,
            "position_encoding": self.port.position_encoding,
            "open_documents": self.documents.open_count(),
            "tasks": [task.status() for task in self.tasks.tasks.values()],
            "client": {
                "document_changes": caps.document_changes,
                "create_files": caps.create_files,
                "delete_files": caps.delete_files,
                "change_annotations": caps.change_annotations,
                "save_documents": caps.save_documents,
                "show_message_request": caps.show_message_request,
            },
            # The broken config file's message, if any (the first status field clients showed).
            "config_error": next((p.text() for p in self.config.broken_files), None),
            "config": self.config_holder.status(),
            "work_dir": self.config.settings.work_dir,
            "trust": self.config.trust.to_json(),
            "mcp_servers": self.runtimes.mcp_status(),
            "undoable_tasks": self.undo.undoable_tasks(),
            "project_rules": self.agent_commands.project_rules_status(),
            "threads": self.threads.status(),
            "completion": self.completions.status(),
            "models": config.model_choices(self.config),
            "next_edit": self.next_edits.status(),
        }


def _chat_provider(config: Config) -> dict[str, Any]:
    """The chat chain's first provider, for status displays; never raises (a bad config says so)."""
    from lich_core.errors import ConfigError
    from lich_core.providers.factory import describe_model, role_specs

    try:
        first = role_specs(config, "chat")[0]
    except (ConfigError, IndexError) as err:
        return {
            "name": "",
            "kind": "",
            "model": "",
            "describe": f"misconfigured: {err}",
            "configured": True,  # by the user, wrongly: the message says what to fix
        }
    return {
        "name": first.name,
        "kind": first.kind,
        "model": first.model,
        "describe": describe_model(config),
        # False: nothing names a provider, so the built-in local default stands in (a client
        # offers setup instead of presenting that default as the user's choice).
        "configured": not first.no_key_fallback,
    }


def workspace_root(params: types.InitializeParams) -> Path:
    """The first workspace folder, else rootUri, else rootPath, else the current directory."""
    for uri in [f.uri for f in params.workspace_folders or []] + [params.root_uri or ""]:
        if uri:
            path = to_fs_path(uri)
            if path:
                return Path(path).resolve()
    if params.root_path:
        return Path(params.root_path).resolve()
    return Path(os.getcwd()).resolve()
