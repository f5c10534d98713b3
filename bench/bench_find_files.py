"""The search tools against the programs they stand in for, on generated trees, in the same run.

- find_files('**/*.py') against GNU `find DIR -name '*.py'` on a 50,000-file tree (5,000 with
  --quick): files four levels deep (top/mid/leaf/file), a third each .py/.txt/.md.
- grep_files against `rg --no-ignore --hidden -n` on a 20,000-file tree (2,000 with --quick) of
  ~1.5 KB Python-looking files in folders of 100 (bench_hashline's make_tree), for a pattern that
  matches in about a quarter of the files ("match in every file", the issue's name) and one that
  matches in one file in 1,000. An info figure per pattern times the tool against rg run with the
  tool's own flags (the skip globs, `--debug`, `--max-count`; no `--max-filesize`, which cost rg
  a stat per file, ~25% of the rare-match search), which leaves the tool's own work (start,
  parse, render) as the difference.

Trees are generated once and cached under /tmp (a marker written last says a tree is complete),
so later runs only measure. Each figure is the best of N runs, the tool and its references run
alternately so that load from elsewhere on the machine hits them alike.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from bench.bench_hashline import make_tree as make_source_tree
from bench.run import Figure
from lich_core.tools.builtin.find_files import TOOL as FIND_TOOL
from lich_core.tools.builtin.grep_files import ENGINE_ENV, find_rg, rg_tree_command
from lich_core.tools.builtin.grep_files import TOOL as GREP_TOOL
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

GREP_FULL_FILE_COUNT = 20_000
GREP_QUICK_FILE_COUNT = 2_000
GREP_FULL_REPEAT = 9
GREP_QUICK_REPEAT = 3
GREP_PATTERNS = (
    ("match in every file", r"def \w+_value", "<= 1.2x"),
    ("rare match", "special_needle_token", "<= 1.15x"),
)


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


def ensure_grep_tree(file_count: int) -> Path:
    """bench_hashline's source tree, cached; the marker sits beside the tree, not in it (grep
    would search it)."""
    root = Path(f"/tmp/lich-bench-grep-{file_count // 1000}k")
    marker = root.with_name(root.name + ".complete")
    if marker.exists() and marker.read_text().strip() == str(file_count) and root.is_dir():
        return root
    marker.unlink(missing_ok=True)
    if root.exists():
        shutil.rmtree(root)
    make_source_tree(root, file_count)
    marker.write_text(str(file_count))
    return root


def interleaved_times(functions: list[Callable[[], object]], repeat: int) -> list[list[float]]:
    """Wall times (s) of each function over `repeat` rounds that run each once, in turn."""
    times: list[list[float]] = [[] for _ in functions]
    for _ in range(repeat):
        for index, function in enumerate(functions):
            started = time.perf_counter()
            function()
            times[index].append(time.perf_counter() - started)
    return times


def paired_note(measured: list[float], reference: list[float]) -> str:
    """How the figure was taken, with the median of the per-round ratios: steadier than the ratio
    of two bests when load from elsewhere comes and goes."""
    ratio = statistics.median(
        ours / theirs for ours, theirs in zip(measured, reference, strict=True)
    )
    return f"best of {len(measured)}, alternating; median ratio per round {ratio:.2f}x"


def gnu_find_count(root: Path) -> int:
    out = subprocess.run(
        ["find", str(root), "-name", "*.py"], check=True, capture_output=True
    ).stdout
    return out.count(b"\n")


def find_figures(quick: bool) -> list[Figure]:
    file_count = QUICK_FILE_COUNT if quick else FULL_FILE_COUNT
    repeat = QUICK_REPEAT if quick else FULL_REPEAT
    root = ensure_tree(file_count)
    if shutil.which("find") is None:
        return [
            Figure("find_files '**/*.py'", 0.0, "ms", note="GNU find not installed; no reference")
        ]

    ctx = ToolContext(work_dir=root)
    loop = asyncio.new_event_loop()
    try:
        result = loop.run_until_complete(FIND_TOOL.execute({"pattern": "**/*.py"}, ctx))
        if not result.ok:
            raise RuntimeError(f"find_files failed: {result.error}")
        expected = gnu_find_count(root)
        if result.details["matches"] != expected:
            raise RuntimeError(
                f"find_files matched {result.details['matches']} files, find {expected}"
            )
        ours, gnu = interleaved_times(
            [
                lambda: loop.run_until_complete(FIND_TOOL.execute({"pattern": "**/*.py"}, ctx)),
                lambda: gnu_find_count(root),
            ],
            repeat,
        )
    finally:
        loop.close()
    return [
        Figure(
            f"find_files '**/*.py' ({file_count} files, {expected} match)",
            min(ours) * 1000,
            "ms",
            reference_name="GNU find -name '*.py'",
            reference_value=min(gnu) * 1000,
            target="<= 1.2x",
            note=paired_note(ours, gnu),
        )
    ]


def grep_figures(quick: bool) -> list[Figure]:
    file_count = GREP_QUICK_FILE_COUNT if quick else GREP_FULL_FILE_COUNT
    repeat = GREP_QUICK_REPEAT if quick else GREP_FULL_REPEAT
    rg = find_rg()
    if rg is None:
        return [
            Figure(
                f"grep_files {file_count} files", 0.0, "ms", note="rg not installed; no reference"
            )
        ]
    root = ensure_grep_tree(file_count)
    saved_engine = os.environ.pop(ENGINE_ENV, None)  # the engine the tool picks by itself: rg
    figures: list[Figure] = []
    try:
        for label, pattern, target in GREP_PATTERNS:

            def run_tool(pattern: str = pattern) -> None:
                result = asyncio.run(
                    GREP_TOOL.execute({"pattern": pattern}, ToolContext(work_dir=root))
                )
                if not result.ok or result.details["engine"] != "rg":
                    raise RuntimeError(f"grep_files failed: {result.error or result.details}")

            def run_rg(pattern: str = pattern) -> None:
                command = [rg, "--no-ignore", "--hidden", "-n", "-e", pattern, "."]
                subprocess.run(command, cwd=root, capture_output=True, check=False)

            def run_rg_as_the_tool(pattern: str = pattern) -> None:
                subprocess.run(
                    rg_tree_command(rg, pattern, None), cwd=root, capture_output=True, check=False
                )

            run_tool()
            tool, plain, flags = interleaved_times([run_tool, run_rg, run_rg_as_the_tool], repeat)
            figures.append(
                Figure(
                    f"grep_files {file_count} files, {label}",
                    min(tool) * 1000,
                    "ms",
                    "rg",
                    min(plain) * 1000,
                    target,
                    paired_note(tool, plain),
                )
            )
            figures.append(
                Figure(
                    f"grep_files {file_count} files, {label}, vs its rg command (info)",
                    min(tool) * 1000,
                    "ms",
                    "rg with grep_files' flags",
                    min(flags) * 1000,
                    note=paired_note(tool, flags) + "; the tool's own work on top of its rg",
                )
            )
    finally:
        if saved_engine is not None:
            os.environ[ENGINE_ENV] = saved_engine
    return figures


def run(quick: bool) -> list[Figure]:
    return find_figures(quick) + grep_figures(quick)


if __name__ == "__main__":
    from bench.run import format_figure

    for figure in run("--quick" in sys.argv[1:]):
        print(format_figure(figure))
