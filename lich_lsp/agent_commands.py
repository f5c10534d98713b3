"""The commands that run the agent and its tools: lich.ask, lich.cancel, lich.tools, lich.read,
lich.applyPatch and lich.runTool (the names are lich_lsp.commands'; lich.status is the
session's own, as it reports on every part)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsprotocol import types

from lich_core.agent.mentions import mention_candidates, resolve_mentions
from lich_core.errors import ToolError
from lich_core.hashline.patch import PatchSyntaxError, parse_patch
from lich_core.project_rules import RuleFile, load_project_rules, render_project_rules
from lich_core.settings import settings_of
from lich_core.tools.guard import resolve_file_for
from lich_core.tools.secrets import prompt_refusal
from lich_lsp.arguments import BadArguments, resolve_uri
from lich_lsp.commands import APPLY_PATCH, ASK, CANCEL, MENTIONS, READ, RUN_TOOL, TOOLS
from lich_lsp.config import model_choices
from lich_lsp.contract import (
    ApplyPatchParams,
    AskParams,
    AskResult,
    CancelParams,
    CancelResult,
    MentionsParams,
    MentionsResult,
    NoParams,
    ReadParams,
    ReadResult,
    RunToolParams,
    ToolRunResult,
    ToolsResult,
    to_range,
)
from lich_lsp.paths import path_key, relative_path
from lich_lsp.pending_questions import ORIGIN_URI

if TYPE_CHECKING:
    from lich_core.hashline.read_state import ReadState
    from lich_lsp.code_actions import SeenDiagnostics
    from lich_lsp.commands import CommandTable
    from lich_lsp.context import SessionContext
    from lich_lsp.edits import ClientFeatures
    from lich_lsp.runtimes import ToolRuntimes
    from lich_lsp.tasks import TaskManager
    from lich_lsp.workspace import EditorWorkspace

READ_MAX_LINES = 2_000
MENTION_CANDIDATES_MAX = 50
SEVERITY_NAMES = {1: "error", 2: "warning", 3: "information", 4: "hint"}
# `@problems` attaches at most this many diagnostics (a file with thousands would crowd out the
# prompt); the context says how many were left out.
PROBLEMS_MAX = 200
NO_PROBLEMS_NOTE = (
    "@problems: no diagnostics known for the open files; lich sees the editor's diagnostics "
    "through code action requests"
)
NO_APPLY_EDIT_REASON = (
    "the editor does not declare workspace.applyEdit, so the agent's edits wait as review hunks "
    "(accept them with their code actions); set edit_mode to choose"
)


def default_edit_mode(
    config: Mapping[str, Any], sources: Mapping[str, str], features: ClientFeatures
) -> tuple[str, str | None]:
    """(the edit mode of a lich.ask that names none, why it differs from the config or None).

    A client that does not declare workspace.applyEdit cannot be relied on to apply the edit a
    task sends after a model call (Kate applies one only within ~2 s of its own command), so
    unless the user set edit_mode, its tasks' edits wait as review hunks, which the user's own
    code action applies."""
    configured = settings_of(config).edit_mode
    if configured == "apply" and sources.get("edit_mode") == "default" and not features.apply_edit:
        return "review", NO_APPLY_EDIT_REASON
    return configured, None


def anchored_rows(text: str, start: int, end: int) -> str:
    from lich_core.hashline.anchors import render_rows, split_lines

    lines = split_lines(text)
    return render_rows(lines[start - 1 : end], start)


def patch_paths(patch: str) -> list[str]:
    """The files a hashline patch edits, read by the one patch parser (every header it accepts:
    `@@ PATH`, `@@PATH`, `@@ PATH @@`). A patch that does not parse names none: the tool then
    reports the syntax error itself."""
    try:
        sections = parse_patch(patch)
    except PatchSyntaxError:
        return []
    return list(dict.fromkeys(section.path for section in sections))


def diagnostic_line(diagnostic: Mapping[str, Any]) -> str:
    """One diagnostic (the JSON shape of code_actions.diagnostic_json) as a context line."""
    start = (diagnostic.get("range") or {}).get("start") or {}
    severity = SEVERITY_NAMES.get(diagnostic.get("severity") or 0, "problem")
    source = f" [{diagnostic['source']}]" if diagnostic.get("source") else ""
    return f"- line {int(start.get('line', 0)) + 1}: {severity}{source}: {diagnostic.get('message', '')}"


def render_problems(by_file: Mapping[str, list[dict[str, Any]]], limit: int = PROBLEMS_MAX) -> str:
    """`@problems`'s attachment: the diagnostics per file (root-relative paths, in path order),
    at most `limit` of them, or the note saying none are known."""
    parts: list[str] = []
    shown = 0
    total = sum(len(found) for found in by_file.values())
    for rel in sorted(by_file):
        found = by_file[rel][: max(limit - shown, 0)]
        if not found:
            continue
        shown += len(found)
        parts.append(f"Diagnostics in {rel}:\n" + "\n".join(diagnostic_line(d) for d in found))
    if not parts:
        return NO_PROBLEMS_NOTE
    text = "Problems (@problems: the diagnostics the editor reported for the open files):\n\n"
    text += "\n\n".join(parts)
    if total > shown:
        text += (
            f"\n\n({total - shown} more diagnostics left out: @problems attaches at most {limit})"
        )
    return text


class AgentCommands:
    """lich.ask and the commands that run one tool for the user (their own read state)."""

    def __init__(
        self,
        *,
        ctx: SessionContext,
        tasks: TaskManager,
        runtimes: ToolRuntimes,
        new_workspace: Callable[[str], EditorWorkspace],
        read_state: ReadState,
        seen_diagnostics: SeenDiagnostics,
        check_thread: Callable[[str, str], object],
        check_new_thread: Callable[[str, str], None],
    ) -> None:
        self._tasks = tasks
        # (command, thread) -> None, or BadArguments: unknown thread, or one running a task.
        self._check_thread = check_thread
        # (command, id) -> None, or BadArguments: not a thread id, or one already taken.
        self._check_new_thread = check_new_thread
        self._runtimes = runtimes
        self._new_workspace = new_workspace  # title -> an apply-mode EditorWorkspace
        # lich.read arms it; lich.applyPatch and lich.runTool use it (the user's own session).
        self._read_state = read_state
        self._seen_diagnostics = seen_diagnostics
        self._documents = ctx.documents
        self._holder = ctx.holder
        self._features = ctx.features
        self._port = ctx.port
        self._root = ctx.root
        # What the last lich.ask gave the model (lich.status lists it); None before the first.
        self._last_project_rules: list[RuleFile] | None = None

    def register(self, table: CommandTable) -> None:
        table.add(ASK, self.ask, typed=True)
        table.add(CANCEL, self.cancel, typed=True)
        table.add(TOOLS, self.tools, typed=True)
        table.add(READ, self.read, typed=True)
        table.add(APPLY_PATCH, self.apply_patch, typed=True)
        table.add(RUN_TOOL, self.run_tool, typed=True)
        table.add(MENTIONS, self.mentions, typed=True)

    def edit_mode(self) -> tuple[str, str | None]:
        config = self._holder.config
        return default_edit_mode(config, config.sources, self._features)

    def selection_context(
        self, path: Path, uri: str, selection: types.Range | None, diagnostics: list[dict[str, Any]]
    ) -> str:
        """The task context for lich.ask with a uri: the selection as anchored rows and the file's diagnostics."""
        from lich_core.hashline.anchors import split_lines

        rel = relative_path(self._root, path)
        refused = prompt_refusal(self._root, path)
        if refused is not None:
            # Neither its text nor its diagnostics (which may quote it) go to the model.
            return f"The user is looking at {rel}, whose content is not shared with the model ({refused})."
        text = self._documents.current_text(path)
        parts: list[str] = []
        if text is None:
            parts.append(f"The user is looking at {rel} (the file does not exist yet).")
        else:
            total = len(split_lines(text))
            if selection is None:
                parts.append(f"The user is looking at {rel} ({total} lines).")
            else:
                first = min(selection.start.line + 1, max(total, 1))
                last = selection.end.line + (
                    0
                    if selection.end.character == 0 and selection.end.line > selection.start.line
                    else 1
                )
                last = max(first, min(last, total))
                rows = anchored_rows(text, first, last) if total else ""
                parts.append(
                    f"Selection in {rel}, lines {first}-{last} of {total} (rows are LINE:HASH|content; "
                    "the hashes are valid anchors for apply_patch):\n" + rows
                )
        known = diagnostics or self._seen_diagnostics.for_uri(uri)
        if known:
            lines = [diagnostic_line(diagnostic) for diagnostic in known]
            parts.append(f"Diagnostics in {rel}:\n" + "\n".join(lines))
        return "\n\n".join(parts)

    def problems_context(self, path: Path | None, diagnostics: list[dict[str, Any]]) -> str:
        """`@problems`: the diagnostics code action requests brought for each open file (the
        current version's), and lich.ask's own `diagnostics` for its file, which are newer."""
        by_file: dict[str, list[dict[str, Any]]] = {}
        for open_path in self._documents.open_paths():
            seen = self._seen_diagnostics.for_uri(self._documents.uri_for(open_path))
            if seen and prompt_refusal(self._root, open_path) is None:
                by_file[relative_path(self._root, open_path)] = seen
        if path is not None and diagnostics and prompt_refusal(self._root, path) is None:
            by_file[relative_path(self._root, path)] = diagnostics
        return render_problems(by_file)

    async def pick_quick_prompt(self) -> str | None:
        """lich.ask without a prompt: offer the configured quick prompts (LSP has no free-text input)."""
        prompts = [
            p for p in self._holder.config.settings.quick_prompts if isinstance(p, str) and p
        ]
        if not prompts:
            raise BadArguments(f"{ASK}: no prompt given and no quick_prompts configured")
        if not self._features.show_message_request:
            raise BadArguments(
                f"{ASK}: no prompt given, and this editor cannot show a choice of quick prompts "
                "(no window/showMessageRequest support); pass {prompt}"
            )
        answer = await self._port.ask(
            types.ShowMessageRequestParams(
                type=types.MessageType.Info,
                message="lich: what should the agent do?",
                actions=[types.MessageActionItem(title=p) for p in prompts],
            )
        )
        return answer.title if answer is not None else None

    async def ask(self, params: AskParams, request_id: Any) -> AskResult:
        prompt = params.prompt
        uri = params.uri
        selection = to_range(params.range) if params.range is not None else None
        mode = params.mode or self.edit_mode()[0]
        diagnostics = params.diagnostics or []
        thread = params.thread
        new_thread = params.new_thread
        # The thread as replayed by the check (its turns number this one).
        replay: Any = None
        if thread is not None:
            replay = self._check_thread(ASK, thread)  # before a quick prompt is offered for it
        if new_thread is not None:
            if thread is not None:
                raise BadArguments(
                    f"{ASK}: give 'thread' (continue) or 'new_thread' (start), not both"
                )
            self._check_new_thread(ASK, new_thread)
        if selection is not None and uri is None:
            raise BadArguments(f"{ASK}: field 'range' needs 'uri'")
        if params.model is not None:
            self._check_model(params.model)
        path = resolve_uri(ASK, self._root, uri) if uri is not None else None
        if prompt is not None and not prompt.strip():
            raise BadArguments(f"{ASK}: field 'prompt' must not be blank")
        asked_for_prompt = prompt is None
        if prompt is None:
            prompt = await self.pick_quick_prompt()
            if prompt is None:
                return AskResult(
                    task_id=None, thread=thread, stopped_reason="dismissed", final="", edited=[]
                )
        context = (
            self.selection_context(path, uri, selection, diagnostics)
            if path is not None and uri
            else None
        )
        mentioned = resolve_mentions(
            prompt,
            self._root,
            self._documents,
            problems=lambda: self.problems_context(path, diagnostics),
        )
        if mentioned.notes:  # the model is told too (the context's note), and says so
            self._port.show_message(
                "lich: not attached: " + "; ".join(mentioned.notes), types.MessageType.Warning
            )
        context = "\n\n".join(part for part in (context, mentioned.text()) if part) or None
        # A question the task cannot ask as a request goes on this file (lich_lsp.pending_questions).
        ORIGIN_URI.set(uri)
        if thread is not None and asked_for_prompt:
            # Again, with nothing awaited between it and the task's start: the quick prompt was
            # awaited, and another turn of this thread may have started meanwhile. (Without a
            # quick prompt nothing was awaited since the first check: its replay is the one the
            # task continues from, so a follow-up reads its thread file once.)
            replay = self._check_thread(ASK, thread)
        answer = await self._tasks.ask(
            prompt,
            context=context,
            mode=mode,
            request_id=request_id,
            read_paths=mentioned.paths,
            # A follow-up's history has them already (its thread's first turn).
            project_rules=self.project_rules_for(path) if thread is None else None,
            thread=thread,
            new_thread=new_thread,
            earlier_turns=len(replay.turns) if replay is not None else 0,
            history=replay.messages if replay is not None else None,
            from_chat=params.origin == "chat",
            model=params.model,
        )
        return AskResult(**answer)

    def _check_model(self, name: str) -> None:
        """A model picked for one turn must be a configured provider (lich.status `models`)."""
        names = [choice["name"] for choice in model_choices(self._holder.config)]
        if name not in names:
            configured = ", ".join(names) or "none"
            raise BadArguments(
                f"{ASK}: unknown_model: no configured provider is named {name!r} "
                f"(configured: {configured})"
            )

    def project_rules_for(self, path: Path | None) -> str | None:
        """The labelled rules section for a task on `path` (None: the root's rules only), or None
        when the user turned project_rules off or the repository has none."""
        if not self._holder.config.settings.project_rules:
            self._last_project_rules = []
            return None
        self._last_project_rules = load_project_rules(self._root, path)
        return render_project_rules(self._last_project_rules) or None

    def project_rules_status(self) -> list[dict[str, Any]]:
        """lich.status's `project_rules`: what the last task was given; before any task, what one
        without a uri would be given now."""
        if self._last_project_rules is not None:
            return [rule.to_json() for rule in self._last_project_rules]
        if not self._holder.config.settings.project_rules:
            return []
        return [rule.to_json() for rule in load_project_rules(self._root)]

    async def mentions(self, params: MentionsParams, request_id: Any) -> MentionsResult:
        """Candidate paths for a UI completing an `@` mention (the find_files walk, bounded)."""
        candidates = await asyncio.to_thread(
            mention_candidates, self._root, params.prefix or "", limit=MENTION_CANDIDATES_MAX
        )
        return MentionsResult(candidates=candidates)

    async def cancel(self, params: CancelParams, request_id: Any) -> CancelResult:
        return CancelResult(cancelled=self._tasks.cancel(params.task_id))

    async def tools(self, params: NoParams, request_id: Any) -> ToolsResult:
        from lich_core.approvals import policy_for

        approval = self._holder.config.settings.approval
        described = self._runtimes.current().describe()
        for entry in described:
            entry["approval"] = policy_for(approval, entry["name"], entry.get("capability"))
        return ToolsResult(tools=described)

    async def read(self, params: ReadParams, request_id: Any) -> ReadResult:
        from lich_core.hashline.anchors import render_rows, split_lines

        uri = params.uri
        start = params.start or 1
        end_arg = params.end
        path = resolve_uri(READ, self._root, uri)
        text = await self._documents.current_text_async(path)
        if text is None:
            raise BadArguments(f"{READ}: not_found: {uri}")
        lines = split_lines(text)
        total = len(lines)
        if total and start > total:
            raise BadArguments(f"{READ}: start {start} is past the end of the file ({total} lines)")
        end = min(end_arg or total, total, start + READ_MAX_LINES - 1)
        if end_arg is not None and end_arg < start:
            raise BadArguments(f"{READ}: end {end_arg} is before start {start}")
        chosen = lines[start - 1 : end]
        self._read_state.record(Path(path_key(path)))
        doc = self._documents.document(path)
        return ReadResult(
            uri=uri,
            version=doc.version if doc is not None else None,
            start=start,
            end=end,
            total_lines=total,
            rows=render_rows(chosen, start),
        )

    async def apply_patch(self, params: ApplyPatchParams, request_id: Any) -> ToolRunResult:
        patch = params.patch
        label = params.label or "lich: apply patch"
        workspace = self._new_workspace(label)
        read_state = self._read_state
        # The editor's user sees the buffer: the patch's files count as read (anchors are still
        # re-hashed against the current text, so a stale patch is still refused).
        ctx = self._runtimes.context(workspace, read_state, label)
        for target in patch_paths(patch):
            try:
                # The tool's own resolution, so the read state is keyed as the tool looks it up.
                candidate = resolve_file_for(ctx, target, write=True)
            except ToolError:
                continue  # outside the root, denied...: the tool says so
            if not read_state.has_read(candidate):
                read_state.record(candidate)
        result = await self._runtimes.current().executor.execute(
            "apply_patch", {"input": patch}, ctx
        )
        return ToolRunResult(
            ok=result.ok,
            output=result.output,
            error=result.error,
            edited=list(workspace.edited_uris),
        )

    async def run_tool(self, params: RunToolParams, request_id: Any) -> ToolRunResult:
        name = params.name
        tool_args = params.args if params.args is not None else {}
        from lich_core.gatekeeper import is_agent_only

        runtime = self._runtimes.current()
        tool = runtime.registry.get(name)
        if tool is not None and is_agent_only(tool):
            return ToolRunResult(
                ok=False,
                output="",
                error=f"agent_only: {name} runs only inside an agent task",
                edited=[],
            )
        label = f"lich: {name}"
        workspace = self._new_workspace(label)
        ctx = self._runtimes.context(workspace, self._read_state, label)
        result = await self._runtimes.current().executor.execute(name, tool_args, ctx)
        return ToolRunResult(
            ok=result.ok,
            output=result.output,
            error=result.error,
            edited=list(workspace.edited_uris),
        )
