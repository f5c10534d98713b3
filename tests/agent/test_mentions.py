"""@-mentions: the parser, and the resolver's attachments, refusals and bounds (lich_core.agent.mentions)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from lich_core.agent.mentions import (
    MENTION_MAX_LINES,
    MENTIONS_MAX,
    NO_EDITOR_PROBLEMS,
    DiskSource,
    Mention,
    mention_candidates,
    parse_mentions,
    resolve_mentions,
)
from lich_core.hashline.anchors import line_hash
from lich_core.hashline.read_state import ReadState


def test_parse_paths_ranges_and_not_emails() -> None:
    prompt = "see @a.py, then @src/b.py:2-3 and @c.py:7. mail me@x.org (@d.py) @problems @a.py"
    assert parse_mentions(prompt) == [
        Mention("@a.py", "a.py"),
        Mention("@src/b.py:2-3", "src/b.py", 2, 3),
        Mention("@c.py:7", "c.py", 7, 7),
        Mention("@d.py", "d.py"),
        Mention("@problems", "problems"),
    ]
    assert parse_mentions("no mentions, user@host.com, @ alone") == []
    assert parse_mentions("@../x")[0].path == "../x"


class Buffers(DiskSource):
    """An editor with one unsaved buffer over the disk."""

    def __init__(self, path: Path, text: str) -> None:
        self.path, self.text = path, text

    def has_buffer(self, path: Path) -> bool:
        return path == self.path

    def current_text(self, path: Path) -> str | None:
        return self.text if path == self.path else super().current_text(path)


def test_attaches_buffer_rows_and_records_the_read(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("disk\n", encoding="utf-8")
    state = ReadState()
    source = Buffers(tmp_path / "a.py", "first\ntwo\nthree\n")
    result = resolve_mentions("fix @a.py:2-3", tmp_path, source, read_state=state)
    text = result.text()
    assert f"2:{line_hash('two')}|two\n3:{line_hash('three')}|three" in text
    assert "lines 2-3 of 3" in text and "first" not in text and "disk" not in text
    assert state.has_read(tmp_path / "a.py") and result.paths == [tmp_path / "a.py"]


@pytest.mark.parametrize(
    ("mention", "note"),
    [
        ("@../x", "@../x: path_escape: ../x escapes"),
        ("@/etc/passwd", "@/etc/passwd: path_escape:"),
        ("@link/secret", "@link/secret: path_escape: link/secret resolves through a symbolic link"),
        ("@missing.py", "@missing.py: not_found: missing.py"),
        ("@sub", "@sub: is_directory: sub is a directory"),
        ("@bin.dat", "@bin.dat: binary_file: bin.dat looks binary"),
        ("@big.txt", "@big.txt: file_too_large: big.txt is"),
        ("@a.py:9-12", "@a.py:9-12: out_of_range: line 9 is past the end of a.py"),
    ],
)
def test_refusals_are_noted_and_nothing_attached(tmp_path: Path, mention: str, note: str) -> None:
    root = tmp_path / "root"
    (root / "sub").mkdir(parents=True)
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "secret").write_text("s\n", encoding="utf-8")
    os.symlink(tmp_path / "outside", root / "link")
    (root / "a.py").write_text("a\n", encoding="utf-8")
    (root / "bin.dat").write_bytes(b"\x00\x01binary")
    (root / "big.txt").write_text("x" * (3 * 1024 * 1024), encoding="utf-8")
    state = ReadState()
    result = resolve_mentions(f"look at {mention}", root, DiskSource(), read_state=state)
    assert result.attachments == [] and result.paths == []
    assert len(result.notes) == 1 and result.notes[0].startswith(note), result.notes
    assert "tell the user" in result.text()


def test_long_file_is_truncated_with_a_note(tmp_path: Path) -> None:
    lines = [f"line {n}" for n in range(1, MENTION_MAX_LINES + 51)]
    (tmp_path / "long.py").write_text("\n".join(lines) + "\n", encoding="utf-8")
    text = resolve_mentions("@long.py", tmp_path, DiskSource()).text()
    assert f"{MENTION_MAX_LINES}:{line_hash(f'line {MENTION_MAX_LINES}')}|" in text
    assert f"|line {MENTION_MAX_LINES + 1}\n" not in text
    assert f"truncated: the mention limit is {MENTION_MAX_LINES} lines" in text
    assert f"read_file start={MENTION_MAX_LINES + 1}" in text


def test_too_many_mentions_are_noted(tmp_path: Path) -> None:
    for n in range(MENTIONS_MAX + 1):
        (tmp_path / f"f{n}.py").write_text("x\n", encoding="utf-8")
    prompt = " ".join(f"@f{n}.py" for n in range(MENTIONS_MAX + 1))
    result = resolve_mentions(prompt, tmp_path, DiskSource())
    assert len(result.attachments) == MENTIONS_MAX
    assert result.notes == [
        f"@f{MENTIONS_MAX}.py: invalid_arg: more than {MENTIONS_MAX} mentions in one prompt"
    ]


def test_problems_is_not_a_file_and_says_so_without_an_editor(tmp_path: Path) -> None:
    (tmp_path / "problems").write_text("not diagnostics\n", encoding="utf-8")
    result = resolve_mentions("fix @problems", tmp_path, DiskSource())
    assert result.attachments == [NO_EDITOR_PROBLEMS] and result.paths == []
    given = resolve_mentions("fix @problems", tmp_path, DiskSource(), problems=lambda: "P")
    assert given.attachments == ["P"] and given.notes == []


def test_candidates_prefix_first_then_name_matches_skipping_vcs(tmp_path: Path) -> None:
    (tmp_path / "src" / "deep").mkdir(parents=True)
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "src_config").write_text("", encoding="utf-8")
    for rel in ("src/main.py", "src/deep/util.py", "tools/src_gen.py", "readme.md"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("", encoding="utf-8")
    assert mention_candidates(tmp_path, "src", limit=50) == [
        "src/main.py",
        "src/deep/util.py",
        "tools/src_gen.py",
    ]
    assert mention_candidates(tmp_path, "@READ", limit=50) == ["readme.md"]
    assert len(mention_candidates(tmp_path, "", limit=2)) == 2
