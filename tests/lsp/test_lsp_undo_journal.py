"""lich_lsp/journal.py: what the undo journal keeps of a task's changes, on disk and in memory
(no server; the server's use of it is in test_lsp_undo*.py)."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest

from lich_core.userstate import workspace_state_dir
from lich_core.workspace import FileChange
from lich_lsp import journal as journal_module
from lich_lsp.journal import JOURNAL_DIR_NAME, MAX_JOURNAL_TASKS, TaskJournal
from lich_lsp.undo_rebase import Step


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    return root.resolve()


def _journal(ws: Path, reports: list[str] | None = None) -> TaskJournal:
    return TaskJournal(ws, report=reports.append if reports is not None else None)


def test_the_journal_lives_in_the_user_state_dir(ws: Path) -> None:
    journal = _journal(ws)
    assert journal.directory == workspace_state_dir(ws) / JOURNAL_DIR_NAME
    assert not (ws / ".lich").exists()


def test_changes_survive_a_new_journal_and_consecutive_changes_are_one_step(ws: Path) -> None:
    a, b = ws / "a.py", ws / "sub" / "b.py"
    journal = _journal(ws)
    journal.record(
        "t1",
        "fix it",
        100.0,
        [FileChange.write(a, "one\nTWO\n", "one\ntwo\n"), FileChange.write(b, "new\n", None)],
    )
    # The task's next change starts from the text it left: merged into the same step.
    journal.record("t1", "fix it", 100.0, [FileChange.write(a, "ONE\nTWO\n", "one\nTWO\n")])
    # The user typed in between: this change starts from another text, so it is a step of its own.
    journal.record(
        "t1", "fix it", 100.0, [FileChange.write(a, "ONE\nTWO\nthree!\n", "ONE\nTWO\nthree\n")]
    )

    again = _journal(ws)  # a restarted server
    entry = again.get("t1")
    assert entry is not None
    assert (entry.title, entry.started, entry.undone) == ("fix it", 100.0, False)
    assert sorted(entry.files) == ["a.py", "sub/b.py"]
    assert [step.as_step() for step in entry.files["a.py"].steps] == [
        Step("one\ntwo\n", "ONE\nTWO\n"),
        Step("ONE\nTWO\nthree\n", "ONE\nTWO\nthree!\n"),
    ]
    assert [step.as_step() for step in entry.files["sub/b.py"].steps] == [Step(None, "new\n")]
    # Stored as the base text and the replacements, not the result.
    stored = json.loads(journal.path_for("t1").read_text(encoding="utf-8"))
    (a_record,) = [f for f in stored["files"] if f["path"] == "a.py"]
    assert a_record["steps"][0] == {"base": "one\ntwo\n", "replacements": [[0, 2, "ONE\nTWO\n"]]}
    assert [e.task_id for e in again.undoable()] == ["t1"]


def test_a_delete_and_a_change_undone_by_the_task_itself(ws: Path) -> None:
    journal = _journal(ws)
    journal.record("t1", "t", 1.0, [FileChange.delete(ws / "gone.txt", "bye\n")])
    journal.record("t1", "t", 1.0, [FileChange.write(ws / "same.txt", "x\n", "y\n")])
    journal.record("t1", "t", 1.0, [FileChange.write(ws / "same.txt", "y\n", "x\n")])  # put back
    entry = _journal(ws).get("t1")
    assert entry is not None
    assert list(entry.files) == ["gone.txt"]
    assert entry.files["gone.txt"].steps[0].as_step() == Step("bye\n", None)
    # A task that only put back what it changed leaves no entry.
    journal.record("t2", "t", 2.0, [FileChange.write(ws / "n.txt", "a\n", "a\n")])
    assert journal.get("t2") is None and not journal.path_for("t2").exists()


def test_only_the_last_tasks_are_kept(ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    clock = itertools.count(1000)
    monkeypatch.setattr(journal_module.time, "time", lambda: float(next(clock)))
    journal = _journal(ws)
    for n in range(1, MAX_JOURNAL_TASKS + 6):
        journal.record(
            f"t{n}", f"task {n}", float(n), [FileChange.write(ws / "f.txt", f"{n}\n", f"{n - 1}\n")]
        )
    kept = [e.task_id for e in journal.undoable()]
    assert kept == [f"t{n}" for n in range(MAX_JOURNAL_TASKS + 5, 5, -1)]
    on_disk = sorted(p.name for p in journal.directory.iterdir())
    assert on_disk == sorted(f"t{n}.json" for n in range(6, MAX_JOURNAL_TASKS + 6))
    assert [e.task_id for e in _journal(ws).undoable()] == kept


def test_a_corrupt_journal_file_is_ignored_with_a_message(ws: Path) -> None:
    journal = _journal(ws)
    journal.record("t1", "good", 1.0, [FileChange.write(ws / "a.txt", "b\n", "a\n")])
    directory = journal.directory
    (directory / "t2.json").write_text("{not json", encoding="utf-8")
    (directory / "t3.json").write_text(
        json.dumps({"version": 1, "task_id": "t3"}), encoding="utf-8"
    )
    escaping = json.loads(journal.path_for("t1").read_text(encoding="utf-8"))
    escaping["task_id"] = "t4"
    escaping["files"][0]["path"] = "../outside.txt"
    (directory / "t4.json").write_text(json.dumps(escaping), encoding="utf-8")
    misnamed = {**json.loads(journal.path_for("t1").read_text(encoding="utf-8"))}
    (directory / "t5.json").write_text(json.dumps(misnamed), encoding="utf-8")
    bad_range = json.loads(journal.path_for("t1").read_text(encoding="utf-8"))
    bad_range["task_id"] = "t6"
    bad_range["files"][0]["steps"][0]["replacements"] = [[5, 9, "x\n"]]
    (directory / "t6.json").write_text(json.dumps(bad_range), encoding="utf-8")

    reports: list[str] = []
    again = _journal(ws, reports)
    assert [e.task_id for e in again.undoable()] == ["t1"]
    assert len(reports) == 5, reports
    assert all(r.startswith("lich: ignored a corrupt undo journal file ") for r in reports)
    assert any("t4.json" in r and "not inside the workspace" in r for r in reports)
    assert any("t5.json" in r and "holds task t1" in r for r in reports)
    # Ids of ignored files are not handed out again either.
    assert again.fresh_task_id(itertools.count(1)) == "t7"


def test_task_ids_continue_past_the_journal(ws: Path) -> None:
    journal = _journal(ws)
    for n in (1, 2, 4):
        journal.record(f"t{n}", "x", 1.0, [FileChange.write(ws / "f.txt", f"{n}\n", "0\n")])
    numbers = itertools.count(1)
    assert [journal.fresh_task_id(numbers) for _ in range(3)] == ["t3", "t5", "t6"]


def test_writes_are_atomic(ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    journal = _journal(ws)
    journal.record("t1", "x", 1.0, [FileChange.write(ws / "f.txt", "b\n", "a\n")])
    before = journal.path_for("t1").read_text(encoding="utf-8")

    def broken_dump(*args: object, **kwargs: object) -> None:
        raise OSError("disk full")

    reports: list[str] = []
    journal._report = reports.append
    monkeypatch.setattr("lich_core.userstate.json.dump", broken_dump)
    journal.record("t1", "x", 1.0, [FileChange.write(ws / "g.txt", "d\n", "c\n")])
    journal.record("t1", "x", 1.0, [FileChange.write(ws / "h.txt", "f\n", "e\n")])
    # The old file is whole, no temp file is left, the user is told once, memory still has it all.
    assert journal.path_for("t1").read_text(encoding="utf-8") == before
    assert [p.name for p in journal.directory.iterdir()] == ["t1.json"]
    assert len(reports) == 1 and "could not write the undo journal" in reports[0]
    entry = journal.get("t1")
    assert entry is not None and sorted(entry.files) == ["f.txt", "g.txt", "h.txt"]


def test_marking_files_undone(ws: Path) -> None:
    journal = _journal(ws)
    journal.record(
        "t1",
        "x",
        1.0,
        [
            FileChange.write(ws / "a.txt", "b\n", "a\n"),
            FileChange.write(ws / "c.txt", "d\n", "c\n"),
        ],
    )
    journal.mark_undone("t1", ["a.txt"])
    entry = _journal(ws).get("t1")
    assert entry is not None and list(entry.files) == ["c.txt"] and not entry.undone
    journal.mark_undone("t1", ["c.txt"])
    again = _journal(ws)
    entry = again.get("t1")
    assert entry is not None and entry.undone and not entry.files
    assert again.undoable() == []
    # A task still running that changes a file after its undo is undoable again.
    journal.record("t1", "x", 1.0, [FileChange.write(ws / "a.txt", "a2\n", "a\n")])
    assert [e.task_id for e in journal.undoable()] == ["t1"]


async def test_code_actions_load_the_journal_in_the_background(ws: Path) -> None:
    _journal(ws).record("t1", "x", 1.0, [FileChange.write(ws / "a.txt", "b\n", "a\n")])
    journal = _journal(ws)
    assert (
        journal.loaded_entries_for("a.txt") == []
    )  # not loaded: nothing, without touching the disk
    journal.load_soon()
    assert journal._loading is not None
    await journal._loading
    assert [e.task_id for e in journal.loaded_entries_for("a.txt")] == ["t1"]
