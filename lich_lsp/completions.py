"""Inline completions: `textDocument/inlineCompletion` (ghost text) and, for clients without it,
`textDocument/completion` items carrying the same suggestion (docs/completions.md).

Per document, one suggestion is in flight at a time: a newer request for the same document
supersedes the older one, whose provider stream is closed at once (its CancelToken fires and the
stream is closed as the iteration ends); `$/cancelRequest` cancels the handler's task, which
closes the stream the same way. A request first waits `completion_debounce_ms`, so a burst of
keystrokes asks the model once. Typing the first characters of the suggestion shown is answered
from it, with no request, and so is text around the cursor a suggestion was made for before (the
user deleted a character and typed it again). The model's text is cut to the block the cursor
is in and stripped of what repeats the text after the cursor (lich_core.completion.context). A
provider failure is an empty answer and one log line (not one per keystroke); nothing here ever
shows a message.
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
from collections import OrderedDict, deque
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsprotocol import types

from lich_core.completion.context import (
    Window,
    cursor_windows,
    cut_to_block,
    document_windows,
    rank_snippets,
    trim_suffix_overlap,
    typed_through,
)
from lich_core.completion.model import FimModel, FimRequest
from lich_core.providers.base import ProviderError
from lich_core.tools.secrets import prompt_refusal
from lich_core.vocabulary import CancelToken
from lich_lsp.config import ConfiguredModel
from lich_lsp.paths import relative_path, uri_to_path

if TYPE_CHECKING:
    from pygls.workspace import TextDocument

    from lich_core.config import Config
    from lich_lsp.config import ConfigHolder
    from lich_lsp.documents import DocumentStore
    from lich_lsp.edits import ClientFeatures
    from lich_lsp.messages import EditorMessages
    from lich_lsp.port import EditorPort

log = logging.getLogger("lich.lsp.completions")

# Text around the cursor the neighbouring snippets are matched against.
SNIPPET_QUERY_PREFIX_CHARS = 2_000
SNIPPET_QUERY_SUFFIX_CHARS = 500
COMPLETION_LABEL_MAX_CHARS = 80
OWN_TIMES_KEPT = 1_000
# Suggestions kept for the exact text around the cursor they were made for (all documents): a
# user who deletes a character and types it again sees the suggestion again, with no request.
RECENT_SUGGESTIONS_KEPT = 64
# Letters, digits and `_` of any script, as editors take a word when they filter items (Helix:
# alphanumeric or `_`).
_WORD_BEFORE_CURSOR = re.compile(r"\w*$")


@dataclass
class _DocumentState:
    """One document's suggestion in flight and the last one shown."""

    in_flight: CancelToken | None = None  # the token of the request being answered
    shown_prefix: str = ""  # the text before the cursor the last suggestion was made for
    shown_text: str = ""


def _build_fim_model(config: Config) -> FimModel | None:
    if config.settings.completion is None:
        return None  # off: the providers (and httpx) are not imported for it
    # Imported when a completion model is configured: it loads the HTTP client.
    from lich_core.completion.providers import build_fim_model

    return build_fim_model(config)


class InlineCompletions:
    def __init__(
        self,
        documents: DocumentStore,
        holder: ConfigHolder,
        features: ClientFeatures,
        messages: EditorMessages,
        port: EditorPort,
        root: Path,
    ) -> None:
        self._port = port
        self._documents = documents
        self._holder = holder
        self._features = features
        self._messages = messages
        self._root = root
        self._states: dict[str, _DocumentState] = {}
        # (config generation, model or None, why there is none); rebuilt when the config changes.
        self._model: ConfiguredModel[FimModel] = ConfiguredModel(
            holder, messages, _build_fim_model, "completions"
        )
        # uri -> (document version, its root-relative path or "" outside the root, its snippet
        # windows): computed once per version.
        self._windows: dict[str, tuple[int, str, list[Window]]] = {}
        # uri -> its root-relative path ("" outside the root): resolved once per document.
        self._paths: dict[str, str] = {}
        # (uri, prefix window, suffix window) -> the suggestion made for them, oldest first.
        self._recent: OrderedDict[tuple[str, str, str], str] = OrderedDict()
        self._last_failure = ""
        # The last failure in plain words and its ISO time, for lich.status ("" once one succeeds).
        self._last_failure_plain = ""
        self._last_failure_at: str | None = None
        self.requests = 0  # provider requests made (lich.status; the bench reads it)
        # The server's own time per answered completion (the provider's excluded), newest last.
        self.own_times_s: deque[float] = deque(maxlen=OWN_TIMES_KEPT)

    # --- the model ---

    def model(self) -> FimModel | None:
        return self._model.get()

    def status(self) -> dict[str, Any]:
        """lich.status's `completion`: which model completes (None: completions are off)."""
        model = self.model()
        return {
            "model": model.describe() if model is not None else None,
            "error": self._model.error,
            # The last request's failure, until one succeeds: a client shows why ghost text is gone.
            "last_error": self._last_failure_plain or None,
            "last_error_at": self._last_failure_at if self._last_failure else None,
            "requests": self.requests,
            "own_ms": own_time_summary(self.own_times_s),
        }

    # --- LSP requests ---

    async def inline_completion(
        self, params: types.InlineCompletionParams
    ) -> types.InlineCompletionList | None:
        position = params.position
        text = await self.suggest(params.text_document.uri, position)
        if not text:
            return types.InlineCompletionList(items=[])
        return types.InlineCompletionList(
            items=[
                types.InlineCompletionItem(
                    insert_text=text, range=types.Range(start=position, end=position)
                )
            ]
        )

    async def completion(self, params: types.CompletionParams) -> types.CompletionList | None:
        """The suggestion as one completion item, for clients that show no ghost text. The item
        replaces the word before the cursor with itself plus the suggestion, so a client
        filtering items by that word keeps it."""
        if self._features.inline_completion:
            return None  # the client asks textDocument/inlineCompletion for the same text
        uri = params.text_document.uri
        position = params.position
        text = await self.suggest(uri, position)
        if not text:
            return types.CompletionList(is_incomplete=True, items=[])
        doc = self._documents.document_for_uri(uri)
        line = (
            doc.lines[position.line] if doc is not None and position.line < len(doc.lines) else ""
        )
        before = line[: _code_points(line, position.character, self._encoding())]
        word = _WORD_BEFORE_CURSOR.search(before)
        typed = word.group(0) if word is not None else ""
        start = types.Position(
            line=position.line,
            character=position.character - self._port.position_codec.client_num_units(typed),
        )
        insertion = typed + text
        return types.CompletionList(
            is_incomplete=True,
            items=[
                types.CompletionItem(
                    label=_label(insertion),
                    kind=types.CompletionItemKind.Text,
                    detail="lich",
                    filter_text=insertion,
                    sort_text="0",
                    insert_text_format=types.InsertTextFormat.PlainText,
                    text_edit=types.TextEdit(
                        range=types.Range(start=start, end=position), new_text=insertion
                    ),
                )
            ],
        )

    # --- the suggestion ---

    async def suggest(self, uri: str, position: types.Position) -> str:
        """The text to insert at `position` of the open document `uri` ("" for none)."""

        started = time.perf_counter()  # the server's own time starts (debounce left out)
        model = self.model()
        if model is None:
            return ""
        doc = self._port.text_document(uri)
        rel = self._paths.get(uri)
        if rel is None:
            rel = self._paths[uri] = self._relative(uri)
        if doc is None or not rel:
            return ""
        text = doc.source
        offset = offset_at(text, position, self._encoding())
        before_cursor = text[:offset]
        state = self._states.setdefault(uri, _DocumentState())
        settings = self._holder.config.settings
        prefix, suffix = cursor_windows(
            text, offset, settings.completion_prefix_chars, settings.completion_suffix_chars
        )
        if state.in_flight is not None:
            state.in_flight.cancel("superseded")  # its stream closes now
        known = typed_through(state.shown_prefix, state.shown_text, before_cursor)
        if known is None:
            known = self._recent.get((uri, prefix, suffix))
        if known is not None:
            state.shown_prefix, state.shown_text = before_cursor, known
            return known
        token = CancelToken()
        state.in_flight = token
        try:
            debounce_s = settings.completion_debounce_ms / 1000
            if debounce_s > 0:
                # Keystrokes within the debounce supersede this one before it asks anything.
                slept_from = time.perf_counter()
                await asyncio.sleep(debounce_s)
                started += time.perf_counter() - slept_from
            if token.cancelled:
                return ""
            suggestion = await self._ask(model, uri, rel, doc, prefix, suffix, token, started)
        finally:
            if state.in_flight is token:
                state.in_flight = None
        if token.cancelled or not suggestion:
            return ""
        self._remember((uri, prefix, suffix), suggestion)
        state.shown_prefix, state.shown_text = before_cursor, suggestion
        return suggestion

    async def _ask(
        self,
        model: FimModel,
        uri: str,
        rel: str,
        doc: TextDocument,
        prefix: str,
        suffix: str,
        token: CancelToken,
        started: float,
    ) -> str:

        query = prefix[-SNIPPET_QUERY_PREFIX_CHARS:] + suffix[:SNIPPET_QUERY_SUFFIX_CHARS]
        request = FimRequest(
            prefix=prefix,
            suffix=suffix,
            path=rel,
            language=doc.language_id or "",
            snippets=rank_snippets(query, self._neighbour_windows(uri)),
        )
        pieces: list[str] = []
        self.requests += 1
        sent: list[float] = []
        stream = model.stream(request, token, on_sent=lambda: sent.append(time.perf_counter()))
        between_pieces = 0.0  # the server's own time while the stream is open
        try:
            async for piece in stream:
                got = time.perf_counter()
                pieces.append(piece)
                if token.cancelled:
                    break
                block_done = "\n" in piece and cut_to_block("".join(pieces), prefix)[1]
                between_pieces += time.perf_counter() - got
                if block_done:
                    break  # the block is complete: the rest is not wanted
            stream_done = time.perf_counter()
        except asyncio.CancelledError:
            task = asyncio.current_task()
            cancelling = getattr(task, "cancelling", None)  # Python 3.11+
            if token.cancelled and (cancelling is None or not cancelling()):
                return ""  # superseded: the token stopped the stream, the newer request answers
            raise  # $/cancelRequest: pygls answers the request as cancelled
        except ProviderError as err:
            self._failed(str(err), err.plain())
            return ""
        except Exception as err:  # noqa: BLE001 - a completion never breaks the editor
            log.debug("completion failed", exc_info=True)
            self._failed(
                f"internal_error: {type(err).__name__}: {err}", "lich failed (details in its log)."
            )
            return ""
        finally:
            close = getattr(stream, "aclose", None)
            if close is not None:
                await close()  # closes the provider's stream at once
        self._last_failure = self._last_failure_plain = ""
        kept, _ = cut_to_block("".join(pieces), prefix)
        kept = trim_suffix_overlap(kept, suffix)
        if sent and not token.cancelled:
            # Before the request was on the wire, between pieces, and after the stream ended.
            before = sent[0] - started
            self.own_times_s.append(before + between_pieces + time.perf_counter() - stream_done)
        return kept if kept.strip() else ""

    def _remember(self, key: tuple[str, str, str], suggestion: str) -> None:
        self._recent[key] = suggestion
        self._recent.move_to_end(key)
        if len(self._recent) > RECENT_SUGGESTIONS_KEPT:
            self._recent.popitem(last=False)

    def _failed(self, message: str, plain: str) -> None:
        """One log line per distinct failure (`message`, the details) until a completion
        succeeds again; lich.status says `plain`."""
        self._last_failure_plain = plain
        self._last_failure_at = datetime.now(timezone.utc).isoformat(timespec="seconds")
        if message != self._last_failure:
            self._last_failure = message
            self._messages.log(f"lich: completion failed: {message}", types.MessageType.Warning)

    # --- helpers ---

    def _neighbour_windows(self, uri: str) -> list[tuple[str, list[Window]]]:
        """The other open documents' snippet windows (inside the root), kept per version with
        their root-relative paths (resolving a path costs file system calls: once per version)."""
        found = []
        open_uris = set()
        for other in self._documents.open_documents():
            open_uris.add(other.uri)
            if other.uri == uri:
                continue
            version = other.version or 0
            cached = self._windows.get(other.uri)
            if cached is None or cached[0] != version:
                rel = self._relative(other.uri)
                cached = (version, rel, document_windows(other.source) if rel else [])
                self._windows[other.uri] = cached
            if cached[1]:
                found.append((cached[1], cached[2]))
        for gone in set(self._windows) - open_uris:
            del self._windows[gone]
        return found

    def _relative(self, uri: str) -> str:
        """`uri`'s root-relative path, or "" for a document whose text never goes to a model: one
        the tools may not read (outside the root, through a symbolic link or not; the agent's
        config) or a secret file (`.env`, keys, ...): lich_core.tools.secrets.prompt_refusal."""
        path = uri_to_path(uri)
        if path is None or prompt_refusal(self._root, path) is not None:
            return ""
        return relative_path(self._root, path)

    def _encoding(self) -> str:
        return self._port.position_encoding

    def did_close(self, uri: str) -> None:
        state = self._states.pop(uri, None)
        if state is not None and state.in_flight is not None:
            state.in_flight.cancel("closed")
        self._windows.pop(uri, None)
        self._paths.pop(uri, None)
        for key in [key for key in self._recent if key[0] == uri]:
            del self._recent[key]


def own_time_summary(times_s: Sequence[float]) -> dict[str, Any]:
    """{count, p50, p99} in milliseconds of the server's own time per completion."""
    if not times_s:
        return {"count": 0, "p50": None, "p99": None}
    ordered = sorted(times_s)
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
    return {
        "count": len(ordered),
        "p50": round(ordered[len(ordered) // 2] * 1000, 3),
        "p99": round(p99 * 1000, 3),
    }


def offset_at(text: str, position: types.Position, encoding: str) -> int:
    """The code point offset of `position` in `text`, as pygls' TextDocument.offset_at_position
    (its line split, its clamping), with the line lengths summed in C: it runs per keystroke."""
    lines = text.splitlines(True)
    row = min(position.line, len(lines))
    column = 0
    if row < len(lines):
        content = lines[row].splitlines()[0] if lines[row] else ""  # a position past the end
        column = _code_points(content, position.character, encoding)  # stops before the break
    return sum(map(len, lines[:row])) + column


def _label(insertion: str) -> str:
    first = insertion.split("\n", 1)[0]
    return first if len(first) <= COMPLETION_LABEL_MAX_CHARS else first[:79] + "…"


def _code_points(line: str, character: int, encoding: str) -> int:
    """The code point index of `character` (in the client's position units) on `line`."""
    if encoding == "utf-32":
        return min(character, len(line))
    units = 0
    for index, char in enumerate(line):
        if units >= character:
            return index
        size = (
            len(char.encode("utf-8")) if encoding == "utf-8" else (2 if ord(char) > 0xFFFF else 1)
        )
        units += size
    return len(line)
