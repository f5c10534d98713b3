"""find_files('**/*.py') against GNU `find DIR -name '*.py'` on the same generated tree.

The tree (50,000 files, or 5,000 with --quick) is generated once and cached under /tmp, so later
runs only measure. Files sit four levels deep (top/mid/leaf/file), a third each .py/.txt/.md.
"""

from __future__ import annotations

import asyncio
import shutil
import subprocess
import sys
from pathlib import Path

from bench.run import Figure, best_of
from lich_core.tools.builtin.find_files import TOOL as FIND_TOOL
from lich_core.tools.types import ToolContext

FULL_FILE_COUNT = 50_000
QUICK_FILE_COUNT = 5_000
FILES_PER_LEAF_DIR = 50
TOP_FANOUT = 10
MID_FANOUT = 10
EXTENSIONS = (".py", ".txt", ".md")
MARKER_NAME = ".lich-bench-complete"
FULL_REPEAT = 7
QUICK_REPEAT = 5


def tree_dir(file_count: int) -> Path:
    label = f"{file_count // 1000}k"
    return Path(f"/tmp/lich-bench-tree-{label}")


def ensure_tree(file_count: int) -> Path:
    """Create the tree unless a complete one is cached (the marker file is written last)."""
    root = tree_dir(file_count)
    marker = root / MARKER_NAME
    if marker.exists() and marker.read_text().strip() == str(file_count):
        return root
    if root.exists():
        shutil.rmtree(root)
    leaf_dirs = file_count // FILES_PER_LEAF_DIR
    leaf_fanout = max(1, leaf_dirs // (TOP_FANOUT * MID_FANOUT))
    made = 0
    for top in range(TOP_FANOUT):
        for mid in range(MID_FANOUT):
            for leaf in range(leaf_fanout):
                folder = root / f"pkg{top}" / f"mod{mid}" / f"part{leaf}"
                folder.mkdir(parents=True, exist_ok=True)
                for index in range(FILES_PER_LEAF_DIR):
                    if made >= file_count:
                        break
                    ext = EXTENSIONS[made % len(EXTENSIONS)]
                    (folder / f"file_{index}{ext}").write_bytes(b"x = 1\n")
                    made += 1
    marker.write_text(str(file_count))
    return root


def gnu_find_count(root: Path) -> int:
    out = subprocess.run(["find", str(root), "-name", "*.py"], check=True, capture_output=True).stdout
    return out.count(b"\n")


def run(quick: bool) -> list[Figure]:
    file_count = QUICK_FILE_COUNT if quick else FULL_FILE_COUNT
    repeat = QUICK_REPEAT if quick else FULL_REPEAT
    root = ensure_tree(file_count)
    if shutil.which("find") is None:
        return [Figure("find_files '**/*.py'", 0.0, "ms", note="GNU find not installed; no reference")]

    ctx = ToolContext(work_dir=root)
    loop = asyncio.new_event_loop()
    try:
        result = loop.run_until_complete(FIND_TOOL.execute({"pattern": "**/*.py"}, ctx))
        if not result.ok:
            raise RuntimeError(f"find_files failed: {result.error}")
        expected = gnu_find_count(root)
        if result.details["matches"] != expected:
            raise RuntimeError(f"find_files matched {result.details['matches']} files, find {expected}")
        ours_s = best_of(
            lambda: loop.run_until_complete(FIND_TOOL.execute({"pattern": "**/*.py"}, ctx)), repeat
        )
    finally:
        loop.close()
    find_s = best_of(lambda: gnu_find_count(root), repeat)
    return [
        Figure(
            f"find_files '**/*.py' ({file_count} files, {expected} match)",
            ours_s * 1000,
            "ms",
            reference_name="GNU find -name '*.py'",
            reference_value=find_s * 1000,
            target="<= 2.0x",
            note=f"best of {repeat}",
        )
    ]


if __name__ == "__main__":
    from bench.run import format_figure

    for figure in run("--quick" in sys.argv[1:]):
        print(format_figure(figure))
