"""Context compression: summarise older turns when the history nears the context budget.

Tokens are estimated as characters / 4 (no tokenizer dependency; a rough estimate is enough to
decide *when* to compress). When the estimate reaches `compress_threshold * context_budget_tokens`,
everything between the leading system message(s) and the 8 most recent messages is summarised by
the compress model and replaced by one user message marked as a summary. The kept tail never
starts on a tool result whose call would be summarised away. A failed or useless compression
(the model errs, or the result is not smaller) backs off for 3 turns; it never ends the run.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from lich_core.agent.prompts import COMPRESS_SYSTEM_PROMPT, SUMMARY_PREFIX
from lich_core.providers.base import CallOptions, Model
from lich_core.settings import settings_of
from lich_core.vocabulary import CancelToken, Message, Usage, json_text

CHARS_PER_TOKEN = 4
# Role, ids and JSON framing per message, in characters.
MESSAGE_OVERHEAD_CHARS = 16
KEEP_RECENT_MESSAGES = 8
COMPRESS_BACKOFF_TURNS = 3
# Each message's share of the transcript sent to the summariser (head and tail kept).
TRANSCRIPT_MESSAGE_MAX_CHARS = 3_000


def message_chars(message: Message) -> int:
    chars = len(message.content) + MESSAGE_OVERHEAD_CHARS
    for call in message.tool_calls:
        chars += len(call.name) + len(call.raw_arguments or json_text(call.arguments))
    return chars


def estimate_tokens(messages: Sequence[Message]) -> int:
    return sum(message_chars(m) for m in messages) // CHARS_PER_TOKEN


@dataclass
class CompressionSplit:
    head: list[Message]  # leading system message(s), always kept
    old: list[Message]  # summarised
    kept: list[Message]  # the recent messages, verbatim


def split_for_compression(
    messages: Sequence[Message], keep: int = KEEP_RECENT_MESSAGES
) -> CompressionSplit | None:
    """Where to cut, or None when there is nothing older than the kept tail to summarise."""
    head_len = 0
    while head_len < len(messages) and messages[head_len].role == "system":
        head_len += 1
    body = list(messages[head_len:])
    start = max(0, len(body) - keep)
    # A tool result needs its assistant call right before it: widen the kept part backwards.
    while start > 0 and body[start].role == "tool":
        start -= 1
    if start <= 0:
        return None
    return CompressionSplit(list(messages[:head_len]), body[:start], body[start:])


def _clip(text: str, limit: int = TRANSCRIPT_MESSAGE_MAX_CHARS) -> str:
    if len(text) <= limit:
        return text
    head = limit * 3 // 4
    tail = limit - head
    return f"{text[:head]}\n…[{len(text) - limit} chars omitted]…\n{text[-tail:]}"


def render_transcript(messages: Sequence[Message]) -> str:
    lines: list[str] = []
    for message in messages:
        if message.role == "tool":
            lines.append(f"[tool result: {message.name or 'tool'}]\n{_clip(message.content)}")
            continue
        if message.content:
            lines.append(f"[{message.role}]\n{_clip(message.content)}")
        for call in message.tool_calls:
            arguments = call.raw_arguments or json.dumps(call.arguments, ensure_ascii=False)
            lines.append(f"[assistant calls {call.name}] {_clip(arguments, 500)}")
    return "\n\n".join(lines)


def summary_message(summary: str) -> Message:
    return Message(role="user", content=f"{SUMMARY_PREFIX}\n{summary.strip()}")


@dataclass
class CompressionOutcome:
    ok: bool
    messages: list[Message]  # the new history (the old one when not ok)
    before_tokens: int
    after_tokens: int
    removed_messages: int = 0
    error: str | None = None
    usage: Usage = field(default_factory=Usage)


async def compress_messages(
    messages: Sequence[Message], model: Model, *, cancel: CancelToken | None = None
) -> CompressionOutcome:
    """Summarise the older part of `messages`. Raises only asyncio.CancelledError."""
    before = estimate_tokens(messages)
    unchanged = list(messages)
    split = split_for_compression(messages)
    if split is None:
        return CompressionOutcome(False, unchanged, before, before, error="nothing_to_compress")
    request = [
        Message(role="system", content=COMPRESS_SYSTEM_PROMPT),
        Message(role="user", content="Transcript to summarise:\n\n" + render_transcript(split.old)),
    ]
    try:
        response = await model.complete(request, [], CallOptions(cancel=cancel))
    except Exception as err:  # noqa: BLE001 - compression failure is never fatal
        return CompressionOutcome(False, unchanged, before, before, error=_one_line(err))
    summary = response.message.content.strip()
    if not summary:
        return CompressionOutcome(
            False, unchanged, before, before, error="empty_summary", usage=response.usage
        )
    compressed = [*split.head, summary_message(summary), *split.kept]
    after = estimate_tokens(compressed)
    if after >= before:
        return CompressionOutcome(
            False, unchanged, before, after, error="summary_not_smaller", usage=response.usage
        )
    return CompressionOutcome(
        True, compressed, before, after, removed_messages=len(split.old), usage=response.usage
    )


class CompressionPolicy:
    """Decides when to compress, and backs off after a compression that did not help."""

    def __init__(
        self, config: Mapping[str, Any] | None = None, *, limit_tokens: int | None = None
    ) -> None:
        self.limit_tokens = (
            limit_tokens if limit_tokens is not None else self.limit_for(config or {})
        )
        self._next_allowed_turn = 0
        # Running character count of the history: messages are only ever appended between
        # compressions, so each one is measured once (keeps the check O(1) per turn).
        self._counted = 0
        self._chars = 0

    @staticmethod
    def limit_for(config: Mapping[str, Any]) -> int:
        """The history size (tokens, estimated) past which compression is due."""
        settings = settings_of(config)
        return int(settings.context_budget_tokens * settings.compress_threshold)

    def estimate(self, messages: Sequence[Message]) -> int:
        if len(messages) < self._counted:
            self.reset()
        for message in messages[self._counted :]:
            self._chars += message_chars(message)
        self._counted = len(messages)
        return self._chars // CHARS_PER_TOKEN

    def reset(self) -> None:
        """Forget the running count (the history was replaced)."""
        self._counted = 0
        self._chars = 0

    def due(self, messages: Sequence[Message], turn: int) -> bool:
        return turn >= self._next_allowed_turn and self.estimate(messages) >= self.limit_tokens

    def record(self, outcome: CompressionOutcome, turn: int) -> None:
        self.reset()
        if not outcome.ok:
            self._next_allowed_turn = turn + COMPRESS_BACKOFF_TURNS


def _one_line(err: BaseException) -> str:
    text = str(err) or type(err).__name__
    return " ".join(text.split())
