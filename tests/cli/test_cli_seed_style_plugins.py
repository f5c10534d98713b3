"""Seed-style plugins through the real `lich` command (issue #43): an annotator, an audit logger
that `json.dumps(info)` and an `isinstance(info, dict)` guard against `rm`, listed in a
`--config` file, with a replayed model calling real tools. Hook payloads are plain dicts: the
guard vetoes, the logger logs every call, the annotator's writes stay in its own dicts, and no
plugin warning is printed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.support.cli_runner import run_lich as lich
from tests.support.seed_plugins import (
    ANNOTATOR_PLUGIN,
    AUDIT_PLUGIN,
    REWRITTEN,
    RM_GUARD_PLUGIN,
    read_jsonl,
    write_plugin,
)

CALLS: list[dict[str, Any]] = [
    {"id": "rm", "name": "terminal", "arguments": {"command": "rm victim.txt"}},
    {"id": "w", "name": "write_file", "arguments": {"path": "out.txt", "content": "hello\n"}},
    {"id": "t", "name": "terminal", "arguments": {"command": "echo ran > ran.txt"}},
]


def test_seed_style_plugins_in_a_lich_run(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    (work / "victim.txt").write_text("keep me\n", encoding="utf-8")
    plugins = tmp_path / "plugins"
    for name, source in (
        ("annotator", ANNOTATOR_PLUGIN),
        ("audit", AUDIT_PLUGIN),
        ("no_rm", RM_GUARD_PLUGIN),
    ):
        write_plugin(plugins, name, source)
    # One model turn per call, then the answer.
    turns = [{"content": "", "tool_calls": [c]} for c in CALLS] + [{"content": "All done."}]
    model = tmp_path / "model.jsonl"
    model.write_text(
        "".join(json.dumps({"message": {"role": "assistant", **t}}) + "\n" for t in turns),
        encoding="utf-8",
    )
    config = tmp_path / "config.json"
    config.write_text(
        json.dumps(
            {
                "providers": [{"name": "replay", "kind": "replay", "path": str(model)}],
                "approval": {"terminal": "allow"},
                # Relative to this file's folder.
                "plugins": [
                    {"path": f"plugins/{name}.py", "settings": {"file": str(tmp_path / log)}}
                    for name, log in (
                        ("annotator", "annotator.jsonl"),
                        ("audit", "audit.jsonl"),
                        ("no_rm", "no_rm.jsonl"),
                    )
                ],
            }
        ),
        encoding="utf-8",
    )

    ran = lich("tidy up", "--config", str(config), "--work-dir", str(work), cwd=work)

    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.strip() == "All done."
    # No load error, no hook warning (a hook that raised would print `lich: warning: plugin ...`).
    assert "warning" not in ran.stderr and "hook_error" not in ran.stderr, ran.stderr
    # The guard vetoed rm with its reason; the file is still there; the other calls ran.
    progress = ran.stderr.splitlines()
    assert "   failed terminal" in progress[2] and progress[2].endswith(
        ": blocked_by_plugin: rm is not allowed here"
    ), progress
    assert progress[4].startswith("   ok write_file") and progress[6].startswith("   ok terminal")
    assert (work / "victim.txt").read_text(encoding="utf-8") == "keep me\n"
    assert (work / "out.txt").read_text(encoding="utf-8") == "hello\n"
    assert (work / "ran.txt").read_text(encoding="utf-8").strip() == "ran"
    assert not (work / "hijacked.txt").exists()

    # The audit logger (after the annotator, before the guard) logged json.dumps(info): lich's
    # own payloads, one line per hook call. The guard's veto ends the before hooks for rm.
    audit = read_jsonl(tmp_path / "audit.jsonl")
    assert [(a["tool_name"], "ok" in a) for a in audit] == [
        ("terminal", False),
        ("terminal", True),
        ("write_file", False),
        ("write_file", True),
        ("terminal", False),
        ("terminal", True),
    ]
    assert audit[0] == {"tool_name": "terminal", "args": {"command": "rm victim.txt"}}
    assert audit[1]["error"] == "blocked_by_plugin: rm is not allowed here"
    assert all("note" not in a for a in audit)

    # The annotator's notes and copies, in its own dicts.
    notes = read_jsonl(tmp_path / "annotator.jsonl")
    assert [n["info"]["note"] for n in notes] == [
        "reviewed terminal",
        "reviewed write_file",
        "reviewed terminal",
    ]
    assert [n["kept"]["ok"] for n in notes] == [False, True, True]
    for marker in REWRITTEN:
        assert marker not in ran.stdout + ran.stderr, marker
