"""find_files: file paths matching a glob (kli's semantics), no content.

Pattern semantics: `*` spans characters within one path segment (`?` one character, `[...]` a
class), a bare `**` segment spans any number of directories including none. Patterns are relative
to the work dir. Symlinks to files match; symlinked directories are not descended. Directories in
SKIP_DIRS are skipped unless the pattern names them with a literal segment.

The walk is the hot path (`**/*.py` over a big tree), so it stays close to os.scandir: an explicit
stack of (directory, relative prefix, matcher state), segment matchers compiled once (to C
callables where the shape allows), matcher states interned so each directory costs one dict
lookup, a directory's entries taken at once (the entry, time and cancellation bounds are checked
per directory), and directories the pattern cannot match below are never opened.
"""

from __future__ import annotations

import asyncio
import fnmatch
import functools
import itertools
import operator
import os
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from lich_core.errors import ToolCancelledError, ToolError
from lich_core.tools.guard import (
    MAX_WALK_ENTRIES,
    SKIP_DIRS,
    capture_errors,
    require_string_arg,
    resolve_safe_path,
)
from lich_core.tools.types import FunctionTool, ToolContext
from lich_core.vocabulary import ToolResult
from lich_core.workspace import WorkspaceListing

MAX_FIND_RESULTS = 1000
MAX_WALK_MS = 10_000
# How many entries between deadline / cancellation checks (a clock read per entry is measurable).
CHECK_EVERY_ENTRIES = 2048

GLOB_MAGIC = re.compile(r"[*?\[]")
# Truthy when the name matches. Matchers are C callables where possible (a bound method, a
# methodcaller): the walk calls one per entry, and a Python lambda's frame costs more than the test.
NameMatcher = Callable[[str], object]


def _accept_any(name: str) -> bool:
    return True


def _accept_none(name: str) -> bool:
    return False


def compile_segment(segment: str) -> NameMatcher:
    """A name predicate for one glob segment; common shapes avoid the regex engine."""
    if not GLOB_MAGIC.search(segment):
        return segment.__eq__
    if segment == "*":
        return _accept_any
    if segment.startswith("*") and not GLOB_MAGIC.search(segment[1:]):
        return operator.methodcaller("endswith", segment[1:])
    if segment.endswith("*") and not GLOB_MAGIC.search(segment[:-1]):
        return operator.methodcaller("startswith", segment[:-1])
    return re.compile(fnmatch.translate(segment)).match


@dataclass
class _State:
    """A set of positions in the pattern: where a directory's entries may continue matching."""

    positions: frozenset[int]
    # Does any position accept a file entry as a full match? `file_any` means every name does.
    file_any: bool = False
    file_matchers: tuple[NameMatcher, ...] = ()
    # For directory entries: whether `**` lets any name continue, and which segments consume one.
    has_globstar: bool = False
    step_matchers: tuple[tuple[int, NameMatcher, bool], ...] = ()  # (position, matcher, literal)
    transitions: dict[str, _State] = field(default_factory=dict)  # by directory name (memo)


class GlobMatcher:
    """An NFA over path segments with interned states (a lazily built DFA)."""

    def __init__(self, segments: list[str]) -> None:
        self.segments = segments
        self.end = len(segments)
        self.matchers: list[NameMatcher | None] = [
            None if seg == "**" else compile_segment(seg) for seg in segments
        ]
        self.literal = [seg != "**" and not GLOB_MAGIC.search(seg) for seg in segments]
        self._states: dict[frozenset[int], _State] = {}
        self.dead = self.state(frozenset())
        self.start = self.state(self._closure({0}))

    def _closure(self, positions: set[int]) -> frozenset[int]:
        """Add the positions reachable by letting `**` match zero segments."""
        out = set(positions)
        work = list(positions)
        while work:
            pos = work.pop()
            if pos < self.end and self.segments[pos] == "**" and pos + 1 not in out:
                out.add(pos + 1)
                work.append(pos + 1)
        return frozenset(out)

    def state(self, positions: frozenset[int]) -> _State:
        known = self._states.get(positions)
        if known is not None:
            return known
        state = _State(positions)
        file_matchers: list[NameMatcher] = []
        steps: list[tuple[int, NameMatcher, bool]] = []
        for pos in sorted(positions):
            if pos >= self.end:
                continue
            matcher = self.matchers[pos]
            if matcher is None:
                state.has_globstar = True
                if self.end in self._closure({pos}):
                    state.file_any = True  # a trailing `**` takes any file below
                continue
            steps.append((pos, matcher, self.literal[pos]))
            if self.end in self._closure({pos + 1}):
                file_matchers.append(matcher)
        state.file_matchers = tuple(file_matchers)
        state.step_matchers = tuple(steps)
        self._states[positions] = state
        return state

    def step_dir(self, state: _State, name: str) -> _State:
        """The state for a subdirectory called `name` (dead when nothing below can match)."""
        known = state.transitions.get(name)
        if known is not None:
            return known
        skipped = name in SKIP_DIRS
        nxt: set[int] = set()
        if state.has_globstar and not skipped:
            nxt.update(
                pos for pos in state.positions if pos < self.end and self.matchers[pos] is None
            )
        for pos, matcher, literal in state.step_matchers:
            if (literal or not skipped) and matcher(name):
                nxt.add(pos + 1)
        result = self.state(self._closure(nxt)) if nxt else self.dead
        if not result.step_matchers and not result.has_globstar and not result.file_matchers:
            result = self.dead
        state.transitions[name] = result
        return result

    def file_matches(self, state: _State, name: str) -> bool:
        if state.file_any:
            return True
        for matcher in state.file_matchers:
            if matcher(name):
                return True
        return False

    def match_rel_path(self, rel: str) -> bool:
        """Whether a file at `rel` ("/"-separated) matches, honouring SKIP_DIRS on the way."""
        parts = rel.split("/")
        state = self.start
        for part in parts[:-1]:
            state = self.step_dir(state, part)
            if state is self.dead:
                return False
        return self.file_matches(state, parts[-1])


@dataclass
class WalkResult:
    paths: list[str]
    visited: int
    stop: str = ""  # why the walk stopped early, "" when complete


def parse_pattern(pattern: str, work_dir: str) -> list[str]:
    """Split into segments relative to work_dir; `..` and outside absolute paths escape."""
    text = pattern.replace("\\", "/") if os.sep == "\\" else pattern
    if os.path.isabs(text):
        root = work_dir.rstrip("/") + "/"
        if text.rstrip("/") == work_dir.rstrip("/"):
            text = ""
        elif text.startswith(root):
            text = text[len(root) :]
        else:
            raise ToolError(f"path_escape: {pattern} is outside the work dir {work_dir}")
    segments = [seg for seg in text.split("/") if seg not in ("", ".")]
    if ".." in segments:
        raise ToolError(f"path_escape: {pattern} uses '..'; patterns stay inside the work dir")
    # Consecutive `**` mean the same as one.
    collapsed: list[str] = []
    for seg in segments:
        if not (seg == "**" and collapsed and collapsed[-1] == "**"):
            collapsed.append(seg)
    return collapsed


def walk(
    start_dir: str,
    start_rel: str,
    matcher: GlobMatcher,
    *,
    max_entries: int = MAX_WALK_ENTRIES,
    max_ms: int = MAX_WALK_MS,
    is_cancelled: Callable[[], bool] = lambda: False,
) -> WalkResult:
    """Depth-first walk with an explicit stack; relative paths are built as strings."""
    deadline = time.monotonic() + max_ms / 1000
    paths: list[str] = []
    append = paths.append
    file_matches = matcher.file_matches
    step_dir = matcher.step_dir
    dead = matcher.dead
    visited = 0
    next_check = CHECK_EVERY_ENTRIES
    stack: list[tuple[str, str, _State]] = [(start_dir, start_rel, matcher.start)]
    stop = ""
    while stack:
        dir_path, rel_prefix, state = stack.pop()
        try:
            scanner = os.scandir(dir_path)
        except OSError:
            continue  # unreadable or vanished: nothing to report from it
        # One predicate per directory instead of a dispatch per entry (the common single matcher).
        if state.file_any:
            accepts: NameMatcher = _accept_any
        elif len(state.file_matchers) == 1:
            accepts = state.file_matchers[0]
        elif not state.file_matchers:
            accepts = _accept_none
        else:
            accepts = functools.partial(file_matches, state)
        with scanner:
            # A directory's entries at once, as many as the entry limit leaves: the loop below
            # then carries no per-entry counting, and the bounds are checked once per directory.
            entries = list(itertools.islice(scanner, max_entries - visited))
        visited += len(entries)
        for entry in entries:
            name = entry.name
            try:
                if entry.is_dir(follow_symlinks=False):
                    sub = step_dir(state, name)
                    if sub is not dead:
                        stack.append((entry.path, rel_prefix + name + "/", sub))
                elif accepts(name):
                    # Regular files need no stat; a symlink counts only if it leads to a file.
                    if not entry.is_symlink() or entry.is_file():
                        append(rel_prefix + name)
            except OSError:
                pass
        if visited >= next_check:
            next_check = visited + CHECK_EVERY_ENTRIES
            if is_cancelled():
                return WalkResult(paths, visited, "cancelled")
            if time.monotonic() > deadline:
                stop = f"time limit of {max_ms // 1000} s"
                break
        if visited >= max_entries:
            stop = f"entry limit of {max_entries} entries visited"
            break
    return WalkResult(paths, visited, stop)


def find(ctx: ToolContext, pattern: str) -> tuple[list[str], WalkResult]:
    """Resolve the pattern's literal prefix (confined), then walk from there."""
    work_dir = str(ctx.work_dir)
    segments = parse_pattern(pattern, work_dir)
    if not segments:
        raise ToolError(f"missing_arg: pattern (it names no files: {pattern!r})")
    prefix_len = 0
    while prefix_len < len(segments) - 1 and not GLOB_MAGIC.search(segments[prefix_len]):
        prefix_len += 1
    prefix = segments[:prefix_len]
    start_rel = "".join(seg + "/" for seg in prefix)
    # Confinement of the fixed part, including symlinks that lead outside (path_escape:).
    start_dir = str(resolve_safe_path(work_dir, start_rel or "."))
    matcher = GlobMatcher(segments[prefix_len:])
    if not os.path.isdir(start_dir):
        result = WalkResult([], 0)
    else:
        result = walk(
            start_dir,
            start_rel,
            matcher,
            max_entries=MAX_WALK_ENTRIES,
            max_ms=MAX_WALK_MS,
            is_cancelled=lambda: ctx.cancel.cancelled,
        )
    paths = result.paths
    # The walk saw the disk; the workspace adds its new files (buffers not saved yet) that match.
    found = set(paths)
    new_files = WorkspaceListing(ctx.workspace, work_dir).new_files(under=start_rel)
    extra = [
        rel
        for rel in new_files
        if rel not in found and matcher.match_rel_path(rel[len(start_rel) :])
    ]
    if extra:
        paths = paths + extra
    return paths, result


def render(pattern: str, paths: list[str], result: WalkResult) -> str:
    paths.sort()
    shown = paths[:MAX_FIND_RESULTS]
    lines = list(shown) if shown else [f"No files match {pattern}"]
    if len(paths) > MAX_FIND_RESULTS:
        lines.append(f"... and {len(paths) - MAX_FIND_RESULTS} more (narrow the pattern)")
    if result.stop:
        lines.append(
            f"[walk stopped early at the {result.stop} after {result.visited} entries; "
            "results are partial, narrow the pattern]"
        )
    return "\n".join(lines)


@capture_errors
async def find_files(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    pattern = require_string_arg(args, "pattern").strip()
    paths, result = await asyncio.to_thread(find, ctx, pattern)
    if result.stop == "cancelled":
        raise ToolCancelledError()
    return ToolResult(
        ok=True,
        output=render(pattern, paths, result),
        details={"matches": len(paths), "visited": result.visited, "stopped": result.stop or None},
    )


TOOL = FunctionTool(
    name="find_files",
    description=("Paths matching a glob (** spans any depth), sorted, at most 1000."),
    parameters={
        "type": "object",
        "properties": {
            "pattern": {
                "type": "string",
            },
        },
        "required": ["pattern"],
        "additionalProperties": False,
    },
    run=find_files,
    capability="file/read",
)
