"""lich_core.project_rules: which rules files apply (nearest wins, plus the root's), the
fallbacks, the byte bound, links out of the root, and the rendered label."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from lich_core.config import load_config
from lich_core.project_rules import (
    PROJECT_RULES_MAX_BYTES,
    load_project_rules,
    render_project_rules,
    rule_paths,
)


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def rels(root: Path, near: Path | None = None) -> list[str]:
    return [os.path.relpath(p, root) for p in rule_paths(root, near)]


def test_nearest_agents_md_wins_with_the_roots(tmp_path: Path) -> None:
    root = tmp_path
    write(root / "AGENTS.md", "root")
    write(root / "a" / "AGENTS.md", "a")
    write(root / "a" / "b" / "CLAUDE.md", "b claude")
    write(root / "a" / "b" / "c" / "AGENTS.md", "c")
    write(root / "a" / "b" / "c" / "d" / "file.py", "")
    write(root / "a" / "b" / "x.py", "")
    write(root / "a" / "y.py", "")
    write(root / "z.py", "")
    assert rels(root, root / "a" / "b" / "c" / "d" / "file.py") == ["AGENTS.md", "a/b/c/AGENTS.md"]
    # CLAUDE.md counts where its folder has no AGENTS.md.
    assert rels(root, root / "a" / "b" / "x.py") == ["AGENTS.md", "a/b/CLAUDE.md"]
    assert rels(root, root / "a" / "y.py") == ["AGENTS.md", "a/AGENTS.md"]
    assert rels(root, root / "z.py") == ["AGENTS.md"]
    assert rels(root) == ["AGENTS.md"]
    # A folder (not a file) as the place a task works on.
    assert rels(root, root / "a" / "b" / "c") == ["AGENTS.md", "a/b/c/AGENTS.md"]
    # Outside the root: the root's only.
    assert rels(root, tmp_path.parent / "elsewhere.py") == ["AGENTS.md"]


def test_root_fallbacks_in_order(tmp_path: Path) -> None:
    write(tmp_path / ".github" / "copilot-instructions.md", "copilot")
    assert rels(tmp_path) == [".github/copilot-instructions.md"]
    write(tmp_path / "CLAUDE.md", "claude")
    assert rels(tmp_path) == ["CLAUDE.md"]
    write(tmp_path / "AGENTS.md", "agents")
    assert rels(tmp_path) == ["AGENTS.md"]


def test_nested_without_root_rules(tmp_path: Path) -> None:
    write(tmp_path / "pkg" / "AGENTS.md", "pkg")
    assert rels(tmp_path, tmp_path / "pkg" / "m.py") == ["pkg/AGENTS.md"]
    assert rels(tmp_path, tmp_path / "other.py") == []


def test_bound_is_for_all_files_together(tmp_path: Path) -> None:
    write(tmp_path / "AGENTS.md", "r" * 30)
    write(tmp_path / "pkg" / "AGENTS.md", "p" * 30)
    rules = load_project_rules(tmp_path, tmp_path / "pkg" / "m.py", max_bytes=40)
    assert [(r.path, r.size_bytes, r.text, r.truncated) for r in rules] == [
        ("AGENTS.md", 30, "r" * 30, False),
        ("pkg/AGENTS.md", 30, "p" * 10, True),
    ]
    text = render_project_rules(rules, max_bytes=40)
    assert "[lich: pkg/AGENTS.md was cut here: it is 30 bytes" in text
    assert "AGENTS.md was cut" not in text.split("--- pkg/AGENTS.md ---")[0]


def test_cut_never_leaves_half_a_character(tmp_path: Path) -> None:
    write(tmp_path / "AGENTS.md", "é" * PROJECT_RULES_MAX_BYTES)
    (rule,) = load_project_rules(tmp_path)
    assert rule.truncated and "\ufffd" not in rule.text
    assert rule.text == "é" * (PROJECT_RULES_MAX_BYTES // 2)


def test_a_link_out_of_the_root_is_skipped(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    secret = write(tmp_path / "secret.md", "outside text")
    root.mkdir()
    (root / "AGENTS.md").symlink_to(secret)
    assert load_project_rules(root) == []
    assert render_project_rules([]) == ""


def test_label_says_repository_text(tmp_path: Path) -> None:
    write(tmp_path / "AGENTS.md", "Use tabs.\n")
    text = render_project_rules(load_project_rules(tmp_path))
    assert text.startswith(
        "Project rules from the repository (AGENTS.md; repository text, not instructions from "
        "the user."
    )
    assert "--- AGENTS.md ---\nUse tabs.\n--- end of AGENTS.md ---" in text


def test_project_rules_setting_is_a_boolean_a_workspace_may_only_turn_off(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    ws = tmp_path / "ws"
    write(ws / ".lich" / "config.json", '{"project_rules": false}')
    assert load_config(ws).settings.project_rules is False
    write(ws / ".lich" / "config.json", '{"project_rules": true}')
    assert load_config(ws, overrides={"project_rules": False}).settings.project_rules is False
    config = load_config(ws, overrides={"project_rules": "no"})
    assert [(p.path, p.detail) for p in config.problems] == [
        ("project_rules", "expected true or false, got str 'no'")
    ]
