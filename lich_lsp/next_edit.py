"""Next edit suggestions: `textDocument/copilotInlineEdit`, Copilot's request and shape
(docs/next-edit.md), answered by the `next_edit` model.

Params `{textDocument: {uri, version}, position}`; result `{edits: [{range, text, textDocument:
{uri, version}}]}`, ranges in the session's position encoding. The server keeps the user's recent
edits from didChange (lich_core.next_edit.history) while a model is configured; a request asks
the model to rewrite the region around the cursor, and the rewritten region comes back as one
minimal edit per changed hunk, which may lie away from the cursor. A request for an older
version of the document than the server's, or one the document moved past while the model
thought, gets no edits. Per document one request is in flight: a newer one supersedes the older
(its provider stream is closed at once); `$/cancelRequest` cancels the handler's task, which
closes the stream the same way. A provider failure is an empty answer and one log line.
Documents whose text may not go to a model (lich_core.tools.secrets.prompt_refusal) are never
asked about and their edits never kept.
"""

from __future__ import annotations

import asyncio
import bisect
import logging
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsprotocol import types
from pygls.exceptions import JsonRpcInvalidParams

from lich_core.next_edit.diff import TextEdit, region_edits, undoes
from lich_core.next_edit.history import EditHistory, render_edits
from lich_core.next_edit.prompt import (
    EDITS_MAX_CHARS,
    chat_prompt,
    excerpt_around,
    parse_answer,
    region_closed,
    zeta_prompt,
)
from lich_core.providers.base import ProviderError
from lich_core.tools.secrets import prompt_refusal
from lich_core.vocabulary import CancelToken
from lich_lsp.completions import offset_at
from lich_lsp.config import ConfiguredModel
from lich_lsp.paths import relative_path, uri_to_path

if TYPE_CHECKING:
    from lich_core.config import Config
    from lich_core.next_edit.model import NextEditModel
    from lich_lsp.config import ConfigHolder
    from lich_lsp.messages import EditorMessages
    from lich_lsp.port import EditorPort

log = logging.getLogger("lich.lsp.next_edit")

NEXT_EDIT_METHOD = "textDocument/copilotInlineEdit"
# After the region's end marker, how long the rest of the answer is read (Zeta closes its fence
# and stops: a few tokens) before the stream is closed instead.
DRAIN_S = 1.0


def _build_next_edit_model(config: Config) -> NextEditModel | None:
    if config.settings.next_edit is None:
        return None  # off: httpx is not imported for it
    # Imported when a next-edit model is configured: it loads the HTTP client.
    from lich_core.next_edit.model import build_next_edit_model

    return build_next_edit_model(config)


class NextEdits:
    def __init__(
        self, holder: ConfigHolder, messages: EditorMessages, port: EditorPort, root: Path
    ) -> None:
        self._holder = holder
        self._messages = messages
        self._port = port
        self._root = root
        self.history = EditHistory()
        # uri -> the text as of the last change seen (the next change is diffed against it).
        self._texts: dict[str, str] = {}
        # uri -> its root-relative path, "" for a document whose text never goes to a model.
        self._paths: dict[str, str] = {}
        self._in_flight: dict[str, CancelToken] = {}
        self._drains: set[asyncio.Future[None]] = set()
        self._model: ConfiguredModel[NextEditModel] = ConfiguredModel(
            holder, messages, _build_next_edit_model, "next edits"
        )
        self._configured: tuple[int, bool] | None = None  # (config generation, configured)
        self._last_failure = ""
        self.requests = 0  # provider requests made (lich.status; the bench reads it)

    # --- the model ---

    def configured(self) -> bool:
        """Whether a `next_edit` model is configured (asked per keystroke: once per config
        generation, as Settings are made at each read)."""
        generation = self._holder.generation
        if self._configured is None or self._configured[0] != generation:
            self._configured = (generation, self._holder.config.settings.next_edit is not None)
        return self._configured[1]

    def model(self) -> NextEditModel | None:
        return self._model.get()

    def status(self) -> dict[str, Any]:
        """lich.status's `next_edit`: which model suggests next edits (None: they are off)."""
        model = self.model()
        return {
            "model": model.describe() if model is not None else None,
            "error": self._model.error,
            "requests": self.requests,
        }

    # --- the editor's document messages ---

    def did_open(self, uri: str) -> None:
        if self.configured():
            doc = self._port.text_document(uri)
            if doc is not None:
                self._texts[uri] = doc.source

    def did_change(self, uri: str) -> None:
        """After the server's copy took the change: the change joins the recent edits."""
        if not self.configured():
            self._texts.pop(uri, None)
            return
        doc = self._port.text_document(uri)
        if doc is None:
            return
        new = doc.source
        old = self._texts.get(uri)
        self._texts[uri] = new
        if old is not None and old is not new:
            rel = self._relative(uri)
            if rel:
                self.history.record(rel, old, new)

    def did_close(self, uri: str) -> None:
        self._texts.pop(uri, None)
        self._paths.pop(uri, None)
        token = self._in_flight.pop(uri, None)
        if token is not None:
            token.cancel("closed")

    # --- the request ---

    async def inline_edit(self, params: Any) -> dict[str, Any]:
        uri, version, position = parse_params(params)
        model = self.model()
        if model is None:
            return _no_edits()
        doc = self._port.text_document(uri)
        rel = self._relative(uri)
        if doc is None or not rel:
            return _no_edits()
        if version is not None and doc.version is not None and version != doc.version:
            return _no_edits()  # the request is for a text the user has moved on from
        current = doc.version
        older = self._in_flight.get(uri)
        if older is not None:
            older.cancel("superseded")  # its stream closes now
        token = CancelToken()
        self._in_flight[uri] = token
        try:
            text = doc.source
            excerpt = excerpt_around(rel, text, offset_at(text, position, self._encoding()))
            events = render_edits(self.history.recent(), EDITS_MAX_CHARS)
            prompt = (zeta_prompt if model.wire_format == "zeta" else chat_prompt)(events, excerpt)
            answer = await self._ask(model, prompt, token)
        finally:
            if self._in_flight.get(uri) is token:
                del self._in_flight[uri]
        doc = self._port.text_document(uri)
        if answer is None or token.cancelled or doc is None or doc.version != current:
            return _no_edits()
        rewritten = parse_answer(answer, excerpt)
        if rewritten is None:
            return _no_edits()
        edits = region_edits(text, excerpt.region_start, excerpt.region_end, rewritten)
        edits = self._without_undo(rel, text, edits)
        return {"edits": [self._wire_edit(uri, current, text, edit) for edit in edits]}

    async def _ask(self, model: NextEditModel, prompt: str, token: CancelToken) -> str | None:
        """The model's answer, read until the region is whole; None when there is none."""
        self.requests += 1
        pieces: list[str] = []
        stream = model.stream(prompt, token)
        handed_off = False
        try:
            async for piece in stream:
                pieces.append(piece)
                if token.cancelled:
                    break
                if ">" in piece and region_closed("".join(pieces)):
                    # The region is whole: answer now; the few tokens after it are read in the
                    # background, so the connection is kept for the next request.
                    self._drain(stream)
                    handed_off = True
                    break
        except asyncio.CancelledError:
            task = asyncio.current_task()
            cancelling = getattr(task, "cancelling", None)
            if token.cancelled and (cancelling is None or not cancelling()):
                return None  # superseded: the newer request answers
            raise  # $/cancelRequest: pygls answers the request as cancelled
        except ProviderError as err:
            self._failed(str(err))
            return None
        except Exception as err:  # noqa: BLE001 - a suggestion never breaks the editor
            log.debug("next edit failed", exc_info=True)
            self._failed(f"internal_error: {type(err).__name__}: {err}")
            return None
        finally:
            close = getattr(stream, "aclose", None)
            if close is not None and not handed_off:
                await close()  # closes the provider's stream at once
        self._last_failure = ""
        return "".join(pieces)

    def _drain(self, stream: AsyncIterator[str]) -> None:
        """Read the rest of `stream` for DRAIN_S at most in a task of its own, then close it: a
        server that ends its answer keeps the connection (no new TLS handshake next time); one
        that goes on is cut off. The request's token still closes it at once."""

        async def drain() -> None:
            try:
                await asyncio.wait_for(_read_to_end(stream), DRAIN_S)
            except (asyncio.TimeoutError, ProviderError):
                pass
            except Exception:  # noqa: BLE001 - the answer was given; this is only cleanup
                log.debug("draining a next-edit answer failed", exc_info=True)
            finally:
                close = getattr(stream, "aclose", None)
                if close is not None:
                    await close()

        task = asyncio.ensure_future(drain())
        self._drains.add(task)  # kept until done (the loop holds tasks only weakly)
        task.add_done_callback(self._drains.discard)

    def _without_undo(self, rel: str, text: str, edits: list[TextEdit]) -> list[TextEdit]:
        """`edits` without those that would undo the user's latest edit of this document."""
        latest = self.history.latest(rel)
        if latest is None or latest.end_offset > len(text):
            return edits  # none, or the history missed a change: nothing to compare
        start, end, before = latest.offset, latest.end_offset, "".join(latest.old)
        return [edit for edit in edits if not undoes(edit, text, start, end, before)]

    def _wire_edit(self, uri: str, version: int | None, text: str, edit: TextEdit) -> dict:
        starts = _line_starts(text)
        return {
            "range": {
                "start": self._position(text, starts, edit.start),
                "end": self._position(text, starts, edit.end),
            },
            "text": edit.text,
            "textDocument": {"uri": uri, "version": version},
        }

    def _position(self, text: str, starts: list[int], offset: int) -> dict[str, int]:
        line = bisect.bisect_right(starts, offset) - 1
        line = max(0, min(line, len(starts) - 1))
        before = text[starts[line] : offset]
        return {"line": line, "character": self._port.position_codec.client_num_units(before)}

    def _failed(self, message: str) -> None:
        """One log line per distinct failure until a suggestion succeeds again."""
        if message != self._last_failure:
            self._last_failure = message
            self._messages.log(f"lich: next edit failed: {message}", types.MessageType.Warning)

    def _relative(self, uri: str) -> str:
        """`uri`'s root-relative path, or "" for a document whose text never goes to a model
        (outside the root, the agent's config, a secret file: prompt_refusal)."""
        rel = self._paths.get(uri)
        if rel is None:
            path = uri_to_path(uri)
            refused = path is None or prompt_refusal(self._root, path) is not None
            rel = self._paths[uri] = (
                "" if refused or path is None else relative_path(self._root, path)
            )
        return rel

    def _encoding(self) -> str:
        return self._port.position_encoding


def _no_edits() -> dict[str, Any]:
    return {"edits": []}


async def _read_to_end(stream: AsyncIterator[str]) -> None:
    async for _ in stream:
        pass


def _line_starts(text: str) -> list[int]:
    """Each line's start offset as pygls splits lines; after a final line break, len(text) too:
    the start of the empty last line a position may name (without one, the text's end is on
    its last line)."""
    starts = [0]
    lines = text.splitlines(keepends=True)
    for line in lines:
        starts.append(starts[-1] + len(line))
    if lines and lines[-1].splitlines() == [lines[-1]]:
        starts.pop()  # the last line has no break: nothing starts after it
    return starts


def _field(value: Any, name: str) -> Any:
    if isinstance(value, Mapping):
        return value.get(name)
    return getattr(value, name, None)


def _invalid(what: str) -> JsonRpcInvalidParams:
    return JsonRpcInvalidParams(message=f"invalid_arg: {NEXT_EDIT_METHOD}: {what}")


def parse_params(params: Any) -> tuple[str, int | None, types.Position]:
    """(uri, version or None, position) from the request's params; JsonRpcInvalidParams names
    what is wrong."""
    document = _field(params, "textDocument")
    uri = _field(document, "uri") if document is not None else None
    if not isinstance(uri, str) or not uri:
        raise _invalid("textDocument.uri: expected a document URI")
    version = _field(document, "version")
    if version is not None and (not isinstance(version, int) or isinstance(version, bool)):
        raise _invalid(f"textDocument.version: expected an integer, got {version!r}")
    position = _field(params, "position")
    numbers = [
        _field(position, key) if position is not None else None for key in ("line", "character")
    ]
    line, character = numbers
    if not all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in numbers):
        raise _invalid("position {line, character}: expected non-negative integers")
    assert isinstance(line, int) and isinstance(character, int)  # checked just above
    return uri, version, types.Position(line=line, character=character)
