"""Threads on the command line (issue #35): `lich "prompt"` starts a thread, `lich --thread ID
"follow-up"` continues it with the history, `lich threads` lists them; the repository's rules
reach a new thread's first turn, and every CLI turn is recorded with face "cli". Issue #43: ids
outside the rule are refused and never listed, and a 150 MB line is skipped in bounded memory."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

from lich_core.agent.sessions import (
    SESSION_SUFFIX,
    SESSIONS_DIR_NAME,
    SessionStore,
    session_dir_for,
)
from lich_core.agent.thread_log import MAX_THREAD_RECORD_BYTES
from lich_core.userstate import workspace_state_dir
from lich_core.vocabulary import Message
from tests.support.cli_runner import CliResult, run_lich, run_lich_subprocess

RULES_LABEL = "Project rules from the repository"
RULE_TEXT = "Always answer in haiku; the marker is ochre-heron-17."
THREAD_LINE = re.compile(r'^lich: thread (\S+) \(continue with: lich --thread \1 "\.\.\."\)$', re.M)


def provider_flags(fake_provider: Any) -> list[str]:
    return ["--base-url", fake_provider.url + "/v1", "--model", "m"]


def thread_id_of(done: CliResult) -> str:
    found = THREAD_LINE.search(done.stderr)
    assert found, done.stderr
    return found.group(1)


def messages_of(request: dict[str, Any]) -> list[dict[str, Any]]:
    return request["json"]["messages"]


def text_of(message: dict[str, Any]) -> str:
    content = message.get("content") or ""
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return str(content)


def user_texts(request: dict[str, Any]) -> list[str]:
    return [text_of(m) for m in messages_of(request) if m.get("role") == "user"]


def run_starts(work: Path, thread: str) -> list[dict[str, Any]]:
    path = workspace_state_dir(work) / SESSIONS_DIR_NAME / f"{thread}{SESSION_SUFFIX}"
    records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    return [r for r in records if r.get("type") == "run" and r.get("event") == "start"]


def test_a_follow_up_continues_the_thread_with_its_history_and_rules_once(
    tmp_path: Path, fake_provider
) -> None:
    work = tmp_path / "ws"
    work.mkdir()
    (work / "AGENTS.md").write_text(f"# Rules\n\n{RULE_TEXT}\n", encoding="utf-8")
    fake_provider.script({"text": "Answer one."}, {"text": "Answer two."})

    # Two processes: the thread outlives the one that started it.
    first = run_lich_subprocess(
        "prompt one", "--work-dir", str(work), *provider_flags(fake_provider), cwd=work
    )
    assert first.returncode == 0, first.stderr
    thread = thread_id_of(first)
    (opening,) = fake_provider.requests
    (first_user,) = user_texts(opening)
    assert first_user.startswith("prompt one")
    assert RULES_LABEL in first_user and RULE_TEXT in first_user

    second = run_lich_subprocess(
        "--thread",
        thread,
        "prompt two",
        "--work-dir",
        str(work),
        *provider_flags(fake_provider),
        cwd=work,
    )
    assert second.returncode == 0, second.stderr
    assert "Answer two." in second.stdout
    assert thread_id_of(second) == thread
    follow_up = fake_provider.requests[1]
    roles_and_texts = [(m["role"], text_of(m)) for m in messages_of(follow_up)]
    assert ("assistant", "Answer one.") in roles_and_texts
    users = user_texts(follow_up)
    assert users[0] == first_user  # the first turn, rules and all, is history
    assert users[-1] == "prompt two"  # the follow-up's own message carries no second copy
    assert sum(RULE_TEXT in text for _, text in roles_and_texts) == 1

    listed = run_lich("threads", "--json", "--work-dir", str(work), cwd=work)
    assert listed.returncode == 0, listed.stderr
    (row,) = json.loads(listed.stdout)
    assert row["thread"] == thread and row["turns"] == 2 and row["title"] == "prompt one"
    assert isinstance(row["updated"], float) and set(row) == {"thread", "title", "turns", "updated"}
    table = run_lich("threads", "--work-dir", str(work), cwd=work)
    assert table.returncode == 0
    (line,) = table.stdout.splitlines()
    assert line.startswith(thread) and "2 turns" in line and line.endswith("prompt one")
    # The older name still lists the same thread.
    sessions = run_lich("sessions", "--json", "--work-dir", str(work), cwd=work)
    assert [s["session_id"] for s in json.loads(sessions.stdout)] == [thread]

    starts = run_starts(work, thread)
    assert len(starts) == 2 and all(start.get("face") == "cli" for start in starts), starts


def test_thread_latest_continues_the_newest_thread(tmp_path: Path, fake_provider) -> None:
    fake_provider.script({"text": "Old."}, {"text": "New."}, {"text": "Again."})
    flags = ["--work-dir", str(tmp_path), *provider_flags(fake_provider)]
    run_lich("older question", *flags, cwd=tmp_path)
    newer = thread_id_of(run_lich("newer question", *flags, cwd=tmp_path))

    done = run_lich("--thread", "latest", "and then?", *flags, cwd=tmp_path)

    assert done.returncode == 0, done.stderr
    assert thread_id_of(done) == newer
    texts = user_texts(fake_provider.requests[-1])
    assert texts[0].startswith("newer question") and texts[-1] == "and then?"
    assert not any("older question" in text for text in texts)


def test_an_unknown_thread_fails_before_any_model_call(tmp_path: Path, fake_provider) -> None:
    flags = ["--work-dir", str(tmp_path), *provider_flags(fake_provider)]
    for ref, expected in (
        (
            "20240101-000000-ffffff",
            "lich: unknown_thread: 20240101-000000-ffffff (see `lich threads`)",
        ),
        (
            "latest",
            "lich: unknown_thread: latest (no threads in this workspace; see `lich threads`)",
        ),
    ):
        done = run_lich("--thread", ref, "go on", *flags, cwd=tmp_path)
        assert done.returncode == 1, ref
        assert done.stderr.splitlines() == [expected], done.stderr
        assert done.stdout == ""
    assert fake_provider.requests == []
    # And nothing was created by trying.
    listed = run_lich("threads", "--json", "--work-dir", str(tmp_path), cwd=tmp_path)
    assert json.loads(listed.stdout) == []


def test_thread_and_resume_together_is_a_usage_error(tmp_path: Path, fake_provider) -> None:
    done = run_lich(
        "--thread",
        "latest",
        "--resume",
        "latest",
        "go on",
        "--work-dir",
        str(tmp_path),
        *provider_flags(fake_provider),
        cwd=tmp_path,
    )
    assert done.returncode == 2
    assert "not allowed with argument" in done.stderr
    assert fake_provider.requests == []


def test_project_rules_off_in_the_user_config_sends_none(tmp_path: Path, fake_provider) -> None:
    user_config = Path(os.environ["XDG_CONFIG_HOME"]) / "lich" / "config.json"
    user_config.parent.mkdir(parents=True)
    user_config.write_text('{"project_rules": false}', encoding="utf-8")
    (tmp_path / "AGENTS.md").write_text(RULE_TEXT, encoding="utf-8")
    fake_provider.script({"text": "Done."})

    done = run_lich(
        "prompt one", "--work-dir", str(tmp_path), *provider_flags(fake_provider), cwd=tmp_path
    )

    assert done.returncode == 0, done.stderr
    assert user_texts(fake_provider.requests[0]) == ["prompt one"]


def test_a_file_mention_attaches_its_rows_in_the_cli(tmp_path: Path, fake_provider) -> None:
    """`@path:a-b` in a CLI prompt attaches those lines from disk, as the editor's lich.ask does;
    `@../x` stays text with its reason."""
    work = tmp_path / "ws"
    work.mkdir()
    (work / "m.py").write_text("one\ntwo\nthree\n", encoding="utf-8")
    (tmp_path / "secret.txt").write_text("outside\n", encoding="utf-8")
    fake_provider.script({"text": "seen"})
    done = run_lich_subprocess(
        "explain @m.py:2-3 and @../secret.txt",
        "--work-dir",
        str(work),
        *provider_flags(fake_provider),
        cwd=work,
    )
    assert done.returncode == 0, done.stderr
    sent = json.dumps(messages_of(fake_provider.requests[0]), ensure_ascii=False)
    assert "|two" in sent and "|three" in sent and "|one" not in sent
    assert "outside" not in sent and "path_escape" in sent


def test_thread_ids_outside_the_rule_are_refused_and_never_listed(
    tmp_path: Path, fake_provider
) -> None:
    fake_provider.script({"text": "One."})
    flags = ["--work-dir", str(tmp_path), *provider_flags(fake_provider)]
    thread = thread_id_of(run_lich("a question", *flags, cwd=tmp_path))
    for bad in ("abc\n", "a/b", "x" * 65, ""):
        done = run_lich("--thread", bad, "go on", *flags, cwd=tmp_path)
        assert done.returncode == 1, bad
        (line,) = done.stderr.splitlines()
        assert line.startswith(f"lich: invalid_thread_id: {bad!r} is not a thread id"), line
    assert len(fake_provider.requests) == 1
    # Files named as no id is (an older lich took `abc\n` and `latest`): not threads here, so
    # `lich threads` stays one line per thread, and `latest` still means the newest thread.
    sessions = workspace_state_dir(tmp_path) / SESSIONS_DIR_NAME
    record = (sessions / f"{thread}{SESSION_SUFFIX}").read_bytes()
    for name in ("abc\n", "latest", "x" * 65):
        (sessions / f"{name}{SESSION_SUFFIX}").write_bytes(record)
    table = run_lich("threads", "--work-dir", str(tmp_path), cwd=tmp_path)
    (line,) = table.stdout.splitlines()
    assert line.startswith(thread + "  ")
    rows = json.loads(
        run_lich("threads", "--json", "--work-dir", str(tmp_path), cwd=tmp_path).stdout
    )
    assert [row["thread"] for row in rows] == [thread]
    fake_provider.script({"text": "Two."})
    again = run_lich("--thread", "latest", "and then?", *flags, cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert thread_id_of(again) == thread


def test_a_150_mb_line_is_skipped_in_bounded_memory(tmp_path: Path, fake_provider) -> None:
    """The CLI runs in this process here, so tracemalloc sees every allocation of the listing
    and of the follow-up: never near the file's size, a few chunks past the record bound."""
    import tracemalloc

    store = SessionStore(session_dir_for({"work_dir": str(tmp_path)}))
    writer = store.create(work_dir=str(tmp_path), title="first question")
    thread = writer.session_id
    writer.append({"type": "run", "event": "start", "run_id": "c1", "ts": 1.0, "prompt": "q1"})
    writer.message(Message(role="user", content="first question"))
    writer.message(Message(role="assistant", content="FIRST-ANSWER"))
    writer.append(
        {"type": "run", "event": "end", "run_id": "c1", "ts": 2.0, "stopped_reason": "final"}
    )
    writer.close()
    path = store.path_for(thread)
    chunk = b"x" * (1 << 20)
    with open(path, "ab") as handle:
        for _ in range(150):
            handle.write(chunk)  # 150 MB, no newline
    fake_provider.script({"text": "second answer"})
    flags = ["--work-dir", str(tmp_path), *provider_flags(fake_provider)]
    over = f"is over {MAX_THREAD_RECORD_BYTES // (1 << 20)} MiB"

    tracemalloc.start()
    try:
        listed = run_lich("threads", "--json", "--work-dir", str(tmp_path), cwd=tmp_path)
        _, listing_peak = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        done = run_lich("--thread", thread, "second question", *flags, cwd=tmp_path)
        _, turn_peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()

    bound = 2 * MAX_THREAD_RECORD_BYTES  # the file is 150 MB: reading it whole took 300 MiB
    print(f"peak traced memory: listing {listing_peak >> 20} MiB, follow-up {turn_peak >> 20} MiB")
    assert listing_peak < bound and turn_peak < bound, (listing_peak, turn_peak)
    assert [(row["thread"], row["turns"]) for row in json.loads(listed.stdout)] == [(thread, 1)]
    assert listed.stderr.count(over) == 1 and str(path) in listed.stderr, listed.stderr
    assert done.returncode == 0, done.stderr
    sent = json.dumps(messages_of(fake_provider.requests[0]))
    assert "FIRST-ANSWER" in sent and "second question" in sent
    after = run_lich("threads", "--json", "--work-dir", str(tmp_path), cwd=tmp_path)
    assert [row["turns"] for row in json.loads(after.stdout)] == [2]
