"""Questions every client can answer: a diagnostic with code actions, answered by a command.

An editor without `window/showMessageRequest` (Helix, Kate, Emacs's eglot) cannot show a question
with buttons, but every client shows diagnostics and offers code actions. So for such a client a
question (a tool's approval, the workspace's trust) becomes a pending question:

- a diagnostic (severity warning, source `lich`, code `lich-question`) on the file the task started
  from (lich.ask's `uri`), else on the first open document; with no document open it waits for the
  first `didOpen`. Its range covers the file's first line (a zero-width range shows no marker in
  Kate);
- one code action per answer (`quickfix.lich.question`), offered in every document while the
  question is pending, each carrying `lich.answerQuestion {id, answer}`;
- a `window/showMessage` saying where to answer.

The approval's waiter is bounded (PENDING_APPROVAL_TIMEOUT_S, then a denial that says so) and ends
with the task's cancellation; the trust question waits for nothing (its answer does the work) and
is withdrawn when the trust changes or the question is asked again.
"""

from __future__ import annotations

import asyncio
import contextvars
import itertools
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from lsprotocol import types

from lich_lsp.arguments import BadArguments
from lich_lsp.code_actions import kind_allowed
from lich_lsp.commands import ANSWER_QUESTION
from lich_lsp.contract import AnswerQuestionParams, AnswerQuestionResult
from lich_lsp.paths import relative_path, uri_to_path

if TYPE_CHECKING:
    from lich_core.vocabulary import CancelToken
    from lich_lsp.commands import CommandTable
    from lich_lsp.context import SessionContext

log = logging.getLogger("lich.lsp.questions")

ANSWER_COMMAND = ANSWER_QUESTION
QUESTION_KIND = "quickfix.lich.question"
QUESTION_SOURCE = "lich"
QUESTION_CODE = "lich-question"
# The key under which the session publishes these diagnostics beside other sources' (review hunks, tests).
DIAGNOSTICS_KEY = "lich-questions"
# How long a tool waits for the answer to its pending approval before it is denied.
PENDING_APPROVAL_TIMEOUT_S = 600.0

# The file a lich.ask started from: set by the command, inherited by the task's tool calls (an
# asyncio task copies the context it was created in).
ORIGIN_URI: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "lich_origin_uri", default=None
)


@dataclass(frozen=True)
class Choice:
    answer: str  # the value lich.answerQuestion takes ("once", "trust", ...)
    title: str  # what the code action says ("Allow once", "Trust", ...)


@dataclass
class PendingQuestion:
    question_id: str
    kind: str  # "approval" | "trust"
    text: str  # the question itself, as the message request would have said it
    subject: str  # short, after each code action's title: "Allow once: run terminal"
    choices: tuple[Choice, ...]
    origin: str | None  # a uri to show it on, if the question has one
    on_answer: Callable[[str], None] | None = None
    future: asyncio.Future[str] = field(
        default_factory=lambda: asyncio.get_running_loop().create_future()
    )
    uri: str | None = (
        None  # where its diagnostic is published (None: no document to show it on yet)
    )
    diagnostic: types.Diagnostic | None = None

    def answers(self) -> list[str]:
        return [choice.answer for choice in self.choices]


class QuestionGone(Exception):
    """lich.answerQuestion for a question that is no longer pending."""


class PendingQuestions:
    """The session's pending questions, their diagnostics and their code actions."""

    def __init__(self, *, ctx: SessionContext) -> None:
        self._documents = ctx.documents
        self._port = ctx.port
        self._root = ctx.root
        self._messages = ctx.messages
        self._ids = itertools.count(1)
        self._pending: dict[str, PendingQuestion] = {}

    def register(self, table: CommandTable) -> None:
        table.add(ANSWER_QUESTION, self.answer_command, typed=True)

    def pending(self) -> list[PendingQuestion]:
        return list(self._pending.values())

    # --- asking ---

    def post(
        self,
        kind: str,
        text: str,
        subject: str,
        choices: tuple[Choice, ...],
        *,
        origin: str | None = None,
        on_answer: Callable[[str], None] | None = None,
        also: str = "",
    ) -> PendingQuestion:
        """Show a question as a diagnostic and tell the user where (`also`: another way to answer,
        said after); its `future` gets the answer."""
        question = PendingQuestion(
            f"q{next(self._ids)}",
            kind,
            text,
            subject,
            choices,
            origin if origin is not None else ORIGIN_URI.get(),
            on_answer,
        )
        self._pending[question.question_id] = question
        self._place(question)
        titles = ", ".join(choice.title for choice in choices)
        answers = " | ".join(f'"{choice.answer}"' for choice in choices)
        where = (
            f"the lich diagnostic in {self._describe(question.uri)}"
            if question.uri is not None
            else "the lich diagnostic in the next file you open"
        )
        self._messages.show_message(
            f"{text} This editor cannot show questions: answer with the code actions ({titles}) on {where}, "
            f'or run {ANSWER_COMMAND} with {{id: "{question.question_id}", answer: {answers}}}.'
            + (f" {also}" if also else ""),
            types.MessageType.Warning,
        )
        return question

    async def wait(
        self, question: PendingQuestion, cancel: CancelToken, timeout_s: float
    ) -> str | None:
        """The answer, or None when `timeout_s` passed or `cancel` fired; the question is withdrawn."""
        cancelled = asyncio.ensure_future(cancel.wait())
        waits: set[asyncio.Future[Any]] = {question.future, cancelled}
        try:
            await asyncio.wait(waits, timeout=timeout_s, return_when=asyncio.FIRST_COMPLETED)
            return (
                question.future.result()
                if question.future.done() and not question.future.cancelled()
                else None
            )
        finally:
            cancelled.cancel()
            self.withdraw(question)

    def withdraw(self, question: PendingQuestion) -> None:
        """No longer pending (answered, timed out, cancelled or replaced): its diagnostic goes."""
        if self._pending.pop(question.question_id, None) is None:
            return
        if not question.future.done():
            question.future.cancel()
        if question.uri is not None:
            self._publish(question.uri)

    def withdraw_kind(self, kind: str) -> None:
        for question in [q for q in self._pending.values() if q.kind == kind]:
            self.withdraw(question)

    # --- answering ---

    def answer(self, question_id: str, answer: str) -> PendingQuestion:
        """Answer a pending question (lich.answerQuestion); ValueError for an answer it does not take."""
        question = self._pending.get(question_id)
        if question is None:
            raise QuestionGone(question_id)
        if answer not in question.answers():
            raise ValueError(
                f"question {question_id} takes one of {', '.join(question.answers())}, got {answer!r}"
            )
        if not question.future.done():
            question.future.set_result(answer)
        self.withdraw(question)
        if question.on_answer is not None:
            question.on_answer(answer)
        return question

    # --- the editor's side ---

    def did_open(self, uri: str) -> None:
        """A question with no document to show it on goes on the first one the user opens."""
        for question in self._pending.values():
            if question.uri is None:
                self._place(question, uri)

    def code_actions(
        self, params: types.CodeActionParams, *, literal_support: bool
    ) -> list[types.CodeAction | types.Command]:
        """Every pending question's answers, wherever the user asks for code actions."""
        only = [str(kind) for kind in params.context.only] if params.context.only else None
        if not self._pending or not kind_allowed(QUESTION_KIND, only):
            return []
        actions: list[types.CodeAction | types.Command] = []
        for question in self._pending.values():
            diagnostics = (
                [question.diagnostic]
                if question.diagnostic is not None and question.uri == params.text_document.uri
                else None
            )
            for index, choice in enumerate(question.choices):
                title = f"{choice.title}: {question.subject}"
                command = types.Command(
                    title=title,
                    command=ANSWER_COMMAND,
                    arguments=[{"id": question.question_id, "answer": choice.answer}],
                )
                if not literal_support:
                    actions.append(command)
                    continue
                actions.append(
                    types.CodeAction(
                        title=title,
                        kind=QUESTION_KIND,
                        command=command,
                        diagnostics=diagnostics,
                        # The first answer is the question's usual one (Allow once, Trust).
                        is_preferred=True if index == 0 else None,
                    )
                )
        return actions

    # --- diagnostics ---

    def _place(self, question: PendingQuestion, opened: str | None = None) -> None:
        uri = question.origin or opened or self._first_open_uri()
        if uri is None:
            return
        question.uri = uri
        titles = ", ".join(choice.title for choice in question.choices)
        question.diagnostic = types.Diagnostic(
            range=self._first_line(uri),
            message=f"{question.text} Answer with a code action: {titles}.",
            severity=types.DiagnosticSeverity.Warning,
            source=QUESTION_SOURCE,
            code=QUESTION_CODE,
            data={"id": question.question_id},
        )
        self._publish(uri)

    def _publish(self, uri: str) -> None:
        diagnostics = [
            q.diagnostic
            for q in self._pending.values()
            if q.uri == uri and q.diagnostic is not None
        ]
        self._messages.publish_diagnostics(DIAGNOSTICS_KEY, uri, diagnostics)

    def _first_open_uri(self) -> str | None:
        documents = self._documents
        paths = documents.open_paths()
        return documents.uri_for(paths[0]) if paths else None

    def _first_line(self, uri: str) -> types.Range:
        """The first line, with a width: the end of its text, or the next line's start if it is empty."""
        path = uri_to_path(uri)
        text = ""
        if path is not None:
            try:
                text = self._documents.current_text(path) or ""
            except OSError:
                text = ""
        first, newline, _ = text.partition("\n")
        first = first.rstrip("\r")
        start = types.Position(line=0, character=0)
        if first:
            end = types.Position(
                line=0, character=self._port.position_codec.client_num_units(first)
            )
        elif newline:
            end = types.Position(line=1, character=0)
        else:
            end = start  # an empty file has no character to cover
        return types.Range(start=start, end=end)

    def _describe(self, uri: str | None) -> str:
        path = uri_to_path(uri) if uri else None
        return relative_path(self._root, path) if path is not None else str(uri)

    async def answer_command(
        self, params: AnswerQuestionParams, request_id: Any
    ) -> AnswerQuestionResult:
        """lich.answerQuestion {id, answer}: what a pending question's code action runs."""
        question_id, answer = params.id, params.answer
        try:
            question = self.answer(question_id, answer)
        except QuestionGone:
            raise BadArguments(
                f"{ANSWER_QUESTION}: question_gone: no pending question {question_id!r} "
                "(answered already, timed out, or its task ended)"
            ) from None
        except ValueError as err:
            raise BadArguments(f"{ANSWER_QUESTION}: {err}") from None
        return AnswerQuestionResult(id=question.question_id, kind=question.kind, answer=answer)
