"""The conversation loop: call the model, run the tools it asks for, repeat until it answers.

One `Agent` can serve many runs (each `run()` keeps its state in a `_Run`). Invariants the loop
keeps whatever happens (budget, cancellation, provider failure, a crash in a plugin):

- every assistant message with tool calls is followed by exactly one tool message per call;
- the session file holds every message the run added, written as it was added;
- `run()` returns a RunResult; it raises only when its own asyncio task is cancelled (after
  closing the run as "aborted").
"""

from __future__ import annotations

import asyncio
import itertools
import json
import logging
import random
import sys
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, TypeVar, cast

from lich_core.agent.compress import CompressionPolicy, compress_messages, estimate_tokens
from lich_core.agent.events import (
    ApprovalAsked,
    BudgetExhausted,
    CompressEnd,
    CompressStart,
    EventData,
    EventEmitter,
    EventListener,
    FinalAnswer,
    LlmEnd,
    LlmRetry,
    LlmStart,
    PlanUpdate,
    PluginWarning,
    RunEnd,
    RunError,
    RunStart,
    StoppedReason,
    TextDelta,
    TokenUsage,
    ToolCallEnd,
    ToolCallStart,
    TurnEnd,
    TurnStart,
)
from lich_core.agent.prompts import (
    INVALID_ARGUMENTS_ERROR,
    system_prompt_for,
    user_prompt,
    with_tool_rules,
)
from lich_core.agent.sessions import (
    SessionError,
    SessionStore,
    SessionWriter,
    repair_history,
    tool_error_message,
)
from lich_core.agent.targets import ToolDescription, describe_tool_call
from lich_core.agent.thread_log import PROMPT_RECORD_MAX_CHARS
from lich_core.hashline.read_state import ReadState
from lich_core.plugins.loader import load_errors_summary
from lich_core.project_rules import project_rules_files
from lich_core.providers.base import CallOptions, Model, ProviderError, RetryNotice
from lich_core.runtime import ToolRuntime
from lich_core.settings import settings_of
from lich_core.tools.types import EXEC_CAPABILITY, ToolContext, WriteLedger, tool_capability
from lich_core.trust import TrustStore
from lich_core.vocabulary import (
    CancelToken,
    Message,
    ModelResponse,
    ToolCall,
    ToolDefinition,
    ToolResult,
    Usage,
    format_tool_result,
)
from lich_core.workspace import Workspace, user_notes_message

log = logging.getLogger("lich.agent")
_RUN_ID_PREFIX = f"{random.getrandbits(32):08x}"
_RUN_NUMBERS = itertools.count(1)

BUDGET_EXHAUSTED_ERROR = "turn_budget_exhausted"
CANCELLED_ERROR = "cancelled"
# Summaries in tool_call_end events (the full result is in the history).
EVENT_SUMMARY_MAX_CHARS = 300
# on_run_end hooks run after a cancellation too, so they get a deadline instead of the token.
RUN_END_HOOK_TIMEOUT_S = 10.0
# How long a cancelled model call may take to unwind (close its HTTP stream).
MODEL_CANCEL_GRACE_S = 2.0
# The events before a model call wait for its request to be sent (EventEmitter.hold), at most
# this long: a warm connection sends in a millisecond, a slow connect must not hide the run.
HELD_EVENTS_MAX_S = 0.05
# Task.cancelling() (3.11+) tells a cancel of this task from a CancelledError a model raised.
_CAN_TELL_OWN_CANCEL = sys.version_info >= (3, 11)


def _task_being_cancelled() -> bool:
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0  # type: ignore[attr-defined,unused-ignore]


T = TypeVar("T")


@dataclass
class RunResult:
    stopped_reason: str  # "final" | "budget" | "aborted" | "error"
    turns_used: int
    final: str
    messages: list[Message]
    usage: Usage
    run_id: str
    session_id: str
    error: str | None = None

    def to_dict(self, *, with_messages: bool = False) -> dict[str, Any]:
        data: dict[str, Any] = {
            "stopped_reason": self.stopped_reason,
            "turns_used": self.turns_used,
            "final": self.final,
            "usage": self.usage.to_dict(),
            "run_id": self.run_id,
            "session_id": self.session_id,
            "error": self.error,
        }
        if with_messages:
            data["messages"] = [m.to_dict() for m in self.messages]
        return data


class _Aborted(Exception):
    """The run's cancel token fired while the loop was waiting."""


class Agent:
    def __init__(
        self,
        *,
        model: Model,
        runtime: ToolRuntime,
        config: Mapping[str, Any],
        compress_model: Model | None = None,
        plugins: Any | None = None,  # lich_core.plugins.PluginHost
        session_store: SessionStore | None = None,
        workspace: Workspace | None = None,  # for runs that pass none
    ) -> None:
        self.model = model
        self.runtime = runtime
        self.config = config
        self.compress_model = compress_model
        self.plugins = plugins
        self.session_store = session_store
        self.workspace = workspace
        # What every run reads from the config, read once (a run's setup is on the way to its
        # first streamed token).
        self.max_turns = settings_of(config).max_turns
        self.compress_limit_tokens = CompressionPolicy.limit_for(config)
        self.system_prompt = system_prompt_for(config)
        # A model that says when its request is on the wire gets the events held before the call
        # delivered then, while the provider thinks (EventEmitter.hold).
        self.model_reports_sent = model.reports_sent
        # A model that stops on its token (HTTP providers, chains of them) is awaited without a
        # race task; that needs Task.cancelling() to tell the token's cancel from the caller's.
        self.model_stops_on_cancel = _CAN_TELL_OWN_CANCEL and model.stops_on_cancel
        self._work_dir_raw: Any = None
        self._tool_definitions: list[ToolDefinition] = []
        self._tool_definitions_key: tuple[Any, ...] | None = None
        self._resolved_work_dir = Path()
        if plugins is not None:
            plugins.bind_models(self.model_for_role)

    def resolved_work_dir(self) -> Path:
        """The executor's work_dir, resolved once per Agent (not per run: it costs file system calls)."""
        raw = self.runtime.executor.work_dir
        # Identity, not equality: comparing Paths costs more than the run's other setup.
        if self._work_dir_raw is not raw:
            self._resolved_work_dir = Path(raw).resolve()
            self._work_dir_raw = raw
        return self._resolved_work_dir

    def model_for_role(self, role: str) -> Model | None:
        if role == "chat":
            return self.model
        if role == "compress":
            return self.compress_model or self.model
        return None

    def tool_definitions(self) -> list[ToolDefinition]:
        """Enabled tools the capability gate allows: denied ones are not offered to the model, nor
        is a tool that says it cannot be used here (`offered` false: git_commit without
        LICH_ALLOW_SELF_COMMIT=1), since every schema is re-sent with every request.

        Kept until the registry, its version or the gate changes (MCP and plugin tools register
        late): building them is on the way to every run's first request.
        """
        registry = self.runtime.registry
        gate = self.runtime.executor.gate
        key = (registry, registry.version, gate, gate.granted)
        if self._tool_definitions_key != key:
            self._tool_definitions = [
                ToolDefinition(tool.name, tool.description, tool.parameters)
                for tool in registry.list()
                if gate.allows(tool_capability(tool)) and getattr(tool, "offered", True)
            ]
            self._tool_definitions_key = key
        return list(self._tool_definitions)

    async def run(
        self,
        prompt: str,
        *,
        on_event: EventListener | None = None,
        cancel: CancelToken | None = None,
        resume: str | None = None,
        resume_history: Sequence[Message] | None = None,
        context: str | None = None,
        workspace: Workspace | None = None,
        read_state: ReadState | None = None,
        edit_label: str = "lich",
        project_rules: str | None = None,
        session_id: str | None = None,
        run_record: Mapping[str, Any] | None = None,
    ) -> RunResult:
        """Run the agent on `prompt` until it answers, runs out of turns, is cancelled or fails.

        `project_rules` is the repository's rules as lich_core.project_rules renders them: they
        go into the first user message, after the prompt (a resumed run has them already).
        `session_id`: the id a new session gets (a face that names its thread before the run);
        `run_record`: fields for the session's run start record (the face, its task id).
        `resume_history`: the history of session `resume` as the caller replayed it (its
        messages, in order), so the session file is not read again."""
        run = _Run(
            self,
            on_event=on_event,
            cancel=cancel or CancelToken(),
            workspace=workspace if workspace is not None else self.workspace,
            read_state=read_state,
            edit_label=edit_label,
        )
        run.new_session_id = session_id
        run.run_record = dict(run_record or {})
        run.resume_history = resume_history
        return await run.execute(
            prompt, resume=resume, context=context, project_rules=project_rules
        )


@dataclass
class _RunState:
    history: list[Message] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    turns: int = 0
    final: str = ""
    stopped_reason: str = ""
    error: str | None = None


class _Run:
    def __init__(
        self,
        agent: Agent,
        *,
        on_event: EventListener | None,
        cancel: CancelToken,
        workspace: Workspace | None,
        read_state: ReadState | None,
        edit_label: str,
    ) -> None:
        self.agent = agent
        self.config = agent.config
        self.cancel = cancel
        self.on_event = on_event
        # A run id names a run, it guards nothing: a per-process random prefix and a counter,
        # no system call (and cheaper than formatting random bits: it is on the way to the
        # first request).
        self.run_id = _RUN_ID_PREFIX + hex(next(_RUN_NUMBERS))[2:]
        self.state = _RunState()
        self.writer: SessionWriter | None = None
        # Opened by _open_session; becomes `writer` once the start is announced.
        self._opened_writer: SessionWriter | None = None
        self._recorded_messages = 0
        self.max_turns = agent.max_turns
        self.policy = CompressionPolicy(limit_tokens=agent.compress_limit_tokens)
        executor = agent.runtime.executor
        self.executor = executor
        self.work_dir = agent.resolved_work_dir()
        self._workspace = workspace
        self._read_state = read_state
        self._edit_label = edit_label
        self._tool_ctx: ToolContext | None = None
        # The tool call running now (an approval question reports it).
        self._call_id = ""
        # The resumed session's history as the caller replayed it (Agent.run's resume_history).
        self.resume_history: Sequence[Message] | None = None
        self.emitter = EventEmitter(self.run_id, "", on_event)
        # The options of every model call: retries (a chain's) become events, and a model that
        # says when its request is sent delivers the held events then.
        self._model_options = CallOptions(
            on_text=self._on_text,
            cancel=cancel,
            on_retry=self._on_retry,
            on_sent=self.emitter.release if agent.model_reports_sent else None,
        )
        self._emit = self.emitter.emit
        self.plugin_run: Any | None = None
        self.new_session_id: str | None = None
        self.run_record: dict[str, Any] = {}

    @property
    def tool_ctx(self) -> ToolContext:
        """One context for the whole run; the executor clones it per call with a child token.

        Built on first use: its default DiskWorkspace resolves paths (file system calls), work a
        run that never calls a tool need not do before its first streamed token.
        """
        if self._tool_ctx is None:
            executor = self.executor
            self._tool_ctx = ToolContext(
                work_dir=self.work_dir,
                env=dict(executor.env),
                cancel=self.cancel,
                workspace=self._workspace,
                settings=executor.settings,
                read_state=self._read_state if self._read_state is not None else ReadState(),
                edit_label=self._edit_label,
                terminal_timeout_ms=executor.terminal_timeout_ms,
                web_search=executor.web_search,
                report_plan=self._report_plan,
                report_approval=self._report_approval,
                written=WriteLedger(before_write=self._write_listener()),
            )
        return self._tool_ctx

    def _write_listener(self) -> Callable[[list[Path]], None]:
        """A run that may not run programs must not make code run later either: what it writes
        is recorded in the trust store, and nothing it could have written starts without the
        user's yes (lich_core.trust, docs/trust.md). A project rules file is recorded whatever
        the run may do: later tasks are given it as instructions, so its change is one the user
        confirms (lich_core.project_rules)."""
        if self.executor.gate.allows(EXEC_CAPABILITY):
            return partial(_note_project_rules_writes, self.work_dir)
        return partial(TrustStore.for_env().note_agent_writes, self.work_dir)

    # --- the run ---

    async def execute(
        self,
        prompt: str,
        *,
        resume: str | None,
        context: str | None,
        project_rules: str | None = None,
    ) -> RunResult:
        state = self.state
        externally_cancelled = False
        if self.agent.runtime.mcp is not None:
            # MCP servers attach on the first run (and restart if they failed since); their
            # tools are registered before the run reads its tool list. Never raises.
            await self.agent.runtime.ensure_mcp(self.cancel)
        try:
            # The run's start (run_start, the session's first records) and each turn's
            # bookkeeping events are held until the first model call's request is out, or until
            # anything is awaited that may take a while (_race): see EventEmitter. A model that
            # does not say when its request is out gets them just before the call.
            if self.agent.model_reports_sent:
                self.emitter.hold(HELD_EVENTS_MAX_S)
            session_problem = self._open_session(prompt, resume)
            self.emitter.defer(partial(self._announce_start, prompt, resume))
            if session_problem is not None:
                state.stopped_reason = "error"
                state.error = session_problem
                await self._emit(RunError(kind="session", message=session_problem))
            else:
                self._start_plugins()
                self._append(
                    Message(role="user", content=user_prompt(prompt, context, project_rules))
                )
                if self.plugin_run is not None and self.plugin_run.has_hook("on_run_start"):
                    await self._race(self.plugin_run.on_run_start(len(prompt)))
                await self._loop()
        except asyncio.CancelledError:
            externally_cancelled = True
            self.cancel.cancel(CANCELLED_ERROR)
            state.stopped_reason = "aborted"
        except _Aborted:
            state.stopped_reason = "aborted"
        except Exception as err:  # noqa: BLE001 - a bug must not lose the history
            log.exception("agent run failed")
            state.stopped_reason = "error"
            state.error = f"internal_error: {type(err).__name__}: {err}"
            await self._emit_quietly(RunError(kind="internal", message=state.error))
        result = await self._finish()
        if externally_cancelled:
            raise asyncio.CancelledError()
        return result

    def _open_session(self, prompt: str, resume: str | None) -> str | None:
        """Load or create the session; returns an error message instead of raising.

        The session is opened here, before the first request, so a session that cannot be
        opened ends the run before anything is sent. Its records are written from
        _announce_start on: the writer is set there.
        """
        store = self.agent.session_store
        history = self.state.history
        try:
            if resume is not None:
                if store is None:
                    return "session_not_found: sessions are not enabled for this agent"
                if self.resume_history is not None:
                    session_id, loaded = resume, repair_history(list(self.resume_history))
                else:
                    session_id, loaded = store.load(resume)
                history.extend(loaded)
                self._opened_writer = store.open_append(session_id)
            elif store is not None:
                self._opened_writer = store.create(
                    work_dir=str(self.work_dir), title=prompt, session_id=self.new_session_id
                )
                session_id = self._opened_writer.session_id
            else:
                # Nothing is stored, so there is no session to name apart from the run.
                session_id = f"run-{self.run_id}"
        except (SessionError, OSError) as err:
            self._opened_writer = None
            return str(err)
        self.emitter.session_id = session_id
        self._recorded_messages = len(history)
        if not history or history[0].role != "system":
            names = [definition.name for definition in self.agent.tool_definitions()]
            system = with_tool_rules(self.agent.system_prompt, names)
            self._append(Message(role="system", content=system))
        return None

    def _announce(self, kind: Callable[..., EventData], **fields: Any) -> None:
        self.emitter.emit_nowait(kind(**fields))

    def _announce_before_call(self, kind: Callable[..., EventData], **fields: Any) -> None:
        """Emit a bookkeeping event of the coming model call: built only once its request is out
        when events are held (see execute), at once otherwise."""
        if self.emitter.holding:
            self.emitter.defer(partial(self._announce, kind, **fields))
        else:
            self.emitter.emit_nowait(kind(**fields))

    def _announce_start(self, prompt: str, resume: str | None) -> None:
        """The run_start event and the session's first records: the run start, then the messages
        added since the session was opened. Deferred (see execute)."""
        self.emitter.emit_nowait(
            RunStart(
                prompt_chars=len(prompt),
                resumed=resume is not None,
                max_turns=self.max_turns,
                model=str(getattr(self.agent.model, "name", "") or ""),
                work_dir=str(self.work_dir),
            )
        )
        self.writer, self._opened_writer = self._opened_writer, None
        if self.writer is None:
            return
        self._record(
            lambda: {
                "type": "run",
                "event": "start",
                "run_id": self.run_id,
                "ts": time.time(),
                "prompt": prompt[:PROMPT_RECORD_MAX_CHARS],
                **self.run_record,
            }
        )
        for message in self.state.history[self._recorded_messages :]:
            self._write_message(message)  # a no-op once a disk failure dropped the writer

    def _start_plugins(self) -> None:
        host = self.agent.plugins
        if host is None or not (host.plugins or host.warnings):
            return
        if host.warnings:
            # One summary for every entry that failed to load, as lich's seed reports it.
            self.emitter.emit_nowait(PluginWarning(message=load_errors_summary(host.warnings)))
        if host.plugins:
            self.plugin_run = host.start_run(self._plugin_warning)

    async def _plugin_warning(self, plugin_name: str, message: str) -> None:
        await self._emit(PluginWarning(message=message, plugin=plugin_name))

    async def _loop(self) -> None:
        state = self.state
        tools = self.agent.tool_definitions()
        # Read once per run, not per turn: these checks are on the way to every model call.
        holds = self.agent.model_reports_sent
        # What the user did in the editor since the last call (a run without a workspace reads
        # and writes the disk, where there is no user to take notes from).
        notes_source = self._workspace
        # The gatekeeper is always loaded but has no model hooks: a turn with no
        # before_llm_call hook awaits nothing before its model call (time to first token).
        llm_hook = self.plugin_run is not None and self.plugin_run.has_hook("before_llm_call")
        while True:
            if self.cancel.cancelled:
                state.stopped_reason = "aborted"
                return
            state.turns += 1
            turn = state.turns
            if holds:
                self.emitter.hold(HELD_EVENTS_MAX_S)
            self._announce_before_call(TurnStart, turn=turn, max_turns=self.max_turns)
            # Review answers, edits to the agent's lines: kept in the history, so the model does
            # not undo them.
            if (
                notes_source is not None
                and (user_notes := user_notes_message(notes_source)) is not None
            ):
                self._append(Message(role="user", content=user_notes))
            if self.policy.due(state.history, turn):
                await self._compress(turn)
            notes: list[Message] = []
            if llm_hook:
                assert self.plugin_run is not None
                notes = await self._race(self.plugin_run.before_llm_call(turn, state.history))
            call_messages = state.history + notes if notes else list(state.history)
            self._announce_before_call(
                LlmStart, turn=turn, messages=len(call_messages), tools=len(tools), notes=len(notes)
            )
            try:
                response = await self._call_model(call_messages, tools, turn)
            except _Aborted:
                state.stopped_reason = "aborted"
                return
            except asyncio.CancelledError:
                # From a model awaited directly (_call_model): the token's stop, unless this
                # task itself is being cancelled.
                if (
                    self.agent.model_stops_on_cancel
                    and self.cancel.cancelled
                    and not _task_being_cancelled()
                ):
                    state.stopped_reason = "aborted"
                    return
                raise
            except Exception as err:  # noqa: BLE001 - ProviderError or a provider bug: end with "error"
                if self.cancel.cancelled:
                    state.stopped_reason = "aborted"
                    return
                state.stopped_reason = "error"
                state.error = _one_line(err)
                if isinstance(err, ProviderError):
                    await self._emit(
                        RunError(kind=err.kind, message=state.error, turn=turn, summary=err.plain())
                    )
                else:
                    await self._emit(RunError(kind="internal", message=state.error, turn=turn))
                return
            self.emitter.release()  # in case the model never said its request was sent
            assistant = _normalised_assistant(response.message, turn)
            state.usage.add(response.usage)
            self._append(assistant)
            state.final = assistant.content
            await self._emit(
                LlmEnd(
                    turn=turn,
                    stop_reason=response.stop_reason,
                    provider=response.provider,
                    model=response.model,
                    usage=_usage(response.usage),
                    text_chars=len(assistant.content),
                    tool_calls=tuple([call.name for call in assistant.tool_calls]),
                )
            )
            if not assistant.tool_calls:
                await self._emit(FinalAnswer(turn=turn, text=assistant.content))
                await self._emit(TurnEnd(turn=turn))
                state.stopped_reason = "final"
                return
            if turn >= self.max_turns:
                for call in assistant.tool_calls:
                    self._append(tool_error_message(call.id, call.name, BUDGET_EXHAUSTED_ERROR))
                await self._emit(
                    BudgetExhausted(
                        turn=turn,
                        max_turns=self.max_turns,
                        skipped_calls=tuple(call.name for call in assistant.tool_calls),
                    )
                )
                await self._emit(TurnEnd(turn=turn))
                state.stopped_reason = "budget"
                return
            await self._run_tools(assistant.tool_calls, turn)
            await self._emit(TurnEnd(turn=turn))

    async def _call_model(
        self, messages: list[Message], tools: list[ToolDefinition], turn: int
    ) -> ModelResponse:
        agent = self.agent
        if not agent.model_reports_sent:
            self.emitter.release()
        call = agent.model.complete(messages, tools, self._model_options)
        if not agent.model_stops_on_cancel:
            return await self._race(call, grace_s=MODEL_CANCEL_GRACE_S)
        # The model stops on the token itself (HTTP providers, chains of them): awaited directly,
        # no task switch on the way to the first token. The caller tells the token's
        # CancelledError from a cancellation of its task.
        return await call

    async def _report_approval(self, fields: dict[str, Any]) -> None:
        await self._emit(ApprovalAsked(turn=self.state.turns, call_id=self._call_id, **fields))

    async def _report_plan(
        self, entries: tuple[dict[str, str], ...], explanation: str | None
    ) -> None:
        await self._emit(PlanUpdate.from_reported(entries, explanation))

    def _on_text(self, text: str) -> None:
        if text:
            self.emitter.emit_nowait(TextDelta(turn=self.state.turns, text=text))

    def _on_retry(self, notice: RetryNotice) -> None:
        # Renderers drop the turn's streamed text when discarded_chars > 0: the next attempt
        # streams the answer again from its start.
        self.emitter.emit_nowait(
            LlmRetry(
                turn=self.state.turns,
                provider=notice.provider,
                attempt=notice.attempt,
                max_attempts=notice.max_attempts,
                kind=notice.kind,
                message=notice.message,
                action=notice.action,
                delay_s=notice.delay_s,
                next_provider=notice.next_provider,
                discarded_chars=notice.discarded_chars,
            )
        )

    def _describe(self, name: str, args: Mapping[str, Any]) -> ToolDescription:
        """The call's kind, target and title (lich_core.agent.targets, as every face shows it)."""
        tool = self.agent.runtime.registry.get(name)
        return describe_tool_call(name, args, tool_capability(tool) if tool is not None else None)

    async def _run_tools(self, calls: Sequence[ToolCall], turn: int) -> None:
        for call in calls:
            if self.cancel.cancelled:
                # Not started: still answered, so the history stays valid.
                self._append(tool_error_message(call.id, call.name, CANCELLED_ERROR))
                continue
            args, invalid = _parse_arguments(call)
            described = self._describe(call.name, args)
            self._call_id = call.id  # an approval question of this call names it
            await self._emit(
                ToolCallStart(
                    turn=turn,
                    call_id=call.id,
                    name=call.name,
                    arguments=args,
                    kind=described.kind,
                    target=described.target,
                    title=described.title,
                )
            )
            started_ns = time.perf_counter_ns()
            try:
                result = await self._run_one(call, args, invalid)
            except _Aborted:
                result = ToolResult(ok=False, error=CANCELLED_ERROR)
            content = format_tool_result(result)
            self._append(
                Message(role="tool", content=content, tool_call_id=call.id, name=call.name)
            )
            await self._emit(
                ToolCallEnd(
                    turn=turn,
                    call_id=call.id,
                    name=call.name,
                    ok=result.ok,
                    error=result.error,
                    summary=content[:EVENT_SUMMARY_MAX_CHARS],
                    duration_ms=round((time.perf_counter_ns() - started_ns) / 1e6, 3),
                    kind=described.kind,
                    target=described.target,
                    title=described.title,
                )
            )

    async def _run_one(
        self, call: ToolCall, args: dict[str, Any], invalid: str | None
    ) -> ToolResult:
        """A call with arguments that could not be used, or one the plugins' hooks see."""
        if invalid is not None:
            return ToolResult(ok=False, error=INVALID_ARGUMENTS_ERROR.format(detail=invalid))
        plugin_run = self.plugin_run
        if plugin_run is not None:
            veto = await self._race(plugin_run.before_tool_call(call.name, args))
            if veto:
                result = ToolResult(ok=False, error=veto)
                await self._race(plugin_run.after_tool_call(call.name, args, result))
                return result
        result = await self.executor.execute(call.name, args, self.tool_ctx)
        if plugin_run is not None:
            await self._race(plugin_run.after_tool_call(call.name, args, result))
        return result

    async def _compress(self, turn: int) -> None:
        state = self.state
        model = self.agent.compress_model or self.agent.model
        await self._emit(
            CompressStart(
                turn=turn,
                messages=len(state.history),
                estimated_tokens=estimate_tokens(state.history),
            )
        )
        try:
            outcome = await self._race(compress_messages(state.history, model, cancel=self.cancel))
        except _Aborted:
            await self._emit(CompressEnd(turn=turn, ok=False, error=CANCELLED_ERROR))
            raise
        self.policy.record(outcome, turn)
        state.usage.add(outcome.usage)
        if outcome.ok:
            state.history[:] = outcome.messages
            self._record_compaction()
        await self._emit(
            CompressEnd(
                turn=turn,
                ok=outcome.ok,
                error=outcome.error,
                before_tokens=outcome.before_tokens,
                after_tokens=outcome.after_tokens,
                removed_messages=outcome.removed_messages,
            )
        )

    async def _finish(self) -> RunResult:
        state = self.state
        self.emitter.release()
        self._answer_pending_calls()
        if not state.stopped_reason:
            state.stopped_reason = "aborted" if self.cancel.cancelled else "error"
        if self.plugin_run is not None:
            try:
                await asyncio.wait_for(
                    self.plugin_run.on_run_end(state.stopped_reason, state.turns),
                    RUN_END_HOOK_TIMEOUT_S,
                )
            except (asyncio.TimeoutError, Exception):  # noqa: BLE001
                log.warning("on_run_end hooks did not finish", exc_info=True)
        self._record(
            lambda: {
                "type": "run",
                "event": "end",
                "run_id": self.run_id,
                "ts": time.time(),
                "stopped_reason": state.stopped_reason,
                "turns_used": state.turns,
                "error": state.error,
                "final": state.final,
                "usage": state.usage.to_dict(),
                "files": self._written_files(),
            }
        )
        if self.writer is not None:
            self.writer.close()
        await self._emit_quietly(
            RunEnd(
                stopped_reason=cast(StoppedReason, state.stopped_reason),
                turns_used=state.turns,
                usage=_usage(state.usage),
                error=state.error,
            )
        )
        # The context's report_plan is bound to this run: dropped, the run and its history are
        # freed by reference counting when the caller lets go, not left to the cycle collector.
        self._tool_ctx = None
        return RunResult(
            stopped_reason=state.stopped_reason,
            turns_used=state.turns,
            final=state.final,
            messages=list(state.history),
            usage=state.usage,
            run_id=self.run_id,
            session_id=self.emitter.session_id,
            error=state.error,
        )

    # --- helpers ---

    def _written_files(self) -> list[str]:
        """What this run wrote with its write tools, relative to the work dir where inside it."""
        ctx = self._tool_ctx
        if ctx is None:
            return []
        names = []
        for path in ctx.written.paths:
            try:
                names.append(path.relative_to(self.work_dir).as_posix())
            except ValueError:
                names.append(str(path))
        return sorted(names)

    def _answer_pending_calls(self) -> None:
        """After an interruption inside _run_tools: answer every call that has no result yet."""
        history = self.state.history
        index = len(history) - 1
        while index >= 0 and history[index].role == "tool":
            index -= 1
        if index < 0 or history[index].role != "assistant" or not history[index].tool_calls:
            return
        answered = {m.tool_call_id for m in history[index + 1 :]}
        for call in history[index].tool_calls:
            if call.id not in answered:
                self._append(tool_error_message(call.id, call.name, CANCELLED_ERROR))

    def _append(self, message: Message) -> None:
        self.state.history.append(message)
        self._write_message(message)

    def _write_message(self, message: Message) -> None:
        if self.writer is not None:
            try:
                self.writer.message(message)
            except OSError as err:
                self._drop_writer(err)

    def _record(self, make_record: Callable[[], dict[str, Any]]) -> None:
        if self.writer is not None:
            try:
                self.writer.append(make_record())
            except OSError as err:
                self._drop_writer(err)

    def _record_compaction(self) -> None:
        if self.writer is not None:
            try:
                self.writer.compaction(self.state.history)
            except OSError as err:
                self._drop_writer(err)

    def _drop_writer(self, err: OSError) -> None:
        # A full disk must not end the run; the session just stops growing.
        log.warning("session log disabled: %s", err)
        writer, self.writer = self.writer, None
        if writer is not None:
            try:
                writer.close()
            except OSError:
                pass

    async def _emit_quietly(self, data: EventData) -> None:
        """Emit during shutdown: a second cancellation must not skip the rest of the cleanup."""
        try:
            await self.emitter.emit(data)
        except asyncio.CancelledError:
            pass

    async def _race(self, awaitable: Awaitable[T], *, grace_s: float = 0.5) -> T:
        """Await `awaitable` unless the run's token fires first (then raise _Aborted)."""
        # What is awaited here may take a while (a plugin hook, compression): the held events
        # go out first, so the listener is not left behind.
        self.emitter.release()
        if self.cancel.cancelled:
            _close(awaitable)
            raise _Aborted()
        work = asyncio.ensure_future(awaitable)
        # One plain future woken by whichever comes first, the work or the token: cheaper than
        # asyncio.wait (or a task waiting on the token), and this sits on the path to the first
        # streamed token.
        woken = asyncio.get_running_loop().create_future()

        def wake(_: Any = None) -> None:
            if not woken.done():
                woken.set_result(None)

        work.add_done_callback(wake)
        unlink = self.cancel.on_cancel(wake)
        try:
            await woken
        except asyncio.CancelledError:
            work.cancel()
            raise
        finally:
            unlink()
            work.remove_done_callback(wake)
            woken.cancel()
        if self.cancel.cancelled:
            if not work.done():
                work.cancel()
                await asyncio.wait({work}, timeout=grace_s)
            if work.done() and not work.cancelled():
                work.exception()  # retrieved, so asyncio does not log it as unhandled
            raise _Aborted()
        return work.result()


def _usage(usage: Usage) -> TokenUsage:
    """A frozen snapshot of a (growing) usage counter, for an event."""
    return TokenUsage(
        input_tokens=usage.input_tokens,
        output_tokens=usage.output_tokens,
        cache_read_tokens=usage.cache_read_tokens or None,
        cache_write_tokens=usage.cache_write_tokens or None,
    )


def _close(awaitable: Awaitable[Any]) -> None:
    close = getattr(awaitable, "close", None)
    if close is not None:
        close()


def _normalised_assistant(message: Message, turn: int) -> Message:
    """An assistant message whose tool calls all have distinct, non-empty ids."""
    if (
        message.role == "assistant"
        and type(message.content) is str
        and message.tool_call_id is None
        and message.name is None
        and _ids_are_fine(message.tool_calls)
    ):
        return message  # already so (the usual case): no copy of it and its calls per turn
    calls: list[ToolCall] = []
    seen: set[str] = set()
    for index, call in enumerate(message.tool_calls):
        call_id = call.id
        if not call_id or call_id in seen:
            call_id = f"call_{turn}_{index}"
        seen.add(call_id)
        calls.append(
            ToolCall(
                id=call_id,
                name=call.name,
                arguments=call.arguments,
                raw_arguments=call.raw_arguments,
            )
        )
    return Message(role="assistant", content=message.content or "", tool_calls=calls)


def _ids_are_fine(calls: list[ToolCall]) -> bool:
    """No call has an empty id, and no two the same."""
    seen: set[str] = set()
    for call in calls:
        call_id = call.id
        if call_id == "" or call_id in seen:
            return False
        seen.add(call_id)
    return True


def _parse_arguments(call: ToolCall) -> tuple[dict[str, Any], str | None]:
    """The call's arguments, or an explanation of why its raw JSON could not be used."""
    if call.arguments:
        return dict(call.arguments), None
    raw = (call.raw_arguments or "").strip()
    if not raw:
        return {}, None
    try:
        parsed = json.loads(raw)
    except json.JSONDecodeError as err:
        return {}, f"{err.msg} at line {err.lineno} column {err.colno}"
    if isinstance(parsed, dict):
        return parsed, None
    return {}, f"expected a JSON object, got {type(parsed).__name__}"


def _one_line(err: BaseException) -> str:
    text = str(err) or type(err).__name__
    return " ".join(text.split())


def _note_project_rules_writes(work_dir: Path, paths: list[Path]) -> None:
    """Note those of `paths` that are project rules files in the trust store's agent writes
    (the listener of a run that may run programs: its other writes are not noted)."""
    rules = project_rules_files(work_dir, paths)
    if rules:
        TrustStore.for_env().note_agent_writes(work_dir, rules, project_rules=True)
