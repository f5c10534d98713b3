"""The ACP agent: initialize, session/new|load|list|prompt|cancel|set_mode over lich_core's agent.

Threads: the SDK's connection runs on the caller's loop; every session's Agent runs on one
worker thread (AgentThread) with its own loop, so a synchronous Workspace read that goes to the
client (fs/read_text_file) blocks only the agent. One Agent and one tool runtime per session;
lich_core's SessionStore keeps the history (the ACP session id is the store's session id), so an
ACP session is the same thread the editor's lich.ask and the CLI's --resume continue.
"""

from __future__ import annotations

import asyncio
import logging
import re
import threading
from collections.abc import Coroutine
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, TypeVar

from acp import PROTOCOL_VERSION, RequestError
from acp.schema import (
    AgentCapabilities,
    ClientCapabilities,
    EmbeddedResourceContentBlock,
    HttpMcpServer,
    Implementation,
    InitializeResponse,
    ListSessionsResponse,
    LoadSessionResponse,
    McpCapabilities,
    McpServerStdio,
    NewSessionResponse,
    PermissionOption,
    PromptCapabilities,
    PromptResponse,
    ResourceContentBlock,
    SessionCapabilities,
    SessionInfo,
    SessionListCapabilities,
    SessionMode,
    SessionModeState,
    SetSessionModeResponse,
    TextContentBlock,
    TextResourceContents,
    ToolCallUpdate,
)

from lich_acp.approvals import AcpApprovalCheck
from lich_acp.events import (
    REVIEW_NOTE_PREFIX,
    ClientBridge,
    diff_items,
    plan_update,
    replay_updates,
    terminal_update,
    text_update,
    tool_end_update,
    tool_running_update,
    tool_start_update,
)
from lich_acp.terminals import ClientTerminals
from lich_acp.workspace import APPLY, REVIEW, AcpWorkspace, FsCapabilities
from lich_core import __version__
from lich_core.agent.events import AgentEvent, PlanUpdate, TextDelta, ToolCallEnd, ToolCallStart
from lich_core.agent.sessions import (
    InvalidThreadId,
    SessionError,
    SessionStore,
    check_thread_id,
    new_session_id,
)
from lich_core.approvals import ApprovalStore
from lich_core.config import Config, load_config
from lich_core.errors import ConfigError, EditRejected, ToolError
from lich_core.mcp.spec import v_mcp_servers
from lich_core.project_rules import load_project_rules, render_project_rules
from lich_core.runtime import ToolRuntime
from lich_core.tools.types import tool_capability
from lich_core.vocabulary import CancelToken, Message, ToolResult

log = logging.getLogger("lich.acp")
T = TypeVar("T")

# After session/cancel, how long the prompt waits for the run to wind down before it answers
# `cancelled` anyway (the run finishes in the background; the next prompt waits for it).
CANCEL_ANSWER_S = 0.8
MODES = [
    SessionMode(id=APPLY, name="Apply", description="Edits are written as the agent makes them"),
    SessionMode(
        id=REVIEW,
        name="Review",
        description="Edits collect; you approve them at the end of the prompt",
    ),
]
STOP_REASONS = {
    "final": "end_turn",
    "budget": "max_turn_requests",
    "aborted": "cancelled",
    "error": "refusal",
}
MCP_NAME_MAX = 32
# session/list answers this many threads a page (threads_max keeps 100 by default: two pages).
SESSION_LIST_PAGE_SIZE = 50
# What a thread's run start record says the run came from (`lich.thread` shows it).
FACE = "acp"


class AgentThread:
    """One worker thread running an event loop for every session's agent."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self.loop.run_forever, name="lich-acp-agent", daemon=True
        )
        self._thread.start()

    def submit(self, coro: Coroutine[Any, Any, T]) -> asyncio.Future[T]:
        return asyncio.wrap_future(asyncio.run_coroutine_threadsafe(coro, self.loop))

    def stop(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)


def _mcp_name(name: str, taken: set[str]) -> str:
    base = re.sub(r"[^a-z0-9_]+", "_", name.lower()).strip("_")[:MCP_NAME_MAX] or "client"
    candidate, n = base, 2
    while candidate in taken:
        suffix = f"_{n}"
        candidate, n = base[: MCP_NAME_MAX - len(suffix)] + suffix, n + 1
    taken.add(candidate)
    return candidate


def client_mcp_servers(
    servers: list[Any] | None, existing: dict[str, Any]
) -> tuple[dict[str, Any], dict[str, str]]:
    """The client's MCP servers as lich `mcp_servers` entries (trusted: the client named them),
    and the environment their HTTP headers are read from (lich entries name header variables)."""
    entries: dict[str, Any] = {}
    header_env: dict[str, str] = {}
    taken = set(existing)
    for server in servers or []:
        if isinstance(server, McpServerStdio):
            name = _mcp_name(server.name, taken)
            entry: dict[str, Any] = {"command": server.command, "args": list(server.args)}
            if server.env:
                entry["env"] = {item.name: item.value for item in server.env}
            entries[name] = entry
        elif isinstance(server, HttpMcpServer):
            name = _mcp_name(server.name, taken)
            headers: dict[str, str] = {}
            for index, header in enumerate(server.headers):
                variable = f"LICH_ACP_MCP_{name.upper()}_HEADER_{index}"
                header_env[variable] = header.value
                headers[header.name] = variable
            entries[name] = {"url": server.url, **({"headers_env": headers} if headers else {})}
        else:
            log.warning(
                "MCP server %r: transport not supported (stdio and http are)",
                getattr(server, "name", "?"),
            )
    return entries, header_env


def _prompt_text(blocks: list[Any]) -> tuple[str, str | None]:
    """The prompt's text and the embedded context (resources) lich passes as the run's context."""
    texts: list[str] = []
    context: list[str] = []
    for block in blocks:
        if isinstance(block, TextContentBlock):
            texts.append(block.text)
        elif isinstance(block, ResourceContentBlock):
            texts.append(f"[{block.name}]({block.uri})")
        elif isinstance(block, EmbeddedResourceContentBlock):
            resource = block.resource
            if not isinstance(resource, TextResourceContents):
                raise RequestError.invalid_params(
                    {"prompt": "binary embedded resources are not supported"}
                )
            context.append(f"File {resource.uri}:\n```\n{resource.text}\n```")
        else:
            raise RequestError.invalid_params(
                {"prompt": f"content type {getattr(block, 'type', '?')!r} is not supported"}
            )
    text = "\n".join(texts).strip()
    if not text and not context:
        raise RequestError.invalid_params({"prompt": "the prompt is empty"})
    return text or "See the attached context.", "\n\n".join(context) or None


def _check_session_id(session_id: str) -> None:
    """A session id from the client is a thread id (the core's one rule), else InvalidParams
    `invalid_thread_id:`."""
    try:
        check_thread_id(session_id)
    except InvalidThreadId as err:
        raise RequestError.invalid_params({"sessionId": str(err)}) from None


def _parse_cursor(cursor: str) -> tuple[float, str]:
    """A session/list cursor back to its (modified time, session id) sort key."""
    modified, _, session_id = cursor.rpartition("/")
    try:
        return float(modified), session_id
    except ValueError:
        raise RequestError.invalid_params(
            {"cursor": f"invalid_arg: {cursor!r} is not a cursor lich gave"}
        ) from None


@dataclass
class AcpSession:
    id: str
    root: Path
    config: Config
    bridge: ClientBridge
    fs: FsCapabilities
    runtime: ToolRuntime
    agent: Any  # lich_core.agent.loop.Agent
    mode: str = APPLY
    # The client's terminals, when it declared the `terminal` capability.
    terminals: ClientTerminals | None = None
    token: CancelToken | None = None
    running: asyncio.Future[str] | None = None  # on the connection's loop
    cancel_requested: asyncio.Event = field(default_factory=asyncio.Event)
    current_call: str | None = None
    last_result: ToolResult | None = None
    # The config problems (dropped values, a broken user config) not yet said in this session.
    unsaid_config_problems: list[str] = field(default_factory=list)
    workspace: AcpWorkspace | None = None
    # The terminals the current tool call ran its commands in.
    call_terminals: list[str] = field(default_factory=list)
    # The current call was reported in_progress (it got past every check and runs).
    call_running: bool = False

    # --- on the agent's loop ---

    async def run_prompt(self, text: str, context: str | None) -> str:
        workspace = AcpWorkspace(
            self.root, self.bridge, self.fs, mode=self.mode, command_host=self.terminals
        )
        self.workspace = workspace
        token = self.token = CancelToken()
        result = await self.agent.run(
            text,
            on_event=self._on_event,
            cancel=token,
            resume=self.id,
            context=context,
            workspace=workspace,
            edit_label=f"lich: {text[:60]}",
            project_rules=self._project_rules(),
            run_record={"face": FACE},
        )
        if result.stopped_reason == "error" and result.error:
            await self.bridge.update(text_update(f"\n\nlich: {result.error}"))
        if workspace.mode == REVIEW and not token.cancelled:
            await self._finish_review(workspace)
        return str(result.stopped_reason)

    def _project_rules(self) -> str | None:
        """The repository's rules for a prompt that starts the thread's history, as the editor's
        lich.ask gives a new thread; None once the history has them (a later prompt, a loaded
        thread that had prompts), or when the user turned them off."""
        if not self.config.settings.project_rules:
            return None
        try:
            _, replay = SessionStore.for_config(self.config).replay(self.id)
        except SessionError:
            return None  # the run itself reports the session it cannot open
        if replay.messages:
            return None
        return render_project_rules(load_project_rules(self.root)) or None

    async def _finish_review(self, workspace: AcpWorkspace) -> None:
        changes = workspace.review_changes()
        if not changes:
            return
        names = ", ".join(
            str(c.path.relative_to(self.root)) if c.path.is_relative_to(self.root) else str(c.path)
            for c in changes
        )
        call = ToolCallUpdate(
            tool_call_id=f"review-{new_session_id()}",
            title=f"Apply the changes to {len(changes)} file(s): {names}",
            kind="edit",
            status="pending",
            content=diff_items(changes),
        )
        options = [
            PermissionOption(option_id="apply", name="Apply", kind="allow_once"),
            PermissionOption(option_id="discard", name="Discard", kind="reject_once"),
        ]
        bridge = self.bridge
        try:
            response = await bridge.call(
                lambda: bridge.conn.request_permission(
                    session_id=bridge.session_id, tool_call=call, options=options
                )
            )
            chosen = getattr(response.outcome, "option_id", None)
        except Exception as err:  # noqa: BLE001 - no answer discards
            log.warning("review request failed: %s", err)
            chosen = None
        if chosen != "apply":
            await bridge.update(
                text_update(f"\n\nlich: review: the changes to {names} were discarded")
            )
            self._note(
                f"{REVIEW_NOTE_PREFIX}The user discarded the changes you made to {names} in the last request: "
                "those files are as they were before it."
            )
            return
        try:
            await workspace.write(changes)
        except (EditRejected, ToolError) as err:
            await bridge.update(text_update(f"\n\nlich: review: nothing written: {err}"))
            self._note(
                f"{REVIEW_NOTE_PREFIX}The user approved your changes to {names}, but nothing was written: {err}"
            )
            return
        await bridge.update(text_update(f"\n\nlich: review: applied the changes to {names}"))
        self._note(f"{REVIEW_NOTE_PREFIX}The user applied your changes to {names}.")

    def _note(self, text: str) -> None:
        """Add a note to the session's history, so the model reads it with the next prompt (the
        review's outcome comes after the run's last model call)."""
        try:
            writer = SessionStore.for_config(self.config).open_append(self.id)
            try:
                writer.message(Message(role="user", content=text))
            finally:
                writer.close()
        except (SessionError, OSError) as err:
            log.warning("could not add a note to session %s: %s", self.id, err)

    async def call_runs(self, tool: Any, args: dict[str, Any], ctx: Any) -> str | None:
        """The runtime's last call check: every check before it (the approval) let the call
        through, so it runs now: reported in_progress (pending until then; a refused call goes
        from pending to failed). Refuses nothing."""
        call_id = self.current_call
        if call_id is not None and not self.call_running:
            self.call_running = True
            await self.bridge.update(tool_running_update(call_id))
        return None

    async def _terminal_created(self, terminal_id: str) -> None:
        self.call_terminals.append(terminal_id)
        if self.current_call is not None:
            await self.bridge.update(terminal_update(self.current_call, terminal_id))

    async def _on_event(self, event: AgentEvent) -> None:
        data = event.data
        if isinstance(data, TextDelta):
            if data.text:
                await self.bridge.update(text_update(data.text))
        elif isinstance(data, ToolCallStart):
            call_id = f"{event.run_id}-{data.turn}-{data.call_id}"
            self.current_call = call_id
            self.call_running = False
            self.last_result = None
            self.call_terminals = []
            if self.workspace is not None:
                self.workspace.take_changes()
            tool = self.runtime.registry.get(data.name)
            capability = tool_capability(tool) if tool is not None else None
            await self.bridge.update(
                tool_start_update(call_id, data.name, data.arguments, capability, self.root)
            )
        elif isinstance(data, ToolCallEnd):
            call_id = f"{event.run_id}-{data.turn}-{data.call_id}"
            result = self.last_result
            # The tool's own text: the model's JSON envelope of a failure is not for the user.
            if result is not None:
                output = result.output
            else:  # never reached the executor (arguments that were not JSON, a plugin's veto)
                output = data.summary if data.ok else ""
            changes = self.workspace.take_changes() if self.workspace is not None else []
            terminals, self.call_terminals = self.call_terminals, []
            await self.bridge.update(
                tool_end_update(call_id, data.ok, output, changes, terminals, data.error)
            )
            self.current_call = None
            self.call_running = False
        elif isinstance(data, PlanUpdate):
            await self.bridge.update(plan_update(data))


class LichAcpAgent:
    """The ACP Agent (acp.interfaces.Agent) over lich_core."""

    def __init__(self, default_root: Path | None = None) -> None:
        self.default_root = default_root
        self.conn: Any = None
        self.client_capabilities = ClientCapabilities()
        self.sessions: dict[str, AcpSession] = {}
        self._thread: AgentThread | None = None
        # One approval store per root, shared by its sessions: an "always" answer in one session
        # holds in the others at once (and, through the file, in later processes).
        self._approval_stores: dict[Path, ApprovalStore] = {}

    def on_connect(self, conn: Any) -> None:
        self.conn = conn

    @property
    def thread(self) -> AgentThread:
        if self._thread is None:
            self._thread = AgentThread()
        return self._thread

    async def close(self) -> None:
        for session in self.sessions.values():
            if session.token is not None:
                self.thread.loop.call_soon_threadsafe(session.token.cancel)
            try:
                await asyncio.wait_for(self.thread.submit(session.runtime.aclose()), 5)
            except Exception:  # noqa: BLE001
                log.exception("closing a session's runtime failed")
        if self._thread is not None:
            self._thread.stop()

    # --- ACP methods ---

    async def initialize(
        self,
        protocol_version: int,
        client_capabilities: ClientCapabilities | None = None,
        client_info: Implementation | None = None,
        **kwargs: Any,
    ) -> InitializeResponse:
        self.client_capabilities = client_capabilities or ClientCapabilities()
        return InitializeResponse(
            protocol_version=PROTOCOL_VERSION,
            agent_capabilities=AgentCapabilities(
                load_session=True,
                prompt_capabilities=PromptCapabilities(
                    image=False, audio=False, embedded_context=True
                ),
                mcp_capabilities=McpCapabilities(http=True, sse=False),
                session_capabilities=SessionCapabilities(list=SessionListCapabilities()),
            ),
            auth_methods=[],
            agent_info=Implementation(name="lich", title="lich", version=__version__),
        )

    async def authenticate(self, method_id: str, **kwargs: Any) -> None:
        raise RequestError.invalid_params({"methodId": "lich needs no authentication"})

    def _root_for(self, cwd: str) -> Path:
        path = Path(cwd)
        if not path.is_absolute():
            raise RequestError.invalid_params({"cwd": f"must be an absolute path, got {cwd!r}"})
        if not path.is_dir():
            raise RequestError.invalid_params({"cwd": f"not a directory: {cwd}"})
        return path.resolve()

    def _fs(self) -> FsCapabilities:
        fs = self.client_capabilities.fs
        return FsCapabilities(
            read=bool(fs and fs.read_text_file), write=bool(fs and fs.write_text_file)
        )

    async def _open(self, cwd: str, mcp_servers: list[Any] | None, session_id: str) -> AcpSession:
        root = self._root_for(cwd)
        try:
            config = load_config(root)
            for warning in config.warnings:
                log.warning("%s", warning)
            configured = dict(config.settings.mcp_servers)
            entries, header_env = client_mcp_servers(mcp_servers, configured)
            if entries:
                config["mcp_servers"] = {**configured, **v_mcp_servers("mcp_servers", entries)}
        except ConfigError as err:
            raise RequestError.invalid_params({"config": str(err)}) from err
        bridge = ClientBridge(self.conn, asyncio.get_running_loop(), session_id)
        holder: dict[str, AcpSession] = {}

        async def build() -> AcpSession:
            import os

            from lich_core.agent.factory import build_agent
            from lich_core.runtime import build_tool_runtime

            store = self._approval_stores.setdefault(root, ApprovalStore(root))
            check = AcpApprovalCheck(
                root,
                bridge,
                config,
                lambda: holder["s"].current_call if "s" in holder else None,
                store,
            )
            env = {**os.environ, **header_env} if header_env else None

            async def runs(tool: Any, args: dict[str, Any], ctx: Any) -> str | None:
                return await holder["s"].call_runs(tool, args, ctx)

            runtime = build_tool_runtime(config, env=env, call_checks=[check, runs])
            agent = build_agent(
                config, runtime=runtime, session_store=SessionStore.for_config(config)
            )
            mode = config.settings.edit_mode
            session = AcpSession(
                session_id,
                root,
                config,
                bridge,
                self._fs(),
                runtime,
                agent,
                mode=mode if mode in (APPLY, REVIEW) else APPLY,
            )
            session.unsaid_config_problems = list(config.warnings)
            if self.client_capabilities.terminal:
                session.terminals = ClientTerminals(bridge, session._terminal_created)
            holder["s"] = session
            execute = runtime.executor.execute

            async def recording(
                name: str, args: dict[str, Any] | None, ctx: Any = None
            ) -> ToolResult:
                result = await execute(name, args, ctx)
                session.last_result = result
                return result

            setattr(runtime.executor, "execute", recording)  # noqa: B010 - the full output for tool_call_update
            return session

        try:
            return await self.thread.submit(build())
        except ConfigError as err:
            raise RequestError.invalid_params({"config": str(err)}) from err

    def _modes(self, current: str) -> SessionModeState:
        return SessionModeState(current_mode_id=current, available_modes=MODES)

    async def new_session(
        self, cwd: str, mcp_servers: list[Any] | None = None, **kwargs: Any
    ) -> NewSessionResponse:
        session_id = new_session_id()
        session = await self._open(cwd, mcp_servers, session_id)
        try:
            SessionStore.for_config(session.config).create(
                work_dir=str(session.root), session_id=session_id
            ).close()
        except (SessionError, OSError) as err:
            raise RequestError.internal_error({"session": str(err)}) from err
        self.sessions[session_id] = session
        return NewSessionResponse(session_id=session_id, modes=self._modes(session.mode))

    async def load_session(
        self, cwd: str, session_id: str, mcp_servers: list[Any] | None = None, **kwargs: Any
    ) -> LoadSessionResponse:
        root = self._root_for(cwd)
        _check_session_id(session_id)  # before the store: `latest` would load the newest thread
        try:
            store = SessionStore.for_config(load_config(root))
            _, messages = store.load(session_id)
        except ConfigError as err:
            raise RequestError.invalid_params({"config": str(err)}) from err
        except SessionError as err:
            raise RequestError.invalid_params({"sessionId": str(err)}) from err
        old = self.sessions.get(session_id)
        if old is not None and old.running is not None and not old.running.done():
            raise RequestError.invalid_request({"sessionId": "that session is running a prompt"})
        session = await self._open(cwd, mcp_servers, session_id)
        self.sessions[session_id] = session

        def capability_of(name: str) -> str | None:
            tool = session.runtime.base_registry.get(name)
            return tool_capability(tool) if tool is not None else None

        for update in replay_updates(messages, root, capability_of):
            await self.conn.session_update(session_id=session_id, update=update)
        return LoadSessionResponse(modes=self._modes(session.mode))

    async def list_sessions(
        self, cwd: str | None = None, cursor: str | None = None, **kwargs: Any
    ) -> ListSessionsResponse:
        """The threads of `cwd` (lich keeps threads per workspace; without a cwd, the agent's own
        working directory's), most recently written first, a page at a time. The cursor is the
        sort key of the last thread of the previous page, so a thread created meanwhile does not
        shift the pages."""
        root = self._root_for(cwd) if cwd is not None else (self.default_root or Path.cwd())
        after = _parse_cursor(cursor) if cursor is not None else None
        try:
            infos = SessionStore.for_config(load_config(root)).list()
        except ConfigError as err:
            raise RequestError.invalid_params({"config": str(err)}) from err
        if after is not None:
            infos = [info for info in infos if (info.modified, info.session_id) < after]
        page = infos[:SESSION_LIST_PAGE_SIZE]
        more = len(infos) > len(page)
        return ListSessionsResponse(
            sessions=[
                SessionInfo(
                    session_id=info.session_id,
                    cwd=str(root),
                    title=info.title or None,
                    updated_at=datetime.fromtimestamp(info.modified, timezone.utc).isoformat(),
                    field_meta={"lich": {"turns": info.turns}},
                )
                for info in page
            ],
            next_cursor=f"{page[-1].modified!r}/{page[-1].session_id}" if more else None,
        )

    def _session(self, session_id: str) -> AcpSession:
        _check_session_id(session_id)
        session = self.sessions.get(session_id)
        if session is None:
            raise RequestError.invalid_params({"sessionId": f"unknown session {session_id!r}"})
        return session

    async def set_session_mode(
        self, session_id: str, mode_id: str, **kwargs: Any
    ) -> SetSessionModeResponse:
        session = self._session(session_id)
        if mode_id not in (APPLY, REVIEW):
            raise RequestError.invalid_params(
                {"modeId": f"unknown mode {mode_id!r} (apply, review)"}
            )
        session.mode = mode_id
        return SetSessionModeResponse()

    async def prompt(self, session_id: str, prompt: list[Any], **kwargs: Any) -> PromptResponse:
        session = self._session(session_id)
        text, context = _prompt_text(prompt)
        if session.running is not None and not session.running.done():
            if not session.cancel_requested.is_set():
                raise RequestError.invalid_request(
                    {"sessionId": "a prompt is already running in this session"}
                )
            await asyncio.wait({session.running})  # the cancelled one winds down first
        session.cancel_requested = asyncio.Event()
        if session.unsaid_config_problems:
            # ACP has no message channel besides the session's own updates: the first answer
            # starts with what the config dropped, so the user sees it once, where they look.
            said = "\n".join(session.unsaid_config_problems)
            session.unsaid_config_problems = []
            await self.conn.session_update(session_id=session_id, update=text_update(said + "\n\n"))
        running = session.running = self.thread.submit(session.run_prompt(text, context))
        cancelled = asyncio.ensure_future(session.cancel_requested.wait())
        try:
            waiting: list[asyncio.Future[Any]] = [running, cancelled]
            await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
        finally:
            cancelled.cancel()
        if session.cancel_requested.is_set():
            if not running.done():
                await asyncio.wait({running}, timeout=CANCEL_ANSWER_S)
            return PromptResponse(stop_reason="cancelled")
        try:
            reason = running.result()
        except Exception as err:  # noqa: BLE001 - a bug answers an error, never a crash
            log.exception("prompt failed")
            raise RequestError.internal_error({"error": f"{type(err).__name__}: {err}"}) from err
        return PromptResponse(stop_reason=STOP_REASONS.get(reason, "end_turn"))  # type: ignore[arg-type]

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        session = self.sessions.get(session_id)
        if session is None:
            return
        if session.running is not None and not session.running.done():
            session.cancel_requested.set()
        token = session.token
        if token is not None:
            self.thread.loop.call_soon_threadsafe(token.cancel)
