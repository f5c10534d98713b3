"""find_files' walk: directories taken whole (bounded by the entry limit) and C-level matchers."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from lich_core.tools.builtin import find_files as find_module
from lich_core.tools.builtin.find_files import GlobMatcher, compile_segment, parse_pattern, walk


def make_files(root: Path, *paths: str) -> None:
    for rel in paths:
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("x\n")


@pytest.mark.parametrize(
    ("segment", "yes", "no"),
    [
        ("*.py", ["a.py", ".py", "x.y.py"], ["a.pyc", "py", "a.PY"]),  # suffix
        ("test_*", ["test_a", "test_"], ["atest_b", "Test_a"]),  # prefix
        ("README.md", ["README.md"], ["readme.md", "README.mdx"]),  # literal
        ("t?st_[ab].py", ["test_a.py", "tost_b.py"], ["test_c.py", "tst_a.py"]),  # regex
        ("*", ["anything", ".hidden"], []),
    ],
)
def test_segment_matchers(segment: str, yes: list[str], no: list[str]) -> None:
    matcher = compile_segment(segment)
    assert all(matcher(name) for name in yes)
    assert not any(matcher(name) for name in no)


def test_the_entry_limit_cuts_inside_a_directory_at_exactly_the_limit(tmp_path: Path) -> None:
    make_files(tmp_path, *(f"f{index}.py" for index in range(10)))
    first_four = [entry.name for entry in os.scandir(tmp_path)][:4]
    result = walk(
        str(tmp_path), "", GlobMatcher(parse_pattern("**/*.py", str(tmp_path))), max_entries=4
    )
    assert result.visited == 4 and result.stop == "entry limit of 4 entries visited"
    assert result.paths == first_four


def test_the_entry_limit_counts_directories_and_files_across_the_tree(tmp_path: Path) -> None:
    make_files(tmp_path, "a/1.py", "a/2.txt", "a/3.py", "a/4.py")
    matcher = GlobMatcher(parse_pattern("**/*.py", str(tmp_path)))
    complete = walk(str(tmp_path), "", matcher)
    assert complete.visited == 5 and complete.stop == ""  # a, then its four files
    assert sorted(complete.paths) == ["a/1.py", "a/3.py", "a/4.py"]
    in_order = [f"a/{entry.name}" for entry in os.scandir(tmp_path / "a")]
    limited = walk(str(tmp_path), "", matcher, max_entries=4)
    assert limited.visited == 4 and limited.stop == "entry limit of 4 entries visited"
    assert limited.paths == [path for path in in_order[:3] if path.endswith(".py")]


def test_bounds_are_checked_after_each_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    make_files(tmp_path, "a/1.py", "b/2.py")
    monkeypatch.setattr(find_module, "CHECK_EVERY_ENTRIES", 1)
    matcher = GlobMatcher(parse_pattern("**/*.py", str(tmp_path)))
    calls: list[int] = []

    def cancelled() -> bool:
        calls.append(1)
        return len(calls) >= 2

    result = walk(str(tmp_path), "", matcher, is_cancelled=cancelled)
    # The root, then one of a/ and b/: cancelled after the second directory, the third unopened.
    assert result.stop == "cancelled" and result.visited == 3 and len(result.paths) == 1
