"""Code actions: cheap, static, never a model call.

"Ask agent…" (`refactor.rewrite.lich`) on any range, or, for a client that can neither ask for
a prompt nor show a choice (Kate, Helix: no window/showMessageRequest, no lich integration), one
"Ask agent: <prompt>" per configured `quick_prompts` entry instead; one "Fix with agent: <message>"
(`quickfix.lich`) per diagnostic in the request's context (any source but lich's own questions
and review hunks), and the user's
`code_actions: [{title, prompt, kind}]`. Every action carries a `lich.ask` command; the
diagnostics the client sent are remembered per document version so a later lich.ask on that
file can put them in the task context. On a line an undoable task changed, "Undo task: <title>"
(`refactor.rewrite.lich.undo`) carries `lich.undoTask` instead (the session finds the tasks).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from lsprotocol import types

from lich_core.settings import settings_of
from lich_lsp.config import DEFAULT_CODE_ACTION_KIND

if TYPE_CHECKING:
    from lich_lsp.documents import DocumentStore

ASK_KIND = "refactor.rewrite.lich"
FIX_KIND = "quickfix.lich"
ASK_TITLE = "Ask agent…"
QUICK_PROMPT_TITLE = "Ask agent: "
FIX_TITLE_MAX_CHARS = 80
ASK_COMMAND = "lich.ask"
# lich's own diagnostics that are no problem to fix: a pending question (pending_questions'
# QUESTION_SOURCE) and a change waiting for review (review_hunks' REVIEW_SOURCE). Their own code
# actions answer them; "Fix with agent" on them would ask the agent about its own question.
# Named here, not imported: both modules sit above this one (tests check the names agree).
NOT_TO_FIX_SOURCES = frozenset({"lich", "lich review"})
# "Undo task: <title>" on the lines a task changed (lich_lsp.undo); inside the advertised ASK_KIND.
UNDO_KIND = "refactor.rewrite.lich.undo"
UNDO_TITLE = "Undo task: "
UNDO_COMMAND = "lich.undoTask"


def kind_allowed(kind: str, only: list[str] | None) -> bool:
    """LSP `only` filters by hierarchical prefix: "refactor" admits "refactor.rewrite.lich"."""
    if not only:
        return True
    return any(kind == allowed or kind.startswith(allowed + ".") for allowed in only)


def _range_json(value: types.Range) -> dict[str, Any]:
    return {
        "start": {"line": value.start.line, "character": value.start.character},
        "end": {"line": value.end.line, "character": value.end.character},
    }


def diagnostic_json(diagnostic: types.Diagnostic) -> dict[str, Any]:
    return {
        "range": _range_json(diagnostic.range),
        "message": diagnostic.message,
        "severity": int(diagnostic.severity) if diagnostic.severity is not None else None,
        "source": diagnostic.source,
        "code": diagnostic.code if isinstance(diagnostic.code, (int, str)) else None,
    }


def fix_prompt(diagnostic: types.Diagnostic) -> str:
    source = f" ({diagnostic.source})" if diagnostic.source else ""
    line = diagnostic.range.start.line + 1
    return f"Fix this problem reported on line {line}{source}: {diagnostic.message}"


def _first_line(text: str) -> str:
    line = text.strip().splitlines()[0] if text.strip() else text
    return line if len(line) <= FIX_TITLE_MAX_CHARS else line[: FIX_TITLE_MAX_CHARS - 1] + "…"


def compute_code_actions(
    params: types.CodeActionParams,
    configured: Sequence[Mapping[str, Any]],
    literal_support: bool,
    undo_tasks: Sequence[tuple[str, str]] = (),
    *,
    llm_tag: bool = False,
    quick_prompts: Sequence[str] | None = None,
) -> list[types.CodeAction | types.Command]:
    """The actions for one request; `llm_tag`: the client lists LSP 3.18's
    CodeActionTag.LLMGenerated in codeAction.tagSupport, so the actions that run the agent carry it.
    `quick_prompts` (not None: the client cannot ask for a prompt): offered as actions of their own
    in place of "Ask agent…", whose lich.ask without a prompt could only fail there."""
    uri = params.text_document.uri
    only = [str(kind) for kind in params.context.only] if params.context.only else None
    diagnostics = list(params.context.diagnostics or [])
    actions: list[types.CodeAction] = []

    def add(
        title: str,
        kind: str,
        arguments: dict[str, Any],
        diagnostic: types.Diagnostic | None = None,
        command_name: str = ASK_COMMAND,
    ) -> None:
        if not kind_allowed(kind, only):
            return
        command = types.Command(title=title, command=command_name, arguments=[arguments])
        actions.append(
            types.CodeAction(
                title=title,
                kind=kind,
                command=command,
                diagnostics=[diagnostic] if diagnostic is not None else None,
                tags=[types.CodeActionTag.LlmGenerated]
                if llm_tag and command_name == ASK_COMMAND
                else None,
            )
        )

    base = {"uri": uri, "range": _range_json(params.range)}
    all_diagnostics = [diagnostic_json(d) for d in diagnostics]
    if quick_prompts is None:
        add(ASK_TITLE, ASK_KIND, {**base, "diagnostics": all_diagnostics})
    else:
        for prompt in quick_prompts:
            add(
                f"{QUICK_PROMPT_TITLE}{_first_line(prompt)}",
                ASK_KIND,
                {**base, "prompt": prompt, "diagnostics": all_diagnostics},
            )
    for diagnostic in diagnostics:
        if diagnostic.source in NOT_TO_FIX_SOURCES:
            continue
        add(
            f"Fix with agent: {_first_line(diagnostic.message)}",
            FIX_KIND,
            {
                "uri": uri,
                "range": _range_json(diagnostic.range),
                "prompt": fix_prompt(diagnostic),
                "diagnostics": [diagnostic_json(diagnostic)],
            },
            diagnostic,
        )
    for entry in configured:
        add(
            str(entry["title"]),
            str(entry.get("kind") or DEFAULT_CODE_ACTION_KIND),
            {**base, "prompt": str(entry["prompt"]), "diagnostics": all_diagnostics},
        )
    for task_id, title in undo_tasks:
        add(f"{UNDO_TITLE}{title}", UNDO_KIND, {"task_id": task_id}, command_name=UNDO_COMMAND)
    if literal_support:
        return list(actions)
    return [action.command for action in actions if action.command is not None]


def quick_prompts(config: Mapping[str, Any]) -> list[str]:
    """The configured `quick_prompts` that can be offered (non-empty strings)."""
    return [p for p in settings_of(config).quick_prompts if isinstance(p, str) and p.strip()]


class SeenDiagnostics:
    """The diagnostics the editor sent with code action requests, per document version: a later
    lich.ask on that file puts them in the task context (a stale version's are forgotten)."""

    def __init__(self, documents: DocumentStore) -> None:
        self._documents = documents
        self._by_uri: dict[str, tuple[int | None, list[dict[str, Any]]]] = {}

    def remember(self, uri: str, diagnostics: Sequence[types.Diagnostic]) -> None:
        doc = self._documents.document_for_uri(uri)
        self._by_uri[uri] = (
            doc.version if doc is not None else None,
            [diagnostic_json(d) for d in diagnostics],
        )

    def for_uri(self, uri: str) -> list[dict[str, Any]]:
        entry = self._by_uri.get(uri)
        if entry is None:
            return []
        doc = self._documents.document_for_uri(uri)
        if doc is not None and doc.version != entry[0]:
            return []  # seen on an older version of the buffer
        return entry[1]
