"""The `workspace/executeCommand` surface (DESIGN.md "The LSP surface"; names are a public contract).

Each command takes one object argument. Malformed arguments are a JSON-RPC InvalidParams error
naming the command and the field; an unexpected failure is an InternalError with one line of
text (the traceback goes to the server log, never to the editor).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsprotocol import types
from pygls.exceptions import JsonRpcException, JsonRpcInternalError, JsonRpcInvalidParams

from lich_core.errors import ToolError
from lich_core.hashline.read_state import ReadState
from lich_core.tools.guard import resolve_file_for
from lich_core.tools.types import ToolContext
from lich_lsp.pending_questions import ANSWER_COMMAND, ORIGIN_URI, QuestionGone
from lich_lsp.review import REVIEW_COMMANDS, REVIEW_HANDLERS
from lich_lsp.workspace import EditorWorkspace, path_key, relative_path, uri_to_path

if TYPE_CHECKING:
    from lich_lsp.session import EditorSession

log = logging.getLogger("lich.lsp.commands")

ASK = "lich.ask"
CANCEL = "lich.cancel"
STATUS = "lich.status"
TOOLS = "lich.tools"
READ = "lich.read"
APPLY_PATCH = "lich.applyPatch"
RUN_TOOL = "lich.runTool"
TRUST_WORKSPACE = "lich.trustWorkspace"
RUN_TESTS = "lich.runTests"
UNDO_TASK = "lich.undoTask"
ANSWER_QUESTION = ANSWER_COMMAND  # lich.answerQuestion: a pending question's code action
COMMANDS = (
    ASK, CANCEL, STATUS, TOOLS, READ, APPLY_PATCH, RUN_TOOL, TRUST_WORKSPACE, RUN_TESTS, UNDO_TASK, ANSWER_QUESTION,
    *REVIEW_COMMANDS,
)
EDIT_MODES = ("apply", "review")
READ_MAX_LINES = 2_000
# LSP positions and line numbers are `uinteger`s: 0 .. 2^31 - 1.
MAX_UINTEGER = 2**31 - 1
SEVERITY_NAMES = {1: "error", 2: "warning", 3: "information", 4: "hint"}


class BadArguments(Exception):
    pass


def single_object(command: str, args: tuple[Any, ...], *, required: bool = True) -> dict[str, Any]:
    """The one object argument; `{}` for commands that may be called without one."""
    if not args:
        if required:
            raise BadArguments(f"{command}: expected one object argument, got none")
        return {}
    if len(args) != 1:
        raise BadArguments(f"{command}: expected one object argument, got {len(args)} arguments")
    value = args[0]
    if value is None and not required:
        return {}
    if not isinstance(value, dict):
        raise BadArguments(f"{command}: expected an object argument, got {type(value).__name__}")
    return value


def get_str(command: str, obj: dict[str, Any], key: str, *, required: bool) -> str | None:
    value = obj.get(key)
    if value is None:
        if required:
            raise BadArguments(f"{command}: missing required field '{key}'")
        return None
    if not isinstance(value, str):
        raise BadArguments(f"{command}: field '{key}' must be a string, got {type(value).__name__}")
    if required and not value:
        raise BadArguments(f"{command}: field '{key}' must not be empty")
    return value


def get_line_number(command: str, obj: dict[str, Any], key: str) -> int | None:
    value = obj.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_UINTEGER:
        raise BadArguments(
            f"{command}: field '{key}' must be a line number >= 1 (at most {MAX_UINTEGER}), got {_brief(value)}"
        )
    return value


def _brief(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:39] + "…"


def get_range(command: str, obj: dict[str, Any], key: str) -> types.Range | None:
    value = obj.get(key)
    if value is None:
        return None
    try:
        start, end = value["start"], value["end"]
        points = [start["line"], start["character"], end["line"], end["character"]]
    except (TypeError, KeyError):
        raise BadArguments(
            f"{command}: field '{key}' must be an LSP range {{start: {{line, character}}, end: {{line, character}}}}"
        ) from None
    if any(isinstance(p, bool) or not isinstance(p, int) or not 0 <= p <= MAX_UINTEGER for p in points):
        raise BadArguments(f"{command}: field '{key}' positions must be non-negative integers (at most {MAX_UINTEGER})")
    return types.Range(
        start=types.Position(line=points[0], character=points[1]),
        end=types.Position(line=points[2], character=points[3]),
    )


def resolve_uri(command: str, session: EditorSession, uri: str) -> Path:
    path = uri_to_path(uri)
    if path is None:
        raise BadArguments(f"{command}: '{uri}' is not a file URI")
    root = session.root
    try:
        Path(path_key(path)).relative_to(path_key(root))
    except ValueError:
        raise BadArguments(f"{command}: {uri} is outside the workspace root {root}") from None
    return path


def anchored_rows(text: str, start: int, end: int) -> str:
    from lich_core.hashline.anchors import render_rows, split_lines

    lines = split_lines(text)
    return render_rows(lines[start - 1 : end], start)


def selection_context(session: EditorSession, path: Path, uri: str, selection: types.Range | None, diagnostics: list[dict[str, Any]]) -> str:
    """The task context for lich.ask with a uri: the selection as anchored rows and the file's diagnostics."""
    from lich_core.hashline.anchors import split_lines

    rel = relative_path(session.root, path)
    text = session.documents.current_text(path)
    parts: list[str] = []
    if text is None:
        parts.append(f"The user is looking at {rel} (the file does not exist yet).")
    else:
        total = len(split_lines(text))
        if selection is None:
            parts.append(f"The user is looking at {rel} ({total} lines).")
        else:
            first = min(selection.start.line + 1, max(total, 1))
            last = selection.end.line + (0 if selection.end.character == 0 and selection.end.line > selection.start.line else 1)
            last = max(first, min(last, total))
            rows = anchored_rows(text, first, last) if total else ""
            parts.append(
                f"Selection in {rel}, lines {first}-{last} of {total} (rows are LINE:HASH|content; "
                "the hashes are valid anchors for apply_patch):\n" + rows
            )
    known = diagnostics or session.diagnostics_for(uri)
    if known:
        lines = []
        for diagnostic in known:
            start = (diagnostic.get("range") or {}).get("start") or {}
            severity = SEVERITY_NAMES.get(diagnostic.get("severity") or 0, "problem")
            source = f" [{diagnostic['source']}]" if diagnostic.get("source") else ""
            lines.append(f"- line {int(start.get('line', 0)) + 1}: {severity}{source}: {diagnostic.get('message', '')}")
        parts.append(f"Diagnostics in {rel}:\n" + "\n".join(lines))
    return "\n\n".join(parts)


def default_edit_mode(session: EditorSession) -> tuple[str, str | None]:
    """(the edit mode of a lich.ask that names none, why it differs from the config or None).

    A client that does not declare workspace.applyEdit cannot be relied on to apply the edit a
    task sends after a model call (Kate applies one only within ~2 s of its own command), so
    unless the user set edit_mode, its tasks' edits wait as review hunks, which the user's own
    code action applies."""
    configured = str(session.config.get("edit_mode") or "apply")
    if configured == "apply" and session.config.sources.get("edit_mode") == "default" and not session.features.apply_edit:
        return "review", NO_APPLY_EDIT_REASON
    return configured, None


NO_APPLY_EDIT_REASON = (
    "the editor does not declare workspace.applyEdit, so the agent's edits wait as review hunks "
    "(accept them with their code actions); set edit_mode to choose"
)


def _diagnostics_arg(command: str, obj: dict[str, Any]) -> list[dict[str, Any]]:
    value = obj.get("diagnostics")
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(item, dict) for item in value):
        raise BadArguments(f"{command}: field 'diagnostics' must be a list of diagnostic objects")
    return value


async def pick_quick_prompt(session: EditorSession) -> str | None:
    """lich.ask without a prompt: offer the configured quick prompts (LSP has no free-text input)."""
    prompts = [p for p in session.config.get("quick_prompts") or [] if isinstance(p, str) and p]
    if not prompts:
        raise BadArguments(f"{ASK}: no prompt given and no quick_prompts configured")
    if not session.features.show_message_request:
        raise BadArguments(
            f"{ASK}: no prompt given, and this editor cannot show a choice of quick prompts "
            "(no window/showMessageRequest support); pass {prompt}"
        )
    answer = await session.port.ask(
        types.ShowMessageRequestParams(
            type=types.MessageType.Info,
            message="lich: what should the agent do?",
            actions=[types.MessageActionItem(title=p) for p in prompts],
        )
    )
    return answer.title if answer is not None else None


def tool_context(session: EditorSession, workspace: EditorWorkspace, read_state: ReadState, label: str) -> ToolContext:
    runtime = session.runtime()
    ctx = runtime.context()
    ctx.workspace = workspace
    ctx.read_state = read_state
    ctx.edit_label = label
    return ctx


def patch_paths(patch: str) -> list[str]:
    """The files a hashline patch edits, read by the one patch parser (every header it accepts:
    `@@ PATH`, `@@PATH`, `@@ PATH @@`). A patch that does not parse names none: the tool then
    reports the syntax error itself."""
    from lich_core.hashline.patch import PatchSyntaxError, parse_patch

    try:
        sections = parse_patch(patch)
    except PatchSyntaxError:
        return []
    return list(dict.fromkeys(section.path for section in sections))


async def ask(session: EditorSession, args: tuple[Any, ...], request_id: Any) -> dict[str, Any]:
    obj = single_object(ASK, args, required=False)
    prompt = get_str(ASK, obj, "prompt", required=False)
    uri = get_str(ASK, obj, "uri", required=False)
    selection = get_range(ASK, obj, "range")
    mode = get_str(ASK, obj, "mode", required=False) or default_edit_mode(session)[0]
    if mode not in EDIT_MODES:
        raise BadArguments(f"{ASK}: field 'mode' must be one of {', '.join(EDIT_MODES)}, got {mode!r}")
    diagnostics = _diagnostics_arg(ASK, obj)
    if selection is not None and uri is None:
        raise BadArguments(f"{ASK}: field 'range' needs 'uri'")
    path = resolve_uri(ASK, session, uri) if uri is not None else None
    if prompt is not None and not prompt.strip():
        raise BadArguments(f"{ASK}: field 'prompt' must not be blank")
    if prompt is None:
        prompt = await pick_quick_prompt(session)
        if prompt is None:
            return {"task_id": None, "stopped_reason": "dismissed", "final": "", "edited": []}
    context = selection_context(session, path, uri, selection, diagnostics) if path is not None and uri else None
    # A question the task cannot ask as a request goes on this file (lich_lsp.pending_questions).
    ORIGIN_URI.set(uri)
    return await session.tasks.ask(prompt, context=context, mode=mode, request_id=request_id)


async def cancel(session: EditorSession, args: tuple[Any, ...], request_id: Any) -> dict[str, Any]:
    obj = single_object(CANCEL, args, required=False)
    task_id = get_str(CANCEL, obj, "task_id", required=False)
    cancelled = session.tasks.cancel(task_id)
    return {"cancelled": cancelled}


async def status(session: EditorSession, args: tuple[Any, ...], request_id: Any) -> dict[str, Any]:
    single_object(STATUS, args, required=False)
    result = session.status()
    result["edit_mode"], why = default_edit_mode(session)
    if why is not None:
        result["edit_mode_reason"] = why
    result["client"]["apply_edit"] = session.features.apply_edit
    return result


async def trust_workspace(session: EditorSession, args: tuple[Any, ...], request_id: Any) -> dict[str, Any]:
    from lich_lsp.trust import change_trust

    obj = single_object(TRUST_WORKSPACE, args, required=False)
    revoke = obj.get("revoke", False)
    if not isinstance(revoke, bool):
        raise BadArguments(f"{TRUST_WORKSPACE}: field 'revoke' must be true or false, got {type(revoke).__name__}")
    return change_trust(session, trust=not revoke)


async def tools(session: EditorSession, args: tuple[Any, ...], request_id: Any) -> dict[str, Any]:
    single_object(TOOLS, args, required=False)
    from lich_core.approvals import policy_for

    approval = session.config.get("approval") or {}
    described = session.runtime().describe()
    for entry in described:
        entry["approval"] = policy_for(approval, entry["name"], entry.get("capability"))
    return {"tools": described}


async def read(session: EditorSession, args: tuple[Any, ...], request_id: Any) -> dict[str, Any]:
    from lich_core.hashline.anchors import render_rows, split_lines

    obj = single_object(READ, args)
    uri = get_str(READ, obj, "uri", required=True)
    assert uri is not None
    start = get_line_number(READ, obj, "start") or 1
    end_arg = get_line_number(READ, obj, "end")
    path = resolve_uri(READ, session, uri)
    text = await session.documents.current_text_async(path)
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
    session.command_read_state.record(Path(path_key(path)))
    doc = session.documents.document(path)
    return {
        "uri": uri,
        "version": doc.version if doc is not None else None,
        "start": start,
        "end": end,
        "total_lines": total,
        "rows": render_rows(chosen, start),
    }


async def apply_patch(session: EditorSession, args: tuple[Any, ...], request_id: Any) -> dict[str, Any]:
    obj = single_object(APPLY_PATCH, args)
    patch = get_str(APPLY_PATCH, obj, "patch", required=True)
    assert patch is not None
    label = get_str(APPLY_PATCH, obj, "label", required=False) or "lich: apply patch"
    workspace = EditorWorkspace(session, mode="apply", title=label)
    read_state = session.command_read_state
    # The editor's user sees the buffer: the patch's files count as read (anchors are still
    # re-hashed against the current text, so a stale patch is still refused).
    ctx = tool_context(session, workspace, read_state, label)
    for target in patch_paths(patch):
        try:
            # The tool's own resolution, so the read state is keyed as the tool looks it up.
            candidate = resolve_file_for(ctx, target, write=True)
        except ToolError:
            continue  # outside the root, denied...: the tool says so
        if not read_state.has_read(candidate):
            read_state.record(candidate)
    result = await session.runtime().executor.execute("apply_patch", {"input": patch}, ctx)
    return {**result.to_json_dict(), "edited": list(workspace.edited_uris)}


async def run_tool(session: EditorSession, args: tuple[Any, ...], request_id: Any) -> dict[str, Any]:
    obj = single_object(RUN_TOOL, args)
    name = get_str(RUN_TOOL, obj, "name", required=True)
    assert name is not None
    tool_args = obj.get("args", {})
    if tool_args is None:
        tool_args = {}
    if not isinstance(tool_args, dict):
        raise BadArguments(f"{RUN_TOOL}: field 'args' must be an object, got {type(tool_args).__name__}")
    from lich_core.gatekeeper import is_agent_only

    tool = session.runtime().registry.get(name)
    if tool is not None and is_agent_only(tool):
        return {"ok": False, "output": "", "error": f"agent_only: {name} runs only inside an agent task", "edited": []}
    label = f"lich: {name}"
    workspace = EditorWorkspace(session, mode="apply", title=label)
    ctx = tool_context(session, workspace, session.command_read_state, label)
    result = await session.runtime().executor.execute(name, tool_args, ctx)
    return {**result.to_json_dict(), "edited": list(workspace.edited_uris)}


async def run_tests(session: EditorSession, args: tuple[Any, ...], request_id: Any) -> dict[str, Any]:
    from lich_lsp.run_tests import run_tests as run

    obj = single_object(RUN_TESTS, args, required=False)
    test_filter = get_str(RUN_TESTS, obj, "filter", required=False)
    return await run(session, test_filter.strip() if test_filter and test_filter.strip() else None)


async def answer_question(session: EditorSession, args: tuple[Any, ...], request_id: Any) -> dict[str, Any]:
    obj = single_object(ANSWER_QUESTION, args)
    question_id = get_str(ANSWER_QUESTION, obj, "id", required=True)
    answer = get_str(ANSWER_QUESTION, obj, "answer", required=True)
    assert question_id is not None and answer is not None
    try:
        question = session.questions.answer(question_id, answer)
    except QuestionGone:
        raise BadArguments(
            f"{ANSWER_QUESTION}: question_gone: no pending question {question_id!r} "
            "(answered already, timed out, or its task ended)"
        ) from None
    except ValueError as err:
        raise BadArguments(f"{ANSWER_QUESTION}: {err}") from None
    return {"id": question.question_id, "kind": question.kind, "answer": answer}


async def undo_task(session: EditorSession, args: tuple[Any, ...], request_id: Any) -> dict[str, Any]:
    from lich_lsp.undo import undo_task as undo  # imports this module: loaded on first use

    return await undo(session, args, request_id)


CommandHandler = Callable[["EditorSession", tuple[Any, ...], Any], Awaitable[Any]]
HANDLERS: dict[str, CommandHandler] = {
    ASK: ask,
    CANCEL: cancel,
    STATUS: status,
    TOOLS: tools,
    READ: read,
    APPLY_PATCH: apply_patch,
    RUN_TOOL: run_tool,
    TRUST_WORKSPACE: trust_workspace,
    RUN_TESTS: run_tests,
    UNDO_TASK: undo_task,
    ANSWER_QUESTION: answer_question,
    **REVIEW_HANDLERS,
}


async def run_command(session: EditorSession, name: str, args: tuple[Any, ...], request_id: Any = None) -> Any:
    """Run one command; argument errors become InvalidParams and anything unexpected a one-line
    InternalError (the traceback goes to the server log, never to the editor)."""
    handler = HANDLERS.get(name)
    if handler is None:
        raise JsonRpcInvalidParams(message=f"unknown command {name!r}; lich's commands: {', '.join(COMMANDS)}")
    try:
        return await handler(session, args, request_id)
    except BadArguments as err:
        raise JsonRpcInvalidParams(message=str(err)) from None
    except ToolError as err:  # a refused path (not_regular_file:, path_escape:, ...): the caller's input
        raise JsonRpcInvalidParams(message=f"{name}: {err}") from None
    except JsonRpcException:
        raise
    except Exception as err:  # noqa: BLE001 - logged once, reported as a clean error
        log.exception("%s failed", name)
        session.report_unexpected(name, err)
        raise JsonRpcInternalError(message=f"{name}: internal error: {type(err).__name__}: {err}") from None
