"""What the server says to the user: log lines, messages, diagnostics, each within the editor's limits.

A leaf of the LSP face. `EditorMessages` is the one way every part talks to the user (through the
EditorPort): no `window/logMessage`, `window/showMessage` or `lich/event` payload passes
MAX_EDITOR_MESSAGE_BYTES (what was cut is said in place, "… [cut N chars]"), an unexpected
failure is shown once per kind, and the diagnostics of every source (review hunks, test
failures, pending questions) go out together per file, as publishDiagnostics replaces a file's
whole list.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Coroutine
from typing import TYPE_CHECKING, Any

from lsprotocol import types

if TYPE_CHECKING:
    from lich_lsp.port import EditorPort

# One window/logMessage, window/showMessage or lich/event payload, as JSON on the wire.
MAX_EDITOR_MESSAGE_BYTES = 64 * 1024
# Room kept for the JSON around a log line or a message (the notification's other fields).
MESSAGE_ENVELOPE_BYTES = 256
# A string JSON-escapes to at most this many bytes per character (an astral character: two \uXXXX escapes).
_MAX_JSON_BYTES_PER_CHAR = 12
# Room for "… [cut N chars]" itself.
_CUT_MARKER_BYTES = 48
# When an event's data does not fit, its strings are shortened to these lengths in turn.
_EVENT_STRING_CAPS = (16_384, 4_096, 1_024, 256)


def json_size(value: Any) -> int:
    """Bytes of `value` as JSON on the wire (pygls' json.dumps: ASCII with escapes)."""
    return len(json.dumps(value, default=str))


def cut_marker(chars: int) -> str:
    return f"… [cut {chars} chars]"


def clip_text(text: str, limit_bytes: int, already_cut: int = 0) -> str:
    """`text` if it fits in `limit_bytes` of JSON, else as much of its start as fits followed by
    "… [cut N chars]" (N counts `already_cut`: characters dropped before `text` got here)."""
    if not already_cut:
        if len(text) * _MAX_JSON_BYTES_PER_CHAR + 2 <= limit_bytes:
            return text
        if len(text) <= limit_bytes and json_size(text) <= limit_bytes:
            return text
    room = max(0, limit_bytes - _CUT_MARKER_BYTES)
    keep = min(len(text), room)  # every character takes at least one byte
    size = json_size(text[:keep])
    while keep and size > room:
        keep = max(0, min(keep - 1, keep * room // size))
        size = json_size(text[:keep])
    return text[:keep] + cut_marker(len(text) - keep + already_cut)


def clip_event(
    payload: dict[str, Any], limit_bytes: int = MAX_EDITOR_MESSAGE_BYTES
) -> dict[str, Any]:
    """A lich/event payload that fits in `limit_bytes`: long strings in its data are cut (saying
    so), and if that is not enough only the data's short scalar fields are kept, with a note."""
    size = json_size(payload)
    if size <= limit_bytes:
        return payload
    data = payload.get("data")
    for cap in _EVENT_STRING_CAPS:
        candidate = {**payload, "data": _clip_strings(data, cap)}
        if json_size(candidate) <= limit_bytes:
            return candidate
    kept = {
        key: value
        for key, value in (data.items() if isinstance(data, dict) else [])
        if isinstance(value, (bool, int, float))
        or (isinstance(value, str) and len(value) <= _EVENT_STRING_CAPS[-1])
    }
    kept["cut"] = (
        f"the event's data ({size} bytes) was cut: over the {limit_bytes // 1024} KiB limit"
    )
    return {**payload, "data": kept}


def _clip_strings(value: Any, cap: int) -> Any:
    if isinstance(value, str):
        return value if len(value) <= cap else value[:cap] + cut_marker(len(value) - cap)
    if isinstance(value, dict):
        return {key: _clip_strings(item, cap) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clip_strings(item, cap) for item in value]
    return value


class EditorMessages:
    """Log lines, messages and merged diagnostics for one editor, and work left running in the background."""

    def __init__(self, port: EditorPort) -> None:
        self._port = port
        self._reported: set[str] = set()
        # What each diagnostic source last published per uri.
        self._published: dict[str, dict[str, list[types.Diagnostic]]] = {}
        self._background: set[asyncio.Future[Any]] = set()

    def log(self, message: str, kind: types.MessageType = types.MessageType.Log) -> None:
        self._port.log_message(
            clip_text(message, MAX_EDITOR_MESSAGE_BYTES - MESSAGE_ENVELOPE_BYTES), kind
        )

    def show_message(self, message: str, kind: types.MessageType = types.MessageType.Info) -> None:
        self._port.show_message(
            clip_text(message, MAX_EDITOR_MESSAGE_BYTES - MESSAGE_ENVELOPE_BYTES), kind
        )

    def report_unexpected(self, where: str, err: BaseException) -> None:
        """Tell the user about an unexpected failure once per kind (the log has the details)."""
        self.report_once(
            f"{where}:{type(err).__name__}",
            f"lich: unexpected error in {where}: {type(err).__name__}: {err} (details in the server log)",
        )

    def report_once(
        self, key: str, message: str, kind: types.MessageType = types.MessageType.Error
    ) -> None:
        if key in self._reported:
            return
        self._reported.add(key)
        self.show_message(message, kind)

    def publish_diagnostics(
        self, source: str, uri: str, diagnostics: list[types.Diagnostic]
    ) -> None:
        """Replace `source`'s diagnostics for `uri`; the editor gets every source's together."""
        by_source = self._published.setdefault(uri, {})
        if diagnostics:
            by_source[source] = list(diagnostics)
        else:
            by_source.pop(source, None)
        merged = [diagnostic for items in by_source.values() for diagnostic in items]
        if not by_source:
            self._published.pop(uri, None)
        self._port.publish_diagnostics(uri, merged)

    def background(self, work: Coroutine[Any, Any, Any]) -> None:
        """Run a coroutine without waiting for it; the reference is kept until it ends."""
        future = asyncio.ensure_future(work)
        self._background.add(future)
        future.add_done_callback(self._background.discard)
