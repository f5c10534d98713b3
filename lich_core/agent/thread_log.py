"""Replaying a session file into a thread: its history, its turns, and the rewinds taken on it.

A thread is a session (lich_core.agent.sessions) seen as a conversation: each run is one turn
(the user's prompt and everything the agent did for it). The records a replay reads:

    {"type": "run", "event": "start", "run_id", "ts", "prompt"?, "face"?, "task_id"?}
    {"type": "message", ...} / {"type": "compaction", ...}
    {"type": "run", "event": "end", "run_id", "stopped_reason", "final"?, "files"?, "usage"?}
    {"type": "rewind", "run_id", "ts"}   # the history goes back to before that run's start

A rewind keeps the rewound turns readable (`discarded`, with the number of the rewind that took
them back), so a UI can show them as a dropped branch; the history the next turn continues from
is the one before the first rewound turn.

Replays are kept per file, with the offset read so far: a session file only grows, so a
follow-up on a long thread reads the last turn's records, not the whole history again
(bench/bench_threads.py measures it).

A file is read in chunks of READ_CHUNK_BYTES, and one record (one line) may hold at most
MAX_THREAD_RECORD_BYTES: a longer line (a file someone else wrote, or one damaged past repair)
is skipped as the chunks pass, with one warning, so it costs one pass over its bytes and never
more memory than the bound. An oversized line that has not ended yet is remembered as being
skipped, so the next read of that file goes on from its end.
"""

from __future__ import annotations

import dataclasses
import json
import os
import stat
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lich_core.agent.targets import describe_tool_call
from lich_core.userstate import open_state_file, warn_once
from lich_core.vocabulary import Message

PROMPT_RECORD_MAX_CHARS = 8_000
# What lich.thread shows of each tool call of a turn (a chat renders it folded).
STEP_ARGUMENTS_MAX_CHARS = 300
STEP_RESULT_MAX_CHARS = 300
# Replays kept in memory (a long-lived server follows up on a few threads at a time).
CACHED_REPLAYS_MAX = 16
READ_CHUNK_BYTES = 1024 * 1024
# The longest record (one line) a thread file is read with. The largest records lich writes are
# a compaction (a summary and the 8 messages kept verbatim) and a message with a tool's output
# (at most 400,000 characters): a few MiB at worst. A longer line is skipped, with a warning.
MAX_THREAD_RECORD_BYTES = 16 * 1024 * 1024


@dataclass
class Turn:
    """One run of a thread, as lich.thread shows it."""

    number: int  # 1-based position among the file's runs (stable across rewinds)
    run_id: str
    prompt: str = ""
    started: float = 0.0
    face: str = ""  # "lsp", "cli", "acp" ("" in files written before faces were recorded)
    task_id: str | None = None
    ended: float | None = None
    stopped_reason: str | None = None  # None: running, or its process died before the end
    final: str = ""
    files: list[str] = field(default_factory=list)
    usage: dict[str, int] = field(default_factory=dict)
    error: str | None = None
    discarded_by: int = 0  # the rewind (1, 2, ...) that took it back; 0: live
    # The turn's tool calls, in order: {id, name, arguments, kind, target, title, ok, result}
    # (clipped text; kind, target and title as the tool events carry them).
    tools: list[dict[str, Any]] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "turn": self.number,
            "run_id": self.run_id,
            "prompt": self.prompt,
            "final": self.final,
            "files": list(self.files),
            "stopped_reason": self.stopped_reason,
            "error": self.error,
            "task_id": self.task_id,
            "face": self.face,
            "started": self.started,
            "ended": self.ended,
            "usage": usage_summary(self.usage),
            "tools": [dict(step) for step in self.tools],
            "discarded": self.discarded_by > 0,
            **({"branch": self.discarded_by} if self.discarded_by else {}),
        }


def usage_summary(usage: dict[str, int]) -> dict[str, int]:
    """Tokens in, out and served from the provider's cache (input counts cached tokens too)."""
    return {
        "input": int(usage.get("input_tokens", 0)),
        "output": int(usage.get("output_tokens", 0)),
        "cached": int(usage.get("cache_read_tokens", 0)),
    }


def add_usage(total: dict[str, int], usage: dict[str, int]) -> None:
    for key, value in usage.items():
        total[key] = total.get(key, 0) + value


class Replay:
    """The state of one session file after its records so far; `feed` takes the next one."""

    def __init__(self) -> None:
        self.meta: dict[str, Any] = {}
        self.messages: list[Message] = []
        self.turns: list[Turn] = []
        self.rewinds = 0
        self.message_records = 0
        # run_id -> (the history list then, its length): the history before the run started.
        # Lists only grow (a compaction starts a new one), so a prefix stays valid.
        self._before: dict[str, tuple[list[Message], int]] = {}
        self._open: dict[str, Turn] = {}

    def feed(self, record: dict[str, Any]) -> None:
        kind = record.get("type")
        try:
            if kind == "message":
                message = Message.from_dict(record["message"])
                self.messages.append(message)
                self.message_records += 1
                if self.turns and self.turns[-1].stopped_reason is None:
                    _note_step(self.turns[-1], message)
            elif kind == "compaction":
                self.messages = [Message.from_dict(item) for item in record["messages"]]
            elif kind == "run":
                self._run(record)
            elif kind == "rewind":
                self._rewind(str(record["run_id"]))
            elif kind == "meta" and not self.meta:
                self.meta = record
        except (KeyError, TypeError, ValueError):
            pass  # a damaged record; the rest of the thread is still usable

    def _run(self, record: dict[str, Any]) -> None:
        run_id = str(record["run_id"])
        if record.get("event") == "start":
            turn = Turn(
                number=len(self.turns) + 1,
                run_id=run_id,
                prompt=str(record.get("prompt") or ""),
                started=float(record.get("ts") or 0.0),
                face=str(record.get("face") or ""),
                task_id=_optional_str(record.get("task_id")),
            )
            self.turns.append(turn)
            self._open[run_id] = turn
            self._before[run_id] = (self.messages, len(self.messages))
            return
        ended = self._open.pop(run_id, None)
        if ended is None:
            return
        self._end(ended, record)

    def _end(self, turn: Turn, record: dict[str, Any]) -> None:
        turn.ended = float(record.get("ts") or 0.0)
        turn.stopped_reason = str(record.get("stopped_reason") or "error")
        turn.error = _optional_str(record.get("error"))
        if isinstance(record.get("final"), str):
            turn.final = record["final"]
        files = record.get("files")
        if isinstance(files, list):
            turn.files = [str(name) for name in files]
        usage = record.get("usage")
        if isinstance(usage, dict):
            turn.usage = {str(k): int(v) for k, v in usage.items() if isinstance(v, int)}

    def _rewind(self, run_id: str) -> None:
        before = self._before.get(run_id)
        if before is None:
            return
        history, length = before
        self.messages = history[:length]
        self.rewinds += 1
        start = next(t.number for t in self.turns if t.run_id == run_id)
        for turn in self.turns[start - 1 :]:
            if not turn.discarded_by:
                turn.discarded_by = self.rewinds

    def live_turns(self) -> list[Turn]:
        return [turn for turn in self.turns if not turn.discarded_by]

    def usage(self) -> dict[str, int]:
        """Tokens of every turn, discarded ones included: they were spent."""
        total: dict[str, int] = {}
        for turn in self.turns:
            add_usage(total, turn.usage)
        return total

    def snapshot(self) -> Replay:
        """A copy a caller may keep while this one goes on feeding (turns are copied; messages
        are immutable once read)."""
        copy = Replay()
        copy.meta = dict(self.meta)
        copy.messages = list(self.messages)
        copy.turns = [
            dataclasses.replace(
                turn, files=list(turn.files), tools=[dict(step) for step in turn.tools]
            )
            for turn in self.turns
        ]
        copy.rewinds = self.rewinds
        copy.message_records = self.message_records
        return copy


@dataclass
class _Cached:
    device: int
    inode: int
    offset: int
    replay: Replay
    skipping: bool = False  # `offset` is inside an oversized record, skipped up to its end


_cache: OrderedDict[str, _Cached] = OrderedDict()
_cache_lock = threading.Lock()  # the ACP face replays on its worker thread too


def replay_file(path: Path, *, keep: bool = True) -> Replay:
    """The thread in `path`, read from where the last replay of it stopped (a snapshot).

    `keep`: hold the replay for the next read (a thread being followed up); a listing of every
    thread passes False, so it does not push those out. Raises OSError (the file cannot be
    opened safely: lich_core.userstate) for the caller to word. A torn last line (a write cut
    short by a crash) is left for the next read; a line over MAX_THREAD_RECORD_BYTES is skipped.
    """
    key = str(path)
    fd = open_state_file(path, os.O_RDONLY)
    with open(fd, "rb", buffering=0) as handle:
        info = os.fstat(handle.fileno())
        with _cache_lock:
            cached = _cache.get(key)
            if not keep and cached is None:
                replay = Replay()
                RecordReader(path).feed(replay, handle)
                return replay
            if (
                cached is None
                or (cached.device, cached.inode) != (info.st_dev, info.st_ino)
                or info.st_size < cached.offset
            ):
                cached = _Cached(info.st_dev, info.st_ino, 0, Replay())
            if info.st_size > cached.offset:
                handle.seek(cached.offset)
                reader = RecordReader(path, offset=cached.offset, skipping=cached.skipping)
                reader.feed(cached.replay, handle)
                cached.offset, cached.skipping = reader.offset, reader.skipping
            _cache[key] = cached
            _cache.move_to_end(key)
            while len(_cache) > CACHED_REPLAYS_MAX:
                _cache.popitem(last=False)
            return cached.replay.snapshot()


class RecordReader:
    """Feeds the complete lines of a thread file to a replay, a chunk at a time.

    At most MAX_THREAD_RECORD_BYTES of a line are held (`peak_held`: the most it held); a
    longer line is skipped to its end with one warning. After `feed`: `offset` is where the next
    read starts (the start of a torn last line, which is left for then, or the end of the file
    when it ends inside an oversized line), `skipping` whether it ended inside one.
    """

    def __init__(self, path: Path, *, offset: int = 0, skipping: bool = False) -> None:
        self.path = path
        self.offset = offset
        self.skipping = skipping
        self.peak_held = 0

    def feed(self, replay: Replay, handle: Any) -> None:
        pending = bytearray()  # the start of the line at `offset`, whose end is not read yet
        position = self.offset  # the file offset of the chunk's first byte
        while chunk := handle.read(READ_CHUNK_BYTES):
            start = 0
            if self.skipping:
                end = chunk.find(b"\n")
                if end < 0:
                    position += len(chunk)
                    self.offset = position
                    continue
                self.skipping = False
                start = end + 1
                self.offset = position + start
            while (end := chunk.find(b"\n", start)) >= 0:
                if len(pending) + end - start > MAX_THREAD_RECORD_BYTES:
                    self._warn()
                elif pending:
                    pending += memoryview(chunk)[start:end]
                    self.peak_held = max(self.peak_held, len(pending))
                    _feed_line(replay, pending)
                else:
                    _feed_line(replay, chunk[start:end])
                pending = bytearray()
                start = end + 1
                self.offset = position + start
            position += len(chunk)
            if len(pending) + len(chunk) - start > MAX_THREAD_RECORD_BYTES:
                self._warn()
                pending = bytearray()
                self.skipping = True
                self.offset = position
            elif start < len(chunk):
                pending += memoryview(chunk)[start:]
                self.peak_held = max(self.peak_held, len(pending))

    def _warn(self) -> None:
        """The line at `offset` is over the bound: told once, and skipped."""
        warn_once(
            f"thread file {self.path}: the record at byte {self.offset} is over "
            f"{MAX_THREAD_RECORD_BYTES // (1024 * 1024)} MiB; skipped (the rest of the thread is read)"
        )


def _feed_line(replay: Replay, line: bytes | bytearray) -> None:
    line = line.strip()
    if not line:
        return
    try:
        record = json.loads(line.decode("utf-8", "replace"))
    except (ValueError, RecursionError):
        return  # a torn write at a crash, or a line nested too deep to be ours
    if isinstance(record, dict):
        replay.feed(record)


def forget_replay(path: Path) -> None:
    with _cache_lock:
        _cache.pop(str(path), None)


def is_regular_file(path: Path) -> bool:
    """A regular file itself, not a link to one (a thread is never read through a link)."""
    try:
        return stat.S_ISREG(path.lstat().st_mode)
    except OSError:
        return False


def _note_step(turn: Turn, message: Message) -> None:
    """What a running turn's message adds to its summary: its tool calls and their outcomes,
    and the last answer (files written before end records carried `final`)."""
    if message.role == "assistant":
        turn.final = message.content
        for call in message.tool_calls:
            # From the whole arguments (the clipped text may no longer parse), as the events do.
            described = describe_tool_call(call.name, call.arguments)
            turn.tools.append(
                {
                    "id": call.id,
                    "name": call.name,
                    "arguments": _clipped(json_arguments(call.arguments), STEP_ARGUMENTS_MAX_CHARS),
                    "kind": described.kind,
                    "target": described.target.to_dict() if described.target else None,
                    "title": described.title,
                    "ok": None,
                    "result": "",
                }
            )
    elif message.role == "tool":
        for step in reversed(turn.tools):
            if step["id"] == message.tool_call_id:
                step["ok"], step["result"] = _outcome(message.content)
                return


def _outcome(content: str) -> tuple[bool, str]:
    """(ok, a short result) of a tool message: an error is the JSON of a failed ToolResult."""
    if content.startswith('{"ok": false'):
        try:
            error = json.loads(content).get("error") or ""
        except (ValueError, AttributeError):
            error = content
        return False, _clipped(str(error), STEP_RESULT_MAX_CHARS)
    return True, _clipped(content, STEP_RESULT_MAX_CHARS)


def json_arguments(arguments: Any) -> str:
    try:
        return json.dumps(arguments, ensure_ascii=False, sort_keys=True)
    except (TypeError, ValueError):
        return str(arguments)


def _clipped(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _optional_str(value: Any) -> str | None:
    return None if value is None else str(value)
