"""Sessions: one JSONL file per conversation, appended as the run goes.

A session file is a sequence of records, one JSON object per line:

    {"type": "meta", "version": 1, "session_id": ..., "created": ts, "work_dir": ..., "title": ...}
    {"type": "run", "event": "start", "run_id": ..., "ts": ..., "prompt": ..., "face": ...}
    {"type": "message", "ts": ..., "message": {role, content, tool_calls?, tool_call_id?, name?}}
    {"type": "compaction", "ts": ..., "messages": [...]}   # the whole history after compression
    {"type": "run", "event": "end", "run_id": ..., "stopped_reason": ..., "turns_used": ...,
     "final": ..., "files": [...], "usage": {...}}
    {"type": "rewind", "run_id": ..., "ts": ...}   # back to before that run (lich.rewind)

Each record is flushed when written, so a crash loses nothing already said. Loading replays the
records (lich_core.agent.thread_log: a compaction replaces the history so far, a rewind takes it
back), skips a torn last line and a line over MAX_THREAD_RECORD_BYTES, and repairs a history that
stopped between a tool call and its result. A writer that opens a file whose last line is torn
starts on a new line, so the torn line stays one damaged line and the next record is whole.

A session is also a thread: the editor, the CLI and ACP continue the same files. A thread id is
1-64 of `A-Z a-z 0-9 . _ -`, and `latest` is reserved (`lich --thread latest` means the newest
thread): check_thread_id is the one check every face uses on an id it is given.
"""

from __future__ import annotations

import builtins
import json
import os
import random
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from lich_core.agent.thread_log import (
    MAX_THREAD_RECORD_BYTES,
    Replay,
    Turn,
    forget_replay,
    is_regular_file,
    replay_file,
)
from lich_core.settings import settings_of
from lich_core.userstate import (
    UnsafeStateDir,
    list_state_dir,
    open_state_file,
    warn_once,
    workspace_state_dir,
)
from lich_core.vocabulary import Message, ToolResult, format_tool_result, json_text

SESSION_FORMAT_VERSION = 1
SESSION_SUFFIX = ".jsonl"
SESSIONS_DIR_NAME = "sessions"
LATEST = "latest"  # `lich --thread latest`: the newest thread, so never a thread's own id
THREAD_ID_MAX_CHARS = 64
TITLE_MAX_CHARS = 80
# Listing summaries kept (per file, until it changes): a few workspaces' worth of threads.
INFO_CACHE_MAX = 1_000
_info_cache: dict[str, tuple[tuple[int, int, int, int], SessionInfo]] = {}
_THREAD_ID_RE = re.compile(rf"[A-Za-z0-9._-]{{1,{THREAD_ID_MAX_CHARS}}}")
INVALID_THREAD_ID = "invalid_thread_id"


class SessionError(Exception):
    """A session that cannot be found or read; the message is one line."""


class InvalidThreadId(SessionError):
    """A thread id that is not one (check_thread_id); the message starts `invalid_thread_id:`."""


def check_thread_id(value: object) -> str:
    """`value` if it can name a thread, else InvalidThreadId saying why (the value quoted with
    repr, so a newline in it cannot split the message or a listing)."""
    if not isinstance(value, str) or not _THREAD_ID_RE.fullmatch(value):
        raise InvalidThreadId(
            f"{INVALID_THREAD_ID}: {value!r} is not a thread id "
            f"(1-{THREAD_ID_MAX_CHARS} letters, digits, '.', '_' or '-')"
        )
    if value == LATEST:
        raise InvalidThreadId(
            f"{INVALID_THREAD_ID}: {LATEST!r} is reserved: `lich --thread {LATEST}` means the "
            "newest thread"
        )
    return value


def is_thread_id(value: object) -> bool:
    try:
        check_thread_id(value)
    except InvalidThreadId:
        return False
    return True


@dataclass(frozen=True)
class SessionInfo:
    session_id: str
    path: Path
    created: float
    modified: float
    messages: int
    runs: int
    title: str
    turns: int = 0  # live turns (runs not taken back by a rewind)
    usage: dict[str, int] = field(default_factory=dict)  # every turn's tokens, summed

    def to_dict(self) -> dict[str, Any]:
        return {
            "session_id": self.session_id,
            "path": str(self.path),
            "created": self.created,
            "modified": self.modified,
            "messages": self.messages,
            "runs": self.runs,
            "turns": self.turns,
            "title": self.title,
        }


def new_session_id() -> str:
    # Sortable by start time; the random tail keeps two runs of one second apart. An id names a
    # session and guards nothing, so no system call for its randomness.
    return time.strftime("%Y%m%d-%H%M%S") + f"-{random.getrandbits(24):06x}"


def session_dir_for(config: Mapping[str, Any]) -> Path:
    settings = settings_of(config)
    configured = settings.session_dir
    work_dir = Path(settings.work_dir or os.getcwd())
    if configured:
        path = Path(os.path.expanduser(configured))
        return path if path.is_absolute() else work_dir / path
    # In the user state dir, not the repository: a repository cannot redirect these writes.
    return workspace_state_dir(work_dir) / SESSIONS_DIR_NAME


_json_string = (
    json.encoder.encode_basestring
)  # a str as a JSON string, as json.dumps(ensure_ascii=False)


def message_json(message: Message) -> str:
    """json.dumps(message.to_dict(), ensure_ascii=False), built from the fields directly.

    A record is written per message, several per turn: encoding the fields one by one is less
    than half the work of building the dict and encoding it. A field that is not of its declared
    type (not a str) goes through the dict, so the output is the same either way.
    """
    try:
        if message.tool_call_id is not None and message.name is not None and not message.tool_calls:
            # A tool result (one per tool call): built at once, no list of parts to join.
            return (
                f'{{"role": {_json_string(message.role)}, "content": {_json_string(message.content)}, '
                f'"tool_call_id": {_json_string(message.tool_call_id)}, "name": {_json_string(message.name)}}}'
            )
        parts = [
            '{"role": ',
            _json_string(message.role),
            ', "content": ',
            _json_string(message.content),
        ]
        if message.tool_calls:
            separator = ', "tool_calls": [{"id": '
            for call in message.tool_calls:
                parts += [
                    separator,
                    _json_string(call.id),
                    ', "name": ',
                    _json_string(call.name),
                    ', "arguments": ',
                    json_text(call.arguments),
                    ', "raw_arguments": ',
                    _json_string(call.raw_arguments),
                    "}",
                ]
                separator = ', {"id": '
            parts.append("]")
        if message.tool_call_id is not None:
            parts += [', "tool_call_id": ', _json_string(message.tool_call_id)]
        if message.name is not None:
            parts += [', "name": ', _json_string(message.name)]
    except TypeError:
        return json_text(message.to_dict())
    parts.append("}")
    return "".join(parts)


class SessionWriter:
    """Appends records to one session file; every record reaches the file at once.

    The file is opened unbuffered in binary: one write() per record, no text and buffer layers
    to flush (the loop writes a record per message, several per turn). When it is opened, its last
    byte is checked once: a file that does not end with a newline ends in a torn line (a crash
    mid-append), and the first record starts on a new line instead of being glued to it.
    """

    def __init__(self, path: Path, session_id: str) -> None:
        self.path = path
        self.session_id = session_id
        self._handle: IO[bytes] | None = None
        self._refused = False  # the state dir was refused: this run keeps no log

    def append(self, record: dict[str, Any]) -> None:
        # json_text: json.dumps(record, ensure_ascii=False) without an encoder made per record.
        self._write(json_text(record) + "\n")

    def _write(self, line: str) -> None:
        if self._handle is None:
            if self._refused:
                return
            try:
                # Not through a link, not into a dir someone else can write (userstate).
                # Read too: the last byte says whether the file ends in a torn line.
                fd = open_state_file(
                    self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT, create_dir=True
                )
            except UnsafeStateDir as err:
                # The run goes on without a log rather than writing where a planted link points.
                self._refused = True
                warn_once(f"{err}; the session log is not kept")
                return
            torn = _ends_torn(fd)
            self._handle = open(fd, "ab", buffering=0)  # noqa: SIM115 - kept open for the run
            if torn:
                line = "\n" + line
        data = line.encode("utf-8", "surrogatepass")
        if len(data) > MAX_THREAD_RECORD_BYTES:
            # Written all the same (the run goes on), but a replay will skip it: say so now.
            warn_once(
                f"session {self.path}: a record of {len(data)} bytes is over the "
                f"{MAX_THREAD_RECORD_BYTES} a thread is read with; reading the thread skips it"
            )
        written = self._handle.write(data)
        if written is not None and written < len(data):  # a raw write may be short (a full disk)
            self._write_rest(memoryview(data)[written:])

    def _write_rest(self, rest: memoryview) -> None:
        assert self._handle is not None
        while rest:
            written = self._handle.write(rest)
            if not written:
                raise OSError("session log: the file took no more bytes")
            rest = rest[written:]

    def message(self, message: Message) -> None:
        # The same line as append({"type": "message", "ts": ..., "message": message.to_dict()}).
        self._write(
            f'{{"type": "message", "ts": {time.time()!r}, "message": {message_json(message)}}}\n'
        )

    def compaction(self, messages: list[Message]) -> None:
        self.append(
            {"type": "compaction", "ts": time.time(), "messages": [m.to_dict() for m in messages]}
        )

    def close(self) -> None:
        if self._handle is not None:
            self._handle.close()
            self._handle = None


def _ends_torn(fd: int) -> bool:
    """Whether the file on `fd` (open for reading) has bytes and its last one is not a newline."""
    size = os.fstat(fd).st_size
    return size > 0 and os.pread(fd, 1, size - 1) != b"\n"


class SessionStore:
    """The sessions (threads) of one workspace: one JSONL file each, at most `keep` of them.

    `keep` (config `threads_max`): creating a session past it deletes the least recently
    written ones; 0 keeps every one."""

    def __init__(self, directory: str | os.PathLike[str], *, keep: int = 0) -> None:
        self.directory = Path(directory)
        self.keep = keep

    @classmethod
    def for_config(cls, config: Mapping[str, Any]) -> SessionStore:
        return cls(session_dir_for(config), keep=settings_of(config).threads_max)

    def path_for(self, session_id: str) -> Path:
        """The file of thread `session_id`; InvalidThreadId when it is not a thread id."""
        return self.directory / f"{check_thread_id(session_id)}{SESSION_SUFFIX}"

    def create(
        self, *, work_dir: str = "", title: str = "", session_id: str | None = None
    ) -> SessionWriter:
        session_id = new_session_id() if session_id is None else session_id
        writer = SessionWriter(self.path_for(session_id), session_id)
        writer.append(
            {
                "type": "meta",
                "version": SESSION_FORMAT_VERSION,
                "session_id": session_id,
                "created": time.time(),
                "work_dir": work_dir,
                "title": _title(title),
            }
        )
        if self.keep:
            self.prune(self.keep, spare=session_id)
        return writer

    def open_append(self, session_id: str) -> SessionWriter:
        path = self.path_for(session_id)
        if not is_regular_file(path):
            raise SessionError(f"session_not_found: {session_id}")
        return SessionWriter(path, session_id)

    def exists(self, session_id: str) -> bool:
        return is_thread_id(session_id) and is_regular_file(self.path_for(session_id))

    def resolve(self, ref: str) -> str:
        """A session id from an id or "latest" (the most recently written session);
        InvalidThreadId for a ref that is neither."""
        if ref == LATEST:
            files = self._files()
            if not files:
                raise SessionError(f"session_not_found: no sessions in {self.directory}")
            newest: Path = max(files, key=lambda p: (p.lstat().st_mtime, p.name))
            return newest.name[: -len(SESSION_SUFFIX)]
        if not is_regular_file(self.path_for(ref)):
            raise SessionError(f"session_not_found: {ref} (see `lich threads`)")
        return ref

    def replay(self, ref: str) -> tuple[str, Replay]:
        """(the session id, its thread as replayed: history, turns, rewinds)."""
        session_id = self.resolve(ref)
        path = self.path_for(session_id)
        try:
            return session_id, replay_file(path)
        except OSError as err:
            raise SessionError(f"session_unreadable: {path}: {err.strerror or err}") from err

    def load(self, ref: str) -> tuple[str, list[Message]]:
        session_id, replay = self.replay(ref)
        return session_id, repair_history(replay.messages)

    def turns(self, ref: str) -> list[Turn]:
        return self.replay(ref)[1].turns

    def rewind(self, session_id: str, run_id: str) -> None:
        """Take the history back to before run `run_id` (its turn and the later ones stay
        readable as a discarded branch)."""
        writer = self.open_append(session_id)
        try:
            writer.append({"type": "rewind", "run_id": run_id, "ts": time.time()})
        finally:
            writer.close()

    def prune(self, keep: int, *, spare: str = "") -> list[str]:
        """Delete all but the `keep` most recently written sessions (never `spare`); returns
        the ids deleted. A file that cannot be deleted is told once and kept; a dir that cannot
        be listed was already told by the writer (housekeeping says nothing more)."""
        try:
            files = self._files()
        except SessionError:
            return []
        files.sort(key=lambda p: (p.lstat().st_mtime, p.name), reverse=True)
        deleted = []
        for path in files[keep:]:
            session_id = path.name[: -len(SESSION_SUFFIX)]
            if session_id == spare:
                continue
            try:
                path.unlink()
            except OSError as err:
                warn_once(f"could not prune session {path}: {err.strerror or err}")
                continue
            forget_replay(path)
            deleted.append(session_id)
        return deleted

    def list(self) -> list[SessionInfo]:
        """Every session, most recently written first; a refused dir or an unreadable file is
        told once and left out (listing is advisory)."""
        try:
            files = self._files()
        except SessionError as err:
            warn_once(str(err))
            return []
        infos: builtins.list[SessionInfo] = []
        for path in files:
            try:
                infos.append(self._info(path))
            except SessionError as err:
                warn_once(str(err))
        return sorted(infos, key=lambda info: (info.modified, info.session_id), reverse=True)

    def _files(self) -> builtins.list[Path]:
        try:
            names = list_state_dir(self.directory)
        except FileNotFoundError:
            return []
        except OSError as err:
            raise SessionError(
                f"session_unreadable: {self.directory}: {err.strerror or err}"
            ) from err
        found = []
        for name in names:
            if not name.endswith(SESSION_SUFFIX):
                continue
            path = self.directory / name
            if not is_thread_id(name[: -len(SESSION_SUFFIX)]):
                # Not a name lich gives (an id with a newline would split `lich threads`).
                warn_once(f"session_unreadable: {str(path)!r}: not a thread id; skipped")
                continue
            if is_regular_file(path):
                found.append(path)
        return found

    def _info(self, path: Path) -> SessionInfo:
        """The listing's summary of one file, kept until the file changes (a listing of a
        hundred threads must not replay a hundred histories each time)."""
        try:
            info = path.lstat()
        except OSError as err:
            raise SessionError(f"session_unreadable: {path}: {err.strerror or err}") from err
        stamp = (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns)
        cached = _info_cache.get(str(path))
        if cached is not None and cached[0] == stamp:
            return cached[1]
        summary = self._summarise(path, info.st_mtime)
        _info_cache[str(path)] = (stamp, summary)
        while len(_info_cache) > INFO_CACHE_MAX:
            _info_cache.pop(next(iter(_info_cache)))
        return summary

    def _summarise(self, path: Path, modified: float) -> SessionInfo:
        session_id = path.name[: -len(SESSION_SUFFIX)]
        try:
            replay = replay_file(path, keep=False)
        except OSError as err:
            raise SessionError(f"session_unreadable: {path}: {err.strerror or err}") from err
        meta = replay.meta
        if not meta and not replay.turns:
            # Not one record of ours in it: damaged (or not a thread), left out of the listing.
            raise SessionError(f"session_unreadable: {path}: no thread records in it; skipped")
        first_prompt = replay.turns[0].prompt if replay.turns else ""
        return SessionInfo(
            session_id,
            path,
            float(meta.get("created") or modified),
            modified,
            len(replay.messages),
            len(replay.turns),
            str(meta.get("title") or "") or _title(first_prompt),
            turns=len(replay.live_turns()),
            usage=replay.usage(),
        )


def _title(text: str) -> str:
    line = " ".join(text.split())
    return line if len(line) <= TITLE_MAX_CHARS else line[: TITLE_MAX_CHARS - 1] + "…"


def tool_error_message(call_id: str, name: str, error: str) -> Message:
    content = format_tool_result(ToolResult(ok=False, error=error))
    return Message(role="tool", content=content, tool_call_id=call_id, name=name)


def repair_history(messages: list[Message], error: str = "interrupted") -> list[Message]:
    """Give every assistant tool call a result, so the history is valid for any provider.

    A session written by a process that died mid-tool ends with calls that have no result; each
    one gets an error result. Tool results that answer no call are dropped.
    """
    repaired: list[Message] = []
    index = 0
    while index < len(messages):
        message = messages[index]
        index += 1
        if message.role == "tool":
            continue  # orphaned: its call is not directly before it
        repaired.append(message)
        if message.role != "assistant" or not message.tool_calls:
            continue
        answered: dict[str, Message] = {}
        while index < len(messages) and messages[index].role == "tool":
            result = messages[index]
            answered.setdefault(result.tool_call_id or "", result)
            index += 1
        for call in message.tool_calls:
            repaired.append(answered.get(call.id) or tool_error_message(call.id, call.name, error))
    return repaired
