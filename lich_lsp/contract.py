"""The typed `workspace/executeCommand` contract: each command's one object argument and its
result as dataclasses (docs/lsp.md). COMMAND_TYPES lists every command lich_lsp.commands announces (a test
says so); lich_lsp.commands' table uses this module, never the other way round.

Arguments are converted with pygls' own converter (cattrs, `pygls.protocol.default_converter`),
made strict for JSON scalars, and checked in one place (`parse_params`, which the CommandTable
calls before any handler): a bad argument is BadArguments (JSON-RPC InvalidParams) naming the
command and the field, in the words lich_lsp.arguments always used. Results are serialised with
the same converter (`to_json`): a field marked `omit_if_none` is left out when None, every other
field is always there, with the names the clients read.

`python -m lich_lsp.contract --schema` writes docs/lich-commands.schema.json from these types
(tests/lsp/test_command_schema.py pins it).
"""

from __future__ import annotations

import dataclasses
import json
import sys
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any, Literal, get_args, get_origin, get_type_hints

from lich_core.json_schema import type_schema
from lich_lsp.arguments import MAX_UINTEGER, BadArguments

SCHEMA_PATH = Path(__file__).resolve().parents[1] / "docs" / "lich-commands.schema.json"
SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"


def doc(text: str, **extra: Any) -> dict[str, Any]:
    """A field's metadata: its description and checks (non_empty, line_number, uinteger,
    positive, omit_if_none)."""
    return {"doc": text, **extra}


# --- arguments ---


@dataclass(frozen=True, kw_only=True)
class Position:
    """An LSP position (0-based line and character)."""

    line: int = field(metadata=doc("0-based line", uinteger=True))
    character: int = field(
        metadata=doc("0-based character (the position encoding's units)", uinteger=True)
    )


@dataclass(frozen=True, kw_only=True)
class Range:
    """An LSP range."""

    start: Position
    end: Position


@dataclass(frozen=True, kw_only=True)
class NoParams:
    """No fields; the argument may be left out."""


@dataclass(frozen=True, kw_only=True)
class AskParams:
    prompt: str | None = field(
        default=None, metadata=doc("the task; none: the configured quick prompts are offered")
    )
    uri: str | None = field(default=None, metadata=doc("the file the user is looking at"))
    range: Range | None = field(default=None, metadata=doc("the selection in `uri`"))
    mode: Literal["apply", "review"] | None = field(
        default=None, metadata=doc("apply or review (default: the config's edit_mode)")
    )
    diagnostics: list[dict[str, Any]] | None = field(
        default=None, metadata=doc("the editor's diagnostics for `uri` (LSP Diagnostic objects)")
    )
    thread: str | None = field(default=None, metadata=doc("continue this thread"))
    new_thread: str | None = field(default=None, metadata=doc("start a thread with this id"))
    model: str | None = field(
        default=None,
        metadata=doc(
            "a configured provider's name (lich.status `models`): this turn's model; none: the"
            " configured chat chain"
        ),
    )
    origin: Literal["chat"] | None = field(
        default=None,
        metadata=doc(
            "where the prompt was typed; 'chat': the chat shows the outcome, so no end-of-task"
            " window/showMessage is sent"
        ),
    )


@dataclass(frozen=True, kw_only=True)
class CancelParams:
    task_id: str | None = field(default=None, metadata=doc("the task (none: every running task)"))


@dataclass(frozen=True, kw_only=True)
class ReadParams:
    uri: str = field(metadata=doc("a file in the workspace", non_empty=True))
    start: int | None = field(default=None, metadata=doc("first line (1-based)", line_number=True))
    end: int | None = field(default=None, metadata=doc("last line (1-based)", line_number=True))


@dataclass(frozen=True, kw_only=True)
class ApplyPatchParams:
    patch: str = field(metadata=doc("a hashline patch", non_empty=True))
    label: str | None = field(default=None, metadata=doc("the edit's label in the editor"))


@dataclass(frozen=True, kw_only=True)
class RunToolParams:
    name: str = field(metadata=doc("the tool", non_empty=True))
    args: dict[str, Any] | None = field(default=None, metadata=doc("the tool's arguments"))


@dataclass(frozen=True, kw_only=True)
class MentionsParams:
    prefix: str | None = field(default=None, metadata=doc("what follows the @ so far"))


@dataclass(frozen=True, kw_only=True)
class ThreadParams:
    thread: str = field(metadata=doc("the thread id"))


@dataclass(frozen=True, kw_only=True)
class RewindParams:
    thread: str = field(metadata=doc("the thread id"))
    turn: int = field(metadata=doc("the turn to take back, with every later one", positive=True))


@dataclass(frozen=True, kw_only=True)
class TrustWorkspaceParams:
    revoke: bool = field(default=False, metadata=doc("take the trust back"))


@dataclass(frozen=True, kw_only=True)
class RunTestsParams:
    filter: str | None = field(default=None, metadata=doc("the test runner's filter"))


@dataclass(frozen=True, kw_only=True)
class UndoTaskParams:
    task_id: str | None = field(default=None, metadata=doc("the task (none: the user picks)"))


@dataclass(frozen=True, kw_only=True)
class AnswerQuestionParams:
    id: str = field(metadata=doc("the pending question", non_empty=True))
    answer: str = field(metadata=doc("one of its choices", non_empty=True))


@dataclass(frozen=True, kw_only=True)
class HunkParams:
    hunk_id: str = field(metadata=doc("the review hunk", non_empty=True))


@dataclass(frozen=True, kw_only=True)
class ReviewScopeParams:
    uri: str | None = field(default=None, metadata=doc("one file (none: every file)"))


# --- results ---


@dataclass(frozen=True, kw_only=True)
class AskResult:
    """How the task ended."""

    task_id: str | None
    thread: str | None
    turn: int | None = field(
        default=None,
        metadata=doc("the thread's number of this turn (1, 2, ...; rewound turns included)"),
    )
    stopped_reason: str
    final: str
    edited: list[str]
    error: str | None = field(default=None, metadata=doc("", omit_if_none=True))
    review: str | None = field(default=None, metadata=doc("machine words", omit_if_none=True))
    review_message: str | None = field(default=None, metadata=doc("", omit_if_none=True))
    refused: list[dict[str, str]] | None = field(
        default=None, metadata=doc("edits the editor refused ({uri, error})", omit_if_none=True)
    )
    refused_message: str | None = field(default=None, metadata=doc("", omit_if_none=True))
    transcript: str | None = field(
        default=None, metadata=doc("the task's transcript file (a file URI)", omit_if_none=True)
    )


@dataclass(frozen=True, kw_only=True)
class CancelResult:
    cancelled: list[str] = field(metadata=doc("the task ids cancelled"))


@dataclass(frozen=True, kw_only=True)
class MentionsResult:
    candidates: list[str]


@dataclass(frozen=True, kw_only=True)
class ToolsResult:
    tools: list[dict[str, Any]] = field(metadata=doc("each tool's description and approval"))


@dataclass(frozen=True, kw_only=True)
class ReadResult:
    uri: str
    version: int | None
    start: int
    end: int
    total_lines: int
    rows: str = field(metadata=doc("LINE:HASH|content rows"))


@dataclass(frozen=True, kw_only=True)
class ThreadsResult:
    threads: list[dict[str, Any]] = field(
        metadata=doc("{thread, title, turns, updated, running}, newest first")
    )


@dataclass(frozen=True, kw_only=True)
class ThreadResult:
    thread: str
    title: str
    created: Any
    running: bool
    turns: list[dict[str, Any]]
    usage: dict[str, Any]


@dataclass(frozen=True, kw_only=True)
class AnswerQuestionResult:
    id: str
    kind: str
    answer: str


@dataclass(frozen=True, kw_only=True)
class ToolRunResult:
    """One tool run for the user (lich.applyPatch, lich.runTool)."""

    ok: bool
    output: str
    error: str | None
    edited: list[str] = field(metadata=doc("the files the run wrote (URIs)"))


@dataclass(frozen=True, kw_only=True)
class TestFailureView:
    test_id: str
    uri: str = field(metadata=doc("the failing test's file ('' when unknown)"))
    line: int = field(metadata=doc("0-based"))
    message: str


@dataclass(frozen=True, kw_only=True)
class RunTestsResult:
    ok: bool
    summary: str
    passed: int
    failed: int
    errors: int
    skipped: int
    failures: list[TestFailureView]
    output: str
    error: str | None = field(default=None, metadata=doc("", omit_if_none=True))


@dataclass(frozen=True, kw_only=True)
class FileOutcome:
    """What an undo or a rewind did to one file."""

    uri: str
    path: str = field(metadata=doc("root-relative"))
    outcome: str = field(metadata=doc("undone, rebased, unchanged, refused or failed"))
    reason: str | None = field(default=None, metadata=doc("why not", omit_if_none=True))
    lines: list[int] | None = field(
        default=None, metadata=doc("the lines you changed since (a conflict)", omit_if_none=True)
    )


@dataclass(frozen=True, kw_only=True)
class UndoTaskResult:
    task_id: str | None
    title: str | None = field(default=None, metadata=doc("", omit_if_none=True))
    ok: bool
    dismissed: bool | None = field(
        default=None, metadata=doc("the user picked no task", omit_if_none=True)
    )
    files: list[FileOutcome]
    task_running: bool
    message: str
    error: str | None = field(default=None, metadata=doc("", omit_if_none=True))


@dataclass(frozen=True, kw_only=True)
class NotRestored:
    turn: int
    files: list[str]
    reason: str


@dataclass(frozen=True, kw_only=True)
class RewindResult:
    thread: str
    turn: int
    rewound: list[int] = field(metadata=doc("the turns taken back"))
    ok: bool
    files: list[FileOutcome]
    not_restored: list[NotRestored]
    message: str
    error: str | None = field(default=None, metadata=doc("", omit_if_none=True))


# An object whose fields are documented in docs/lsp.md but not typed here.
Untyped = dict[str, Any]


def _omitted(text: str) -> Any:
    """A result field left out when it does not apply."""
    return field(default=None, metadata=doc(text, omit_if_none=True))


@dataclass(frozen=True, kw_only=True)
class IgnoredKeyInfo:
    key: str
    what: str


@dataclass(frozen=True, kw_only=True)
class WorkspaceChangeInfo:
    key: str
    what: str
    before_trust: bool = field(metadata=doc("in effect before trust too (it narrows)"))


@dataclass(frozen=True, kw_only=True)
class TrustInfo:
    """The workspace config's trust."""

    state: Literal["trusted", "untrusted", "no_config", "refused"]
    config: str = field(metadata=doc("the workspace config file"))
    keys: list[IgnoredKeyInfo] = field(
        metadata=doc("what is ignored until trust (after a trust: what it applied)")
    )
    changed: bool = field(metadata=doc("trusted before, changed since"))
    agent_writes: list[str] | None = _omitted("files agent runs without process/exec wrote")


@dataclass(frozen=True, kw_only=True)
class TrustWorkspaceResult(TrustInfo):
    """What lich.trustWorkspace did; the editor shows `message`."""

    changes: list[WorkspaceChangeInfo] = field(
        default_factory=list,
        metadata=doc("what the workspace file changes from the user's own settings"),
    )
    message: str


@dataclass(frozen=True, kw_only=True)
class HunkRefusal:
    hunk_id: str
    error: str


@dataclass(frozen=True, kw_only=True)
class ReviewAnswerResult:
    """lich.acceptHunk, rejectHunk, acceptAll, rejectAll: what was done, or `ok: false` with
    `error` when nothing could be."""

    ok: bool
    accepted: list[str] | None = _omitted("the hunks applied (accept)")
    rejected: list[str] | None = _omitted("the hunks dropped (reject)")
    edited: list[str] | None = _omitted("the files an accept changed (uris)")
    pending: int | None = _omitted("hunks still pending, every file")
    missing: list[str] | None = _omitted("hunks not pending (already answered or dropped)")
    refused: list[HunkRefusal] | None = _omitted("hunks that cannot be answered, and why")
    busy: list[str] | None = _omitted("hunks whose accept is on its way to the editor")
    error: str | None = _omitted("why nothing was done")


@dataclass(frozen=True, kw_only=True)
class ReviewHunkInfo:
    hunk_id: str
    task_id: str
    uri: str
    range: Range = field(metadata=doc("the hunk's old lines, where they are now"))
    start_line: int
    end_line: int
    old_text: str
    new_text: str
    summary: str


@dataclass(frozen=True, kw_only=True)
class ReviewListResult:
    hunks: list[ReviewHunkInfo]


@dataclass(frozen=True, kw_only=True)
class ProviderInfo:
    """The chat chain's first provider."""

    name: str
    kind: str
    model: str
    describe: str = field(metadata=doc("one line for a status display"))
    configured: bool = field(
        metadata=doc(
            "whether the user names a provider (else the built-in local default stands in)"
        )
    )


@dataclass(frozen=True, kw_only=True)
class ReviewInfo:
    style: str = field(metadata=doc("how pending changes are shown: hunks or batch"))
    pending: int


@dataclass(frozen=True, kw_only=True)
class ClientInfo:
    """What the client declared that the server uses."""

    document_changes: bool
    create_files: bool
    delete_files: bool
    change_annotations: bool
    save_documents: bool
    show_message_request: bool
    apply_edit: bool


@dataclass(frozen=True, kw_only=True)
class ConfigInfo:
    """Which settings are in use."""

    generation: int = field(metadata=doc("up by one when a re-read changed values or trust"))
    read_at: str = field(metadata=doc("local time YYYY-MM-DDTHH:MM:SS+hhmm"))
    problems: list[Untyped] = field(metadata=doc("each value dropped {source, key, detail, ...}"))
    broken_files: list[Untyped] = field(metadata=doc("each trusted config file that cannot parse"))


@dataclass(frozen=True, kw_only=True)
class CompletionInfo:
    """The completion (ghost text) model."""

    model: str | None = field(metadata=doc("the model, or null when completions are off"))
    error: str | None = field(metadata=doc("why the configured model cannot be used"))
    last_error: str | None = field(
        metadata=doc("the last completion request's failure, until one succeeds")
    )
    last_error_at: str | None = field(metadata=doc("its ISO time"))
    requests: int
    own_ms: Untyped = field(metadata=doc("the server's own time per completion"))


@dataclass(frozen=True, kw_only=True)
class ModelInfo:
    """A model for one editor feature (next edits)."""

    model: str | None = field(metadata=doc("the model, or null when off"))
    error: str | None
    requests: int


@dataclass(frozen=True, kw_only=True)
class ModelChoice:
    """A configured provider a turn can be asked of (lich.ask `model`)."""

    name: str
    kind: str
    model: str


@dataclass(frozen=True, kw_only=True)
class StatusResult:
    """The server's state for a status display (docs/lsp.md, lich.status)."""

    version: str
    provider: ProviderInfo
    root: str
    edit_mode: str = field(metadata=doc("what a lich.ask without mode gets"))
    edit_mode_reason: str | None = _omitted("why edit_mode is not the config's value")
    review: ReviewInfo
    disk_write_policy: str
    position_encoding: str
    open_documents: int
    tasks: list[Untyped]
    client: ClientInfo
    config_error: str | None = field(metadata=doc("a config file that cannot be parsed"))
    config: ConfigInfo
    work_dir: str | None
    trust: TrustInfo
    mcp_servers: list[Untyped]
    undoable_tasks: list[Untyped]
    project_rules: list[Untyped]
    threads: list[Untyped]
    completion: CompletionInfo
    models: list[ModelChoice] = field(
        metadata=doc("the configured providers, for a model picker (empty: none configured)")
    )
    next_edit: ModelInfo | None = _omitted("the next-edit model")


@dataclass(frozen=True)
class CommandType:
    params: type
    result: Any
    # The argument may be left out ([] or [null]).
    optional: bool = True


COMMAND_TYPES: dict[str, CommandType] = {
    "lich.ask": CommandType(AskParams, AskResult),
    "lich.cancel": CommandType(CancelParams, CancelResult),
    "lich.status": CommandType(NoParams, StatusResult),
    "lich.tools": CommandType(NoParams, ToolsResult),
    "lich.read": CommandType(ReadParams, ReadResult, optional=False),
    "lich.applyPatch": CommandType(ApplyPatchParams, ToolRunResult, optional=False),
    "lich.runTool": CommandType(RunToolParams, ToolRunResult, optional=False),
    "lich.mentions": CommandType(MentionsParams, MentionsResult),
    "lich.threads": CommandType(NoParams, ThreadsResult),
    "lich.thread": CommandType(ThreadParams, ThreadResult, optional=False),
    "lich.rewind": CommandType(RewindParams, RewindResult, optional=False),
    "lich.trustWorkspace": CommandType(TrustWorkspaceParams, TrustWorkspaceResult),
    "lich.runTests": CommandType(RunTestsParams, RunTestsResult),
    "lich.undoTask": CommandType(UndoTaskParams, UndoTaskResult),
    "lich.answerQuestion": CommandType(AnswerQuestionParams, AnswerQuestionResult, optional=False),
    "lich.acceptHunk": CommandType(HunkParams, ReviewAnswerResult, optional=False),
    "lich.rejectHunk": CommandType(HunkParams, ReviewAnswerResult, optional=False),
    "lich.acceptAll": CommandType(ReviewScopeParams, ReviewAnswerResult),
    "lich.rejectAll": CommandType(ReviewScopeParams, ReviewAnswerResult),
    "lich.reviewList": CommandType(ReviewScopeParams, ReviewListResult),
}


# --- conversion ---


class _FieldError(Exception):
    """What is wrong with one value (the path to it is added on the way out)."""


_JSON_NAMES = {str: "a string", bool: "true or false", int: "an integer", float: "a number"}


def _brief(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:39] + "…"


def _type_name(value: Any) -> str:
    return type(value).__name__


def _strict(kind: type) -> Any:
    def hook(value: Any, _: Any) -> Any:
        if kind is float and isinstance(value, int) and not isinstance(value, bool):
            return float(value)
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            raise _FieldError(f"must be {_JSON_NAMES[kind]}, got {_type_name(value)}")
        return value

    return hook


def _strict_dict(value: Any, _: Any) -> Any:
    if not isinstance(value, dict):
        raise _FieldError(f"must be an object, got {_type_name(value)}")
    return value


@cache
def converter() -> Any:
    """pygls' own converter (lsprotocol's cattrs hooks), strict for JSON scalars and objects."""
    from pygls.protocol import default_converter

    conv = default_converter()
    for kind in (str, bool, int, float):
        conv.register_structure_hook(kind, _strict(kind))
    conv.register_structure_hook_func(lambda kind: get_origin(kind) is dict, _strict_dict)
    conv.register_structure_hook_factory(lambda kind: get_origin(kind) is list, _list_hook)
    conv.register_structure_hook_factory(lambda kind: get_origin(kind) is Literal, _choice_hook)
    conv.register_structure_hook_factory(dataclasses.is_dataclass, _object_hook)
    conv.register_unstructure_hook_factory(dataclasses.is_dataclass, _unstructure_factory)
    return conv


def _list_hook(kind: Any, conv: Any) -> Any:
    item_kind = get_args(kind)[0]

    def hook(value: Any, _: Any) -> list[Any]:
        if not isinstance(value, list):
            raise _FieldError(f"must be a list, got {_type_name(value)}")
        out = []
        for index, item in enumerate(value):
            try:
                out.append(conv.structure(item, item_kind))
            except _FieldError as err:
                raise _FieldError(f"item {index} {err}") from None
        return out

    return hook


def _choice_hook(kind: Any, conv: Any) -> Any:
    choices = get_args(kind)

    def hook(value: Any, _: Any) -> Any:
        if value not in choices:
            raise _FieldError(f"must be one of {', '.join(map(str, choices))}, got {value!r}")
        return value

    return hook


def _object_hook(kind: Any, conv: Any) -> Any:
    from cattrs.gen import make_dict_structure_fn

    inner = make_dict_structure_fn(kind, conv)

    def hook(value: Any, _: Any) -> Any:
        if not isinstance(value, dict):
            raise _FieldError(f"must be an object, got {_type_name(value)}")
        return inner(value, kind)

    return hook


def _unstructure_factory(cls: type) -> Any:
    fields = dataclasses.fields(cls)

    def unstructure(obj: Any) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for item in fields:
            value = getattr(obj, item.name)
            if value is None and item.metadata.get("omit_if_none"):
                continue
            out[item.name] = converter().unstructure(value)
        return out

    return unstructure


def _leaf(exc: BaseException, path: list[str]) -> tuple[list[str], BaseException]:
    """The first leaf error of a cattrs validation error, and the field path to it."""
    subs = getattr(exc, "exceptions", None)
    if not subs:
        return path, exc
    sub = subs[0]
    step = None
    for note in getattr(sub, "__notes__", ()):
        name = getattr(note, "name", None)
        index = getattr(note, "index", None)
        if name is not None:
            step = str(name)
            break
        if index is not None:
            step = f"[{index}]"
            break
    return _leaf(sub, [*path, step] if step is not None else path)


def _join(path: list[str]) -> str:
    return "".join(part if part.startswith("[") else f".{part}" for part in path).lstrip(".")


RANGE_SHAPE = "an LSP range {start: {line, character}, end: {line, character}}"


def _message(command: str, path: list[str], exc: BaseException) -> str:
    where = _join(path)
    if len(path) > 1 and path[0] == "range":
        # Said of the range as a whole, as lich.ask always did; the inner place in parentheses.
        inner = _message(command, path[1:], exc).split(": ", 1)[1]
        inner = inner.replace("field '", "'range.")
        return f"{command}: field 'range' must be {RANGE_SHAPE} ({inner})"
    if isinstance(exc, KeyError):
        return f"{command}: missing required field '{where}'"
    if isinstance(exc, _FieldError):
        return f"{command}: field '{where}' {exc}"
    if isinstance(exc, (ValueError, TypeError, AttributeError)):
        return f"{command}: field '{where}' is malformed ({type(exc).__name__})"
    return f"{command}: field '{where}' is invalid: {exc}"


def _check(command: str, obj: Any, prefix: str = "") -> None:
    """The checks the types cannot say: non-empty strings, line numbers, uintegers, turns."""
    for item in dataclasses.fields(obj):
        value = getattr(obj, item.name)
        where = f"{prefix}{item.name}"
        if dataclasses.is_dataclass(value):
            _check(command, value, where + ".")
            continue
        if value is None:
            continue
        meta = item.metadata
        if meta.get("non_empty") and value == "":
            raise BadArguments(f"{command}: field '{where}' must not be empty")
        if meta.get("line_number") and not 1 <= value <= MAX_UINTEGER:
            raise BadArguments(
                f"{command}: field '{where}' must be a line number >= 1 (at most {MAX_UINTEGER}), got {value!r}"
            )
        if meta.get("uinteger") and not 0 <= value <= MAX_UINTEGER:
            top = where.split(".")[0]
            raise BadArguments(
                f"{command}: field '{top}' positions must be non-negative integers (at most {MAX_UINTEGER}): "
                f"'{where}' is {_brief(value)}"
            )
        if meta.get("positive") and value < 1:
            raise BadArguments(f"{command}: field '{where}' must be a turn number (1, 2, ...)")


def parse_params(command: str, args: tuple[Any, ...]) -> Any:
    """The command's one object argument as its params dataclass, or BadArguments naming the
    field. An unknown field is ignored (a newer client may send one)."""
    spec = COMMAND_TYPES[command]
    if not args or (len(args) == 1 and args[0] is None):
        if not spec.optional:
            raise BadArguments(f"{command}: expected one object argument, got none")
        args = ({},)
    if len(args) != 1:
        raise BadArguments(f"{command}: expected one object argument, got {len(args)} arguments")
    value = args[0]
    if not isinstance(value, dict):
        raise BadArguments(f"{command}: expected an object argument, got {_type_name(value)}")
    # JSON null is "not given" for every field.
    known = {item.name for item in dataclasses.fields(spec.params)}
    given = {key: item for key, item in value.items() if key in known and item is not None}
    try:
        params = converter().structure(given, spec.params)
    except Exception as err:  # noqa: BLE001 - cattrs' validation errors, turned into words
        path, leaf = _leaf(err, [])
        raise BadArguments(_message(command, path, leaf)) from None
    _check(command, params)
    return params


def result_of(cls: type[Any], data: dict[str, Any]) -> Any:
    """A result dataclass from the JSON a part built (checked: a wrong shape is a bug, raised;
    so is a field the type does not declare, which the clients' types would not know)."""
    unknown = set(data) - {item.name for item in dataclasses.fields(cls)}
    if unknown:
        raise ValueError(f"{cls.__name__} has no field {', '.join(sorted(unknown))}")
    return converter().structure(data, cls)


def to_json(result: Any) -> Any:
    """A result dataclass as the JSON the clients read (anything else as it is)."""
    if dataclasses.is_dataclass(result) and not isinstance(result, type):
        return converter().unstructure(result)
    return result


def to_range(value: Range) -> Any:
    from lsprotocol import types

    return types.Range(
        start=types.Position(line=value.start.line, character=value.start.character),
        end=types.Position(line=value.end.line, character=value.end.character),
    )


# --- the JSON Schema (docs/lich-commands.schema.json) ---


def _type_schema(annotation: Any, defs: dict[str, Any]) -> dict[str, Any]:
    return type_schema(annotation, defs, _object_schema)


def _object_schema(cls: type, defs: dict[str, Any]) -> dict[str, Any]:
    hints = get_type_hints(cls)
    properties: dict[str, Any] = {}
    required: list[str] = []
    is_params = cls.__name__.endswith("Params") or cls in (Range, Position)
    for item in dataclasses.fields(cls):
        schema = _type_schema(hints[item.name], defs)
        if item.metadata.get("doc"):
            schema = {**schema, "description": item.metadata["doc"]}
        if item.metadata.get("non_empty"):
            schema["minLength"] = 1
        if item.metadata.get("line_number") or item.metadata.get("positive"):
            schema["minimum"] = 1
        if item.metadata.get("uinteger"):
            schema.update(minimum=0, maximum=MAX_UINTEGER)
        properties[item.name] = schema
        has_default = (
            item.default is not dataclasses.MISSING
            or item.default_factory is not dataclasses.MISSING
        )
        if (is_params and not has_default) or (
            not is_params and not item.metadata.get("omit_if_none")
        ):
            required.append(item.name)
    out: dict[str, Any] = {"type": "object"}
    if cls.__doc__ and not cls.__doc__.startswith(cls.__name__ + "("):
        out["description"] = " ".join(cls.__doc__.split())
    out.update({"properties": properties, "required": required})
    return out


def command_schema() -> dict[str, Any]:
    """Every advertised command's params and result: `commands.<name>.params|result`."""
    defs: dict[str, Any] = {}
    commands: dict[str, Any] = {}
    for name, spec in COMMAND_TYPES.items():
        commands[name] = {
            "type": "object",
            "properties": {
                "params": _type_schema(spec.params, defs),
                "result": _type_schema(spec.result, defs),
            },
            "required": ["params", "result"],
        }
    return {
        "$schema": SCHEMA_DIALECT,
        "$comment": (
            "Generated from the dataclasses in lich_lsp/contract.py by "
            "`python -m lich_lsp.contract --schema`; do not edit by hand."
        ),
        "title": "lich workspace/executeCommand commands",
        "description": (
            "Each command's one object argument (params) and its result (docs/lsp.md). An "
            "argument's unknown field is ignored; a result object with no listed properties is "
            "described in docs/lsp.md."
        ),
        "type": "object",
        "properties": {"commands": {"type": "object", "properties": commands}},
        "$defs": dict(sorted(defs.items())),
    }


def schema_text() -> str:
    return json.dumps(command_schema(), indent=2, ensure_ascii=False) + "\n"


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if "--schema" not in argv:
        print("usage: python -m lich_lsp.contract --schema [--out PATH|-]", file=sys.stderr)
        return 2
    out = argv[argv.index("--out") + 1] if "--out" in argv else str(SCHEMA_PATH)
    if out == "-":
        sys.stdout.write(schema_text())
    else:
        Path(out).write_text(schema_text(), encoding="utf-8")
        print(out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
