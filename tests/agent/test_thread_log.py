"""Threads in the session store: turns and rewinds replayed from the records, the incremental
replay (only what was appended since is read), a torn last line, pruning to `keep`, and a
damaged file left out of the listing."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from lich_core.agent import thread_log
from lich_core.agent.sessions import SessionStore
from lich_core.vocabulary import Message


@pytest.fixture
def store(tmp_path: Path) -> SessionStore:
    return SessionStore(tmp_path / "sessions")


def write_turn(store: SessionStore, thread: str, run_id: str, prompt: str, answer: str) -> None:
    writer = store.open_append(thread)
    writer.append({"type": "run", "event": "start", "run_id": run_id, "ts": 1.0, "prompt": prompt})
    writer.message(Message(role="user", content=prompt))
    writer.message(Message(role="assistant", content=answer))
    writer.append(
        {
            "type": "run",
            "event": "end",
            "run_id": run_id,
            "ts": 2.0,
            "stopped_reason": "final",
            "final": answer,
            "files": ["a.py"],
            "usage": {"input_tokens": 10, "output_tokens": 2, "cache_read_tokens": 3},
        }
    )
    writer.close()


def contents(messages: list[Message]) -> list[str]:
    return [m.content for m in messages]


def test_turns_and_a_rewind_replay_from_the_records(store: SessionStore) -> None:
    thread = store.create(title="first", session_id="t-1").session_id
    for n in (1, 2, 3):
        write_turn(store, thread, f"r{n}", f"ask {n}", f"answer {n}")
    store.rewind(thread, "r2")
    write_turn(store, thread, "r4", "ask 4", "answer 4")

    _, replay = store.replay(thread)
    assert contents(replay.messages) == ["ask 1", "answer 1", "ask 4", "answer 4"]
    assert [(t.number, t.prompt, t.discarded_by) for t in replay.turns] == [
        (1, "ask 1", 0),
        (2, "ask 2", 1),
        (3, "ask 3", 1),
        (4, "ask 4", 0),
    ]
    assert replay.turns[0].files == ["a.py"] and replay.turns[0].final == "answer 1"
    # Every turn's tokens count, rewound ones too (they were spent).
    assert replay.usage() == {"input_tokens": 40, "output_tokens": 8, "cache_read_tokens": 12}
    (info,) = store.list()
    assert (info.session_id, info.turns, info.runs, info.title) == (thread, 2, 4, "first")


def test_a_rewind_across_a_compaction_restores_the_history_before_it(store: SessionStore) -> None:
    thread = store.create(session_id="t-2").session_id
    write_turn(store, thread, "r1", "ask 1", "answer 1")
    write_turn(store, thread, "r2", "ask 2", "answer 2")
    writer = store.open_append(thread)
    writer.append({"type": "run", "event": "start", "run_id": "r3", "ts": 3.0, "prompt": "ask 3"})
    writer.message(Message(role="user", content="ask 3"))
    writer.compaction([Message(role="user", content="summary of 1-3")])
    writer.message(Message(role="assistant", content="answer 3"))
    writer.close()
    assert contents(store.load(thread)[1]) == ["summary of 1-3", "answer 3"]

    store.rewind(thread, "r2")
    assert contents(store.load(thread)[1]) == ["ask 1", "answer 1"]


def test_the_replay_reads_only_what_was_appended_since(
    store: SessionStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    thread = store.create(session_id="t-3").session_id
    write_turn(store, thread, "r1", "ask 1", "answer 1")
    store.load(thread)
    fed: list[str] = []
    original = thread_log.Replay.feed

    def counting(self: thread_log.Replay, record: dict) -> None:
        fed.append(str(record.get("type")))
        original(self, record)

    monkeypatch.setattr(thread_log.Replay, "feed", counting)
    write_turn(store, thread, "r2", "ask 2", "answer 2")
    assert contents(store.load(thread)[1])[-2:] == ["ask 2", "answer 2"]
    assert fed == ["run", "message", "message", "run"]  # the new turn's records only
    fed.clear()
    store.load(thread)
    assert fed == []  # nothing new: nothing read


def test_a_replaced_or_shortened_file_is_read_again_from_the_start(store: SessionStore) -> None:
    thread = store.create(session_id="t-4").session_id
    write_turn(store, thread, "r1", "ask 1", "answer 1")
    write_turn(store, thread, "r2", "ask 2", "answer 2")
    assert len(store.turns(thread)) == 2
    path = store.path_for(thread)
    lines = path.read_bytes().splitlines(keepends=True)
    replacement = path.with_suffix(".new")
    replacement.write_bytes(b"".join(lines[:5]))  # meta and the first turn only
    os.replace(replacement, path)
    assert [t.prompt for t in store.turns(thread)] == ["ask 1"]


def test_a_torn_last_line_is_left_until_it_is_whole(store: SessionStore) -> None:
    thread = store.create(session_id="t-5").session_id
    write_turn(store, thread, "r1", "ask 1", "answer 1")
    path = store.path_for(thread)
    record = json.dumps({"type": "message", "message": {"role": "user", "content": "late"}})
    with open(path, "ab") as handle:
        handle.write(record[:20].encode())
    assert contents(store.load(thread)[1]) == ["ask 1", "answer 1"]
    with open(path, "ab") as handle:
        handle.write(record[20:].encode() + b"\n")
    assert contents(store.load(thread)[1]) == ["ask 1", "answer 1", "late"]


def test_creating_past_keep_prunes_the_least_recently_written(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "sessions", keep=3)
    ids = []
    for n in range(5):
        ids.append(store.create(session_id=f"t-{n}").session_id)
        # Distinct write times, oldest first, without waiting on the clock.
        os.utime(store.path_for(ids[-1]), (1_000 + n, 1_000 + n))
    assert sorted(info.session_id for info in store.list()) == ["t-2", "t-3", "t-4"]
    # The thread being created is never the one pruned, whatever its time says.
    unbounded = SessionStore(store.directory)
    os.utime(store.path_for("t-2"), (1, 1))
    unbounded.create(session_id="t-new")
    os.utime(store.path_for("t-new"), (0, 0))
    assert store.prune(2, spare="t-new") == ["t-2"]
    assert sorted(info.session_id for info in store.list()) == ["t-3", "t-4", "t-new"]


def test_a_damaged_file_is_left_out_of_the_listing(store: SessionStore) -> None:
    good = store.create(session_id="t-good").session_id
    write_turn(store, good, "r1", "ask", "answer")
    (store.directory / "t-bad.jsonl").write_bytes(b"\xff\xfe not json\n[[[\n")
    assert [info.session_id for info in store.list()] == [good]


# --- bounds, torn lines and thread ids (issue #43) ---


def plant_bytes(path: Path, total: int, chunk: bytes = b"x" * (1 << 20)) -> None:
    """Append `total` bytes of `chunk`'s kind and no newline, a chunk at a time (the test's own
    memory stays one chunk)."""
    with open(path, "ab") as handle:
        while total > 0:
            handle.write(chunk[:total])
            total -= len(chunk)


class _Readers(list):
    """Every RecordReader replay_file makes, for what they held."""


@pytest.fixture
def small_bounds(monkeypatch: pytest.MonkeyPatch) -> _Readers:
    """A 1 MiB record bound read 64 KiB at a time, and the readers made under them."""
    monkeypatch.setattr(thread_log, "MAX_THREAD_RECORD_BYTES", 1 << 20)
    monkeypatch.setattr(thread_log, "READ_CHUNK_BYTES", 64 << 10)
    readers = _Readers()
    original = thread_log.RecordReader

    class Recording(original):  # type: ignore[valid-type, misc]
        def __init__(self, *args: object, **kwargs: object) -> None:
            super().__init__(*args, **kwargs)  # type: ignore[arg-type]
            readers.append(self)

    monkeypatch.setattr(thread_log, "RecordReader", Recording)
    return readers


def test_a_record_over_the_bound_is_skipped_with_one_warning_in_bounded_memory(
    store: SessionStore, small_bounds: _Readers, caplog: pytest.LogCaptureFixture
) -> None:
    import tracemalloc

    thread = store.create(session_id="t-big").session_id
    write_turn(store, thread, "r1", "ask 1", "answer 1")
    path = store.path_for(thread)
    plant_bytes(path, 40 << 20)  # 40 times the bound, no newline

    tracemalloc.start()
    try:
        assert [t.prompt for t in store.turns(thread)] == ["ask 1"]
        (info,) = store.list()  # the listing reads the file on its own (no kept replay)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert info.turns == 1
    # Never more than the bound of the line held, nor (all allocations) a few chunks past it.
    assert small_bounds and all(
        r.peak_held <= thread_log.MAX_THREAD_RECORD_BYTES for r in small_bounds
    )
    assert peak < 4 * thread_log.MAX_THREAD_RECORD_BYTES, peak
    warnings = [r.getMessage() for r in caplog.records if "is over 1 MiB" in r.getMessage()]
    assert len(warnings) == 1 and str(path) in warnings[0], warnings

    # The next turn starts on a new line: it is read, and the kept replay goes on from the end of
    # the skipped line instead of reading it again.
    small_bounds.clear()
    write_turn(store, thread, "r2", "ask 2", "answer 2")
    assert [t.prompt for t in store.turns(thread)] == ["ask 1", "ask 2"]
    (reader,) = small_bounds
    assert reader.offset == path.stat().st_size and not reader.skipping
    assert contents(store.load(thread)[1]) == ["ask 1", "answer 1", "ask 2", "answer 2"]


def test_a_whole_line_over_the_bound_is_skipped_and_the_rest_read(
    store: SessionStore, small_bounds: _Readers
) -> None:
    thread = store.create(session_id="t-mid").session_id
    path = store.path_for(thread)
    plant_bytes(path, 3 << 20)
    with open(path, "ab") as handle:
        handle.write(b"\n")
    write_turn(store, thread, "r1", "after it", "answer")
    (info,) = store.list()
    assert info.turns == 1 and info.title == "after it"
    assert [t.prompt for t in store.turns(thread)] == ["after it"]


def test_an_append_after_a_torn_line_starts_on_a_new_line(store: SessionStore) -> None:
    thread = store.create(session_id="t-torn").session_id
    write_turn(store, thread, "r1", "ask 1", "answer 1")
    assert len(store.turns(thread)) == 1  # the kept replay stops before the torn line below
    path = store.path_for(thread)
    torn = b'{"type": "message", "ts": 3.0, "message": {"role": "assis'
    with open(path, "ab") as handle:
        handle.write(torn)  # a crash mid-append

    write_turn(store, thread, "r2", "ask 2", "answer 2")

    assert torn + b"\n" + b'{"type": "run", "event": "start", "run_id": "r2"' in path.read_bytes()
    for replay in (store.replay(thread)[1], thread_log.replay_file(path, keep=False)):
        assert [t.prompt for t in replay.turns] == ["ask 1", "ask 2"]
    store.rewind(thread, "r2")  # the turn after the torn line can be taken back
    assert contents(store.load(thread)[1]) == ["ask 1", "answer 1"]
    # A file that ends with its newline gets none added.
    size = path.stat().st_size
    write_turn(store, thread, "r3", "ask 3", "answer 3")
    assert path.read_bytes()[size : size + 1] == b"{"


def test_thread_ids_follow_one_rule(store: SessionStore, caplog: pytest.LogCaptureFixture) -> None:
    from lich_core.agent.sessions import InvalidThreadId, check_thread_id, new_session_id

    for good in ("a", "A.b_c-9", "x" * 64, new_session_id(), "nvim-20260101-000000-ab12cd34"):
        assert check_thread_id(good) == good
    for bad in ("abc\n", "latest", "a/b", "x" * 65, "", "a b", "..\\x", "é", None):
        with pytest.raises(InvalidThreadId, match="^invalid_thread_id: "):
            check_thread_id(bad)
        assert not store.exists(bad)  # type: ignore[arg-type]
        if bad is not None:  # None: a new id
            with pytest.raises(InvalidThreadId):
                store.create(session_id=bad)
    with pytest.raises(InvalidThreadId, match="reserved"):
        check_thread_id("latest")

    good = store.create(session_id="t-ok").session_id
    write_turn(store, good, "r1", "ask", "answer")
    # Files with names no id has (written by an older lich): left out, told once each.
    for name in ("abc\n", "latest", "x" * 65):
        (store.directory / f"{name}.jsonl").write_bytes(store.path_for(good).read_bytes())
    assert [info.session_id for info in store.list()] == [good]
    assert store.resolve("latest") == good
    skipped = [
        r.getMessage() for r in caplog.records if "not a thread id; skipped" in r.getMessage()
    ]
    assert len(skipped) == 3 and all("\n" not in message for message in skipped)
