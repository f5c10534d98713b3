"""EditorSession: one editor connection's state, built at `initialize`.

Everything the feature modules share lives here, typed: the workspace root, what the client can
do (ClientFeatures), the config and its one tool runtime per config generation (plugins are
loaded once per config and shared by `lich.ask` and the commands), open documents, tasks,
approvals. The editor is reached only through `self.port` (an EditorPort), so the whole session
runs in-process against a fake editor in tests (tests/lsp/fake_editor.py).

The methods named after LSP messages (`did_open`, `execute_command`, `cancel_request`, ...) are
what the editor's messages do; the pygls server (lich_lsp.server) only routes them here.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Coroutine, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsprotocol import types
from pygls.uris import to_fs_path

from lich_core import __version__
from lich_core.approvals import ApprovalStore
from lich_core.config import Config
from lich_core.hashline.read_state import ReadState
from lich_lsp import code_actions, config, trust
from lich_lsp.approvals import ApprovalCheck
from lich_lsp.edits import ClientFeatures
from lich_lsp.journal import TaskJournal
from lich_lsp.pending_questions import PendingQuestions
from lich_lsp.port import EditorPort
from lich_lsp.review import ReviewStore, review_style
from lich_lsp.run_tests import TestDiagnostics
from lich_lsp.tasks import MAX_EDITOR_MESSAGE_BYTES, MESSAGE_ENVELOPE_BYTES, TaskManager, clip_text
from lich_lsp.workspace import DocumentStore

if TYPE_CHECKING:
    from lich_core.runtime import ToolRuntime

log = logging.getLogger("lich.lsp.session")
# How long closing the tool runtime (its MCP servers) may take at shutdown.
RUNTIME_CLOSE_TIMEOUT_S = 5.0


class EditorSession:
    """The server's state for one editor; every feature module takes it (never the pygls server)."""

    def __init__(
        self,
        port: EditorPort,
        root: Path,
        features: ClientFeatures | None = None,
        init_options: dict[str, Any] | None = None,
    ) -> None:
        self.port = port
        self.root = root
        self.features = features or ClientFeatures()
        self.config_holder = config.ConfigHolder(root)
        self.config_holder.init_options = dict(init_options or {})
        self.documents = DocumentStore(self)
        self.approvals = ApprovalStore(root)
        self.approval_check = ApprovalCheck(self)
        # Questions for a client that cannot show them: diagnostics with code actions.
        self.questions = PendingQuestions(self)
        # Every task's changes, for lich.undoTask (read from the user state dir on first use).
        self.journal = TaskJournal(root, report=lambda message: self.log(message, types.MessageType.Warning))
        self.tasks = TaskManager(self)
        # lich.read arms it; lich.applyPatch and lich.runTool use it (the user's own session).
        self.command_read_state = ReadState()
        self.test_diagnostics = TestDiagnostics(self)
        # Pending review hunks (lich_lsp.review) and the notes for the model's next turn.
        self.review = ReviewStore(self)
        # What each diagnostic source last published per uri: publishDiagnostics replaces a
        # file's whole list, so every publish sends all sources' diagnostics together.
        self._published_diagnostics: dict[str, dict[str, list[types.Diagnostic]]] = {}
        self._runtime: ToolRuntime | None = None
        self._runtime_generation = -1
        self._diagnostics: dict[str, tuple[int | None, list[dict[str, Any]]]] = {}
        self._reported_errors: set[str] = set()
        # Workspace config contents the user was already asked to trust (one question per content).
        self.trust_offered: set[Any] = set()
        self._background: set[asyncio.Future[Any]] = set()

    @classmethod
    def from_initialize(cls, port: EditorPort, params: types.InitializeParams) -> EditorSession:
        """The session for an `initialize` request; a bad config is reported (defaults stay)."""
        session = cls(
            port,
            workspace_root(params),
            ClientFeatures.from_client(params.capabilities),
            config.settings_from_client(params.initialization_options),
        )
        error = session.config_holder.rebuild()
        if error is not None:
            config.report_config_error(session, error)
        else:
            config.report_config_warnings(session)
        return session

    # --- the editor's messages ---

    async def initialized(self) -> None:
        if self.features.configuration:
            await config.refresh_config(self)  # offers trust itself once the editor's settings are in
        else:
            trust.offer_trust(self)

    async def did_change_configuration(self, settings: Any) -> None:
        await config.refresh_config(self, settings)

    def did_open(self, uri: str) -> None:
        self.documents.did_open(uri)
        self.questions.did_open(uri)

    def did_close(self, uri: str) -> None:
        self.documents.did_close(uri)

    def did_change(self, uri: str, content_changes: Sequence[Any]) -> None:
        """After the server's copy of the document took the change: move pending review hunks."""
        self.review.did_change(uri, content_changes)

    def did_save(self, uri: str) -> None:
        self.documents.did_save(uri)

    async def execute_command(self, name: str, arguments: list[Any] | None, request_id: Any = None) -> Any:
        from lich_lsp.commands import run_command

        return await run_command(self, name, tuple(arguments or ()), request_id)

    def code_actions(self, params: types.CodeActionParams) -> list[types.CodeAction | types.Command]:
        from lich_lsp.undo import code_action_tasks

        if params.context.diagnostics:
            self.remember_diagnostics(params.text_document.uri, params.context.diagnostics)
        actions = code_actions.compute_code_actions(
            params,
            self.config.get("code_actions") or [],
            self.features.code_action_literals,
            llm_tag=self.features.code_action_llm_tag,
            undo_tasks=code_action_tasks(self, params),
            quick_prompts=None if self.features.can_ask_prompt else code_actions.quick_prompts(self.config),
        )
        review = self.review.code_actions(
            params, literal_support=self.features.code_action_literals, tags=self.features.code_action_llm_tag
        )
        questions = self.questions.code_actions(params, literal_support=self.features.code_action_literals)
        return questions + review + actions

    def cancel_request(self, request_id: Any) -> None:
        self.tasks.cancel_for_request(request_id)

    def cancel_progress(self, token: Any) -> None:
        self.tasks.cancel_for_progress(token)

    async def shutdown(self, wait_s: float) -> None:
        await self.tasks.cancel_all(wait_s=wait_s)
        await self.close_runtime()

    def exit(self) -> None:
        for task in self.tasks.running():
            self.tasks.cancel_task(task, "exit")

    # --- config and runtime ---

    @property
    def config(self) -> Config:
        return self.config_holder.config

    def runtime(self) -> ToolRuntime:
        """The tool runtime for the current config generation (rebuilt only after a change)."""
        if self._runtime is None or self._runtime_generation != self.config_holder.generation:
            from lich_core.runtime import build_tool_runtime

            old, self._runtime = self._runtime, build_tool_runtime(self.config, call_checks=(self.approval_check,))
            self._runtime_generation = self.config_holder.generation
            if old is not None and getattr(old, "mcp", None) is not None:
                # Its MCP servers belong to the old config; a task still running on it loses them.
                self.background(old.aclose())
        return self._runtime

    async def close_runtime(self) -> None:
        """Stop what the runtime started and holds (MCP servers), at shutdown."""
        runtime, self._runtime = self._runtime, None
        if runtime is not None and getattr(runtime, "mcp", None) is not None:
            try:
                await asyncio.wait_for(runtime.aclose(), RUNTIME_CLOSE_TIMEOUT_S)
            except (asyncio.TimeoutError, Exception) as err:  # noqa: BLE001 - shutting down regardless
                log.warning("closing the tool runtime failed: %s", err)

    def mcp_status(self) -> list[dict[str, Any]]:
        """Each configured MCP server and its state (not_started until the first task attaches)."""
        runtime = self._runtime
        manager = getattr(runtime, "mcp", None) if runtime is not None else None
        if manager is not None:
            return list(manager.status())
        servers = self.config.get("mcp_servers") or {}
        return [{"name": name, "state": "not_started", "tools": 0, "last_error": None} for name in servers]

    # --- talking to the user ---

    def log(self, message: str, kind: types.MessageType = types.MessageType.Log) -> None:
        self.port.log_message(clip_text(message, MAX_EDITOR_MESSAGE_BYTES - MESSAGE_ENVELOPE_BYTES), kind)

    def show_message(self, message: str, kind: types.MessageType = types.MessageType.Info) -> None:
        self.port.show_message(clip_text(message, MAX_EDITOR_MESSAGE_BYTES - MESSAGE_ENVELOPE_BYTES), kind)

    def report_unexpected(self, where: str, err: BaseException) -> None:
        """Tell the user about an unexpected failure once per kind (the log has the details)."""
        self.report_once(
            f"{where}:{type(err).__name__}",
            f"lich: unexpected error in {where}: {type(err).__name__}: {err} (details in the server log)",
        )

    def report_once(self, key: str, message: str, kind: types.MessageType = types.MessageType.Error) -> None:
        if key in self._reported_errors:
            return
        self._reported_errors.add(key)
        self.show_message(message, kind)

    def publish_diagnostics(self, source: str, uri: str, diagnostics: list[types.Diagnostic]) -> None:
        """Replace `source`'s diagnostics for `uri`; the editor gets every source's together."""
        by_source = self._published_diagnostics.setdefault(uri, {})
        if diagnostics:
            by_source[source] = list(diagnostics)
        else:
            by_source.pop(source, None)
        merged = [diagnostic for items in by_source.values() for diagnostic in items]
        if not by_source:
            self._published_diagnostics.pop(uri, None)
        self.port.publish_diagnostics(uri, merged)

    def background(self, work: Coroutine[Any, Any, Any]) -> None:
        """Run a coroutine without waiting for it; the reference is kept until it ends."""
        future = asyncio.ensure_future(work)
        self._background.add(future)
        future.add_done_callback(self._background.discard)

    # --- diagnostics the editor sent with code actions ---

    def remember_diagnostics(self, uri: str, diagnostics: Sequence[types.Diagnostic]) -> None:
        doc = self.documents.document_for_uri(uri)
        self._diagnostics[uri] = (
            doc.version if doc is not None else None,
            [code_actions.diagnostic_json(d) for d in diagnostics],
        )

    def diagnostics_for(self, uri: str) -> list[dict[str, Any]]:
        entry = self._diagnostics.get(uri)
        if entry is None:
            return []
        doc = self.documents.document_for_uri(uri)
        if doc is not None and doc.version != entry[0]:
            return []  # seen on an older version of the buffer
        return entry[1]

    # --- lich.status ---

    def status(self) -> dict[str, Any]:
        from lich_lsp.undo import undoable_tasks

        caps = self.features
        return {
            "version": __version__,
            "provider": _chat_provider(self.config),
            "root": str(self.root),
            "edit_mode": self.config.get("edit_mode"),
            "review": {"style": review_style(self), "pending": len(self.review.pending())},
            "disk_write_policy": self.config.get("disk_write_policy"),
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
            "config_error": self.config_holder.last_error,
            "work_dir": self.config.get("work_dir"),
            "trust": self.config.trust.to_json(),
            "mcp_servers": self.mcp_status(),
            "undoable_tasks": undoable_tasks(self),
        }


def _chat_provider(config: Config) -> dict[str, str]:
    """The chat chain's first provider, for status displays; never raises (a bad config says so)."""
    from lich_core.errors import ConfigError
    from lich_core.providers.factory import describe_model, role_specs

    try:
        first = role_specs(config, "chat")[0]
    except (ConfigError, IndexError) as err:
        return {"name": "", "kind": "", "model": "", "describe": f"misconfigured: {err}"}
    return {"name": first.name, "kind": first.kind, "model": first.model, "describe": describe_model(config)}


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
