"""What docs_search and docs_read share: the docs root, markdown sections, the index and scoring.

Sources, each tagged in results:

- `docs`: markdown files (`*.md`, `*.markdown`) under the docs root, walked recursively (skipping
  SKIP_DIRS and symbolic links). The root is the `docs_dir` setting (trusted-only; relative to
  the work root when relative), else `<root>/docs` when it is a directory whose real path stays in
  the root, else lich's own docs folder (`docs/` next to the `lich_core` package) when it exists.
  Each docs root's sections are memoised, keyed per file by path, mtime_ns and size: every call
  stats the files and re-reads only the changed ones, so an edited doc shows at once. Files open
  in the editor with unsaved text are read through the workspace and never memoised.
- `skills`: `<root>/.lich/skills/*.md` (no index.md needed), walked fresh on every call, never
  memoised: the user and the agent write these files.
- `memory`: the root's MEMORY.md.

All three are reference data, not instructions.

A section is one heading (`#` to `######`, outside fenced code blocks) and the lines up to the
next heading; text before a file's first heading is a section of its own, `(top of file)`.

Scoring (docs/tools.md says the same). The query's words are its `\\w+` runs, lowercased, of 2+
characters, each counted once. A word matches a token of the section when the token equals it or,
for words of 3+ characters, starts with it (`test` matches `tests`). Per query word:

- heading: HEADING_WEIGHT (4.0) when a token of the heading matches it;
- body: 1 + 1/2 + 1/3 + ... + 1/n for its n matching body tokens (n capped at MAX_COUNTED_HITS,
  20, so the body's share of one word stays under 3.6 and a heading hit always outweighs it).

Then, for queries of 2+ words: ALL_WORDS_BONUS (3.0) when every word matches somewhere in the
section, and PHRASE_BONUS (6.0) more when the query's words occur in order as a phrase
(punctuation and spacing ignored). Sections scoring 0 are dropped; ties go docs, skills, memory,
then path and line.
"""

from __future__ import annotations

import asyncio
import os
import re
import stat
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from lich_core.errors import ToolError
from lich_core.tools.file_text import MAX_FILE_BYTES
from lich_core.tools.guard import (
    SKIP_DIRS,
    check_file_access,
    relative_to_root,
    resolve_safe_path,
)
from lich_core.tools.memory import MEMORY_FILE
from lich_core.tools.types import ToolContext
from lich_core.workspace import read_disk_text, unsaved_set

SOURCES = ("docs", "skills", "memory")
DOC_SUFFIXES = (".md", ".markdown")
SKILLS_DIR = (".lich", "skills")
# The prefix docs_read and docs_search use for a skill file: `skills/<name>.md`.
SKILLS_PREFIX = "skills/"
TOP_OF_FILE = "(top of file)"

# Bounds on what one search reads.
MAX_DOC_FILES = 2_000
MAX_SKILL_FILES = 500
MAX_DOC_BYTES = MAX_FILE_BYTES
# Docs roots whose index is kept (a session sees one or two).
MAX_MEMO_ROOTS = 8

# Scoring weights (the module docstring explains them).
HEADING_WEIGHT = 4.0
MAX_COUNTED_HITS = 20
ALL_WORDS_BONUS = 3.0
PHRASE_BONUS = 6.0

_WORD = re.compile(r"\w+")
_HEADING = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?[ \t]*$")
_CLOSING_HASHES = re.compile(r"(?:^|[ \t]+)#+$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")


# --------------------------------------------------------------------------------------------
# Sections


@dataclass(frozen=True)
class Section:
    """One heading and its body: `path` is what docs_read takes, `line` the heading's (1-based)."""

    source: str
    path: str
    heading: str
    line: int
    text: str  # the heading line and the body, as in the file

    @cached_property
    def body_lines(self) -> list[str]:
        lines = self.text.split("\n")
        return lines[1:] if self.heading != TOP_OF_FILE else lines

    @cached_property
    def body_offset(self) -> int:
        """The file line number of body_lines[0]."""
        return self.line + 1 if self.heading != TOP_OF_FILE else self.line

    @cached_property
    def heading_tokens(self) -> list[str]:
        return tokens(self.heading) if self.heading != TOP_OF_FILE else []

    @cached_property
    def line_tokens(self) -> list[list[str]]:
        return [tokens(line) for line in self.body_lines]

    @cached_property
    def normalised(self) -> str:
        """Heading and body as lowercase words separated by single spaces, padded with spaces."""
        words = [*self.heading_tokens, *(token for line in self.line_tokens for token in line)]
        return " " + " ".join(words) + " "


def tokens(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def split_sections(text: str, path: str, source: str) -> list[Section]:
    """A markdown file's sections: split at ATX headings outside fenced code blocks."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    sections: list[Section] = []
    start = 0  # index of the current section's first line
    heading = TOP_OF_FILE
    fence: str | None = None

    def close(end: int) -> None:
        chunk = lines[start:end]
        if heading == TOP_OF_FILE and not any(line.strip() for line in chunk):
            return
        sections.append(Section(source, path, heading, start + 1, "\n".join(chunk)))

    for index, line in enumerate(lines):
        opened = _FENCE.match(line)
        if fence is not None:
            if (
                opened
                and opened.group(1)[0] == fence[0]
                and len(opened.group(1)) >= len(fence)
                and not line.strip(" `~")
            ):
                fence = None
            continue
        if opened:
            fence = opened.group(1)
            continue
        match = _HEADING.match(line)
        if match is None:
            continue
        close(index)
        start = index
        heading = _CLOSING_HASHES.sub("", match.group(2) or "").strip() or "(untitled)"
    close(len(lines))
    return sections


# --------------------------------------------------------------------------------------------
# Scoring


def query_words(query: str) -> list[str]:
    """The query's words: lowercased, 2+ characters, first occurrence order, each once."""
    seen: dict[str, None] = {}
    for word in tokens(query):
        if len(word) >= 2:
            seen.setdefault(word, None)
    return list(seen)


def query_phrase(query: str) -> str | None:
    """The query's words in order (all of them), for the phrase bonus; None for one word."""
    words = tokens(query)
    return " ".join(words) if len(words) >= 2 else None


def _matches(token: str, word: str) -> bool:
    return token == word or (len(word) >= 3 and token.startswith(word))


def _harmonic(count: int) -> float:
    return sum(1.0 / k for k in range(1, min(count, MAX_COUNTED_HITS) + 1))


@dataclass(frozen=True)
class Scored:
    score: float
    section: Section
    best_line: int | None  # index into section.body_lines of the best hit, None: heading only


def score_section(section: Section, words: Sequence[str], phrase: str | None) -> Scored:
    score = 0.0
    hit_words = 0
    for word in words:
        in_heading = any(_matches(token, word) for token in section.heading_tokens)
        body_hits = sum(
            1 for line in section.line_tokens for token in line if _matches(token, word)
        )
        if in_heading:
            score += HEADING_WEIGHT
        score += _harmonic(body_hits)
        if in_heading or body_hits:
            hit_words += 1
    if len(words) >= 2 and hit_words == len(words):
        score += ALL_WORDS_BONUS
        if phrase is not None and f" {phrase} " in section.normalised:
            score += PHRASE_BONUS
    return Scored(score, section, _best_line(section, words, phrase) if score else None)


def _best_line(section: Section, words: Sequence[str], phrase: str | None) -> int | None:
    """The body line with the phrase, else the most distinct words, else the most hits."""
    best: tuple[int, int, int] | None = None
    best_index: int | None = None
    for index, line in enumerate(section.line_tokens):
        if not line:
            continue
        distinct = sum(1 for word in words if any(_matches(token, word) for token in line))
        if not distinct:
            continue
        hits = sum(1 for token in line for word in words if _matches(token, word))
        has_phrase = int(phrase is not None and f" {phrase} " in " " + " ".join(line) + " ")
        rank = (has_phrase, distinct, hits)
        if best is None or rank > best:
            best, best_index = rank, index
    return best_index


def rank_sections(sections: Iterable[Section], query: str) -> list[Scored]:
    """Every section with a positive score, best first."""
    words = query_words(query)
    phrase = query_phrase(query)
    scored = [
        item
        for item in (score_section(section, words, phrase) for section in sections)
        if item.score > 0
    ]
    order = {source: index for index, source in enumerate(SOURCES)}
    scored.sort(
        key=lambda item: (
            -item.score,
            order.get(item.section.source, 9),
            item.section.path,
            item.section.line,
        )
    )
    return scored


SNIPPET_LINE_CHARS = 200


def snippet(item: Scored) -> list[tuple[int, str]]:
    """2-3 (line number, text) pairs: the best hit with its nearest non-blank neighbours, else the
    body's first two non-blank lines (blank lines are never shown)."""
    section = item.section
    body = section.body_lines
    filled = [index for index, line in enumerate(body) if line.strip()]
    if item.best_line is not None and item.best_line in filled:
        at = filled.index(item.best_line)
        window = filled[max(0, at - 1) : at + 2]
    else:
        window = filled[:2]
    return [(section.body_offset + index, _cut(body[index])) for index in window]


def _cut(line: str) -> str:
    line = line.rstrip()
    return line if len(line) <= SNIPPET_LINE_CHARS else line[: SNIPPET_LINE_CHARS - 1] + "…"


# --------------------------------------------------------------------------------------------
# Where the sources are


def package_docs_dir() -> Path | None:
    """lich's own docs folder (the repository's docs/ next to lich_core), when it exists."""
    import lich_core

    path = Path(lich_core.__file__).resolve().parents[1] / "docs"
    return path if path.is_dir() else None


def _inside(root: Path, path: Path) -> bool:
    try:
        path.relative_to(root)
    except ValueError:
        return False
    return True


def resolve_docs_root(ctx: ToolContext) -> Path | None:
    """The docs root's real path: docs_dir setting, else <root>/docs, else lich's docs; None if none.

    A configured docs_dir that is not a directory is an error (`not_found:`), never a silent
    fallback. `<root>/docs` counts only when its real path stays inside the root (a repository's
    `docs -> /somewhere` symlink does not widen what the tools read; docs_dir is trusted-only).
    """
    value = ctx.settings.docs_dir
    if isinstance(value, str) and value.strip():
        configured = Path(os.path.expanduser(value.strip()))
        if not configured.is_absolute():
            configured = ctx.work_dir / configured
        real = Path(os.path.realpath(configured))
        if not real.is_dir():
            raise ToolError(f"not_found: docs_dir {value!r} ({real}) is not a directory")
        return real
    local = ctx.work_dir / "docs"
    if local.is_dir():
        real = Path(os.path.realpath(local))
        if _inside(Path(os.path.realpath(ctx.work_dir)), real):
            return real
    package = package_docs_dir()
    return Path(os.path.realpath(package)) if package is not None else None


def skills_dir(ctx: ToolContext) -> Path | None:
    """`<root>/.lich/skills` when it is a directory inside the root."""
    path = ctx.work_dir.joinpath(*SKILLS_DIR)
    if not path.is_dir():
        return None
    try:
        return resolve_safe_path(ctx.work_dir, "/".join(SKILLS_DIR))
    except ToolError:
        return None  # a link out of the root: not the project's skills


def display_root(ctx: ToolContext, root: Path) -> str:
    real_work = Path(os.path.realpath(ctx.work_dir))
    if _inside(real_work, root):
        rel = relative_to_root(real_work, root)
        return "./" if rel == "." else rel + "/"
    return str(root)


# --------------------------------------------------------------------------------------------
# The memoised docs index


@dataclass
class _Cached:
    key: tuple[int, int]  # (mtime_ns, size)
    sections: list[Section]


@dataclass
class DocsIndex:
    """One docs root's sections, per file, refreshed by (mtime_ns, size)."""

    root: Path
    files: dict[str, _Cached] = field(default_factory=dict)
    reads: int = 0  # files (re)read and split, ever: what the memo saves shows here
    truncated: bool = False
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def refresh(self, skip: frozenset[Path] = frozenset()) -> list[Section]:
        """Stat every doc file; re-read the changed and new ones; forget the vanished ones.

        `skip`: real paths left out (the root's MEMORY.md, unsaved editor buffers).
        """
        with self._lock:
            found, self.truncated = _walk_docs(self.root)
            sections: list[Section] = []
            for rel, path, key in found:
                if path in skip:
                    continue
                cached = self.files.get(rel)
                if cached is None or cached.key != key:
                    try:
                        text = read_disk_text(path, self.root)
                    except (OSError, ToolError, UnicodeError):
                        self.files.pop(rel, None)
                        continue
                    self.reads += 1
                    cached = _Cached(key, split_sections(text, rel, "docs"))
                    self.files[rel] = cached
                sections.extend(cached.sections)
            present = {rel for rel, _, _ in found}
            for rel in [rel for rel in self.files if rel not in present]:
                del self.files[rel]
            return sections


def _walk_docs(root: Path) -> tuple[list[tuple[str, Path, tuple[int, int]]], bool]:
    """(rel, path, (mtime_ns, size)) of regular markdown files under root, sorted; truncated?"""
    found: list[tuple[str, Path, tuple[int, int]]] = []
    stack = [root]
    while stack:
        directory = stack.pop()
        try:
            with os.scandir(directory) as it:
                entries = sorted(it, key=lambda entry: entry.name)
        except OSError:
            continue
        subdirs: list[Path] = []
        for entry in entries:
            try:
                if entry.is_symlink():
                    continue
                if entry.is_dir(follow_symlinks=False):
                    if entry.name not in SKIP_DIRS:
                        subdirs.append(Path(entry.path))
                    continue
                if not entry.name.lower().endswith(DOC_SUFFIXES):
                    continue
                info = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_DOC_BYTES:
                continue
            if len(found) >= MAX_DOC_FILES:
                return sorted(found), True
            path = Path(entry.path)
            found.append((relative_to_root(root, path), path, (info.st_mtime_ns, info.st_size)))
        stack.extend(reversed(subdirs))
    return sorted(found), False


_INDEXES: dict[Path, DocsIndex] = {}
_INDEXES_LOCK = threading.Lock()


def docs_index(root: Path) -> DocsIndex:
    """The memoised index of a docs root (its real path); the oldest is dropped past MAX_MEMO_ROOTS."""
    with _INDEXES_LOCK:
        index = _INDEXES.get(root)
        if index is None:
            while len(_INDEXES) >= MAX_MEMO_ROOTS:
                del _INDEXES[next(iter(_INDEXES))]
            index = _INDEXES[root] = DocsIndex(root)
        return index


# --------------------------------------------------------------------------------------------
# Gathering every source for one call


@dataclass
class Corpus:
    sections: list[Section]
    docs_root: Path | None
    notes: list[str]


def _in_work_root(ctx: ToolContext, path: Path) -> bool:
    """`path` really lies inside the work root (a link out of it does not count)."""
    return _inside(Path(os.path.realpath(ctx.work_dir)), Path(os.path.realpath(path)))


def _workspace_text(ctx: ToolContext, path: Path) -> str | None:
    """A skill's, MEMORY.md's or an unsaved doc's text through the workspace; None: skip it."""
    workspace = ctx.workspace
    assert workspace is not None
    if not _in_work_root(ctx, path):
        return None
    if path not in unsaved_set(workspace):
        try:
            if os.path.getsize(path) > MAX_DOC_BYTES:
                return None
        except OSError:
            return None
    try:
        text = workspace.read_text(path)
    except (OSError, ToolError, UnicodeError):
        return None
    if len(text) > MAX_DOC_BYTES or "\0" in text[:8192]:
        return None
    return text


def docs_unsaved(ctx: ToolContext, root: Path) -> dict[str, Path]:
    """Unsaved editor buffers of markdown files under the docs root: {rel: path}."""
    assert ctx.workspace is not None
    found: dict[str, Path] = {}
    for path in unsaved_set(ctx.workspace):
        real = Path(os.path.realpath(path))
        if _inside(root, real) and real.name.lower().endswith(DOC_SUFFIXES):
            rel = relative_to_root(root, real)
            if not any(part in SKIP_DIRS for part in rel.split("/")[:-1]):
                found[rel] = path
    return found


async def docs_sections(ctx: ToolContext, root: Path) -> list[Section]:
    """The docs root's sections: the memoised index plus unsaved buffers read through the workspace.

    The index is refreshed in a worker thread (it stats every file); the workspace is only read
    here, on the caller's loop.
    """
    memory = Path(os.path.realpath(ctx.work_dir / MEMORY_FILE))
    unsaved = docs_unsaved(ctx, root)
    skip = frozenset({memory, *(root / rel for rel in unsaved)})
    sections = await asyncio.to_thread(docs_index(root).refresh, skip)
    for rel, path in sorted(unsaved.items()):
        if root / rel == memory:
            continue
        text = _workspace_text(ctx, path)
        if text is not None:
            sections.extend(split_sections(text, rel, "docs"))
    return sections


def skill_files(ctx: ToolContext) -> list[tuple[str, Path]]:
    """(`skills/<name>.md`, path) of the skill files, disk and unsaved buffers, by name."""
    directory = skills_dir(ctx)
    if directory is None:
        return []
    names: dict[str, Path] = {}
    try:
        with os.scandir(directory) as it:
            for entry in it:
                if entry.name.endswith(".md") and entry.is_file():
                    names[entry.name] = Path(entry.path)
    except OSError:
        pass
    assert ctx.workspace is not None
    for path in unsaved_set(ctx.workspace):
        if path.parent == directory and path.name.endswith(".md"):
            names.setdefault(path.name, path)
    return [(SKILLS_PREFIX + name, names[name]) for name in sorted(names)[:MAX_SKILL_FILES]]


def skills_sections(ctx: ToolContext) -> list[Section]:
    """Every skill file's sections, read now through the workspace (never memoised)."""
    sections: list[Section] = []
    for display, path in skill_files(ctx):
        text = _workspace_text(ctx, path)
        if text is not None:
            sections.extend(split_sections(text, display, "skills"))
    return sections


def memory_sections(ctx: ToolContext) -> list[Section]:
    path = ctx.work_dir / MEMORY_FILE
    assert ctx.workspace is not None
    if not ctx.workspace.exists(path) or os.path.isdir(path):
        return []
    text = _workspace_text(ctx, path)
    return split_sections(text, MEMORY_FILE, "memory") if text is not None else []


async def gather(ctx: ToolContext) -> Corpus:
    """All sections for one search: docs (memoised index), skills and memory (read now)."""
    notes: list[str] = []
    docs_root = resolve_docs_root(ctx)
    if docs_root is None:
        notes.append("no docs root (set docs_dir, or add a docs/ folder)")
        docs_part: list[Section] = []
    else:
        docs_part = await docs_sections(ctx, docs_root)
        if docs_index(docs_root).truncated:
            notes.append(f"the docs index stops at {MAX_DOC_FILES} files")
    sections = [*docs_part, *skills_sections(ctx), *memory_sections(ctx)]
    return Corpus(sections, docs_root, notes)


# --------------------------------------------------------------------------------------------
# docs_read's targets


@dataclass(frozen=True)
class ReadTarget:
    source: str
    display: str  # what docs_read and docs_search call it: `tools.md`, `skills/x.md`, `MEMORY.md`
    path: Path
    base: Path  # the folder it is confined to


_LOCATOR = re.compile(r"^(docs|skills|memory):(.*)$")
_LINE_SUFFIX = re.compile(r"^(.*\S):(\d+)$")


def parse_locator(target: str) -> tuple[str | None, str, int | None]:
    """`[source:]path[:line]` (a docs_search entry) → (source or None, path, line or None)."""
    source: str | None = None
    match = _LOCATOR.match(target.strip())
    text = target.strip()
    if match:
        source, text = match.group(1), match.group(2).strip()
    line: int | None = None
    suffix = _LINE_SUFFIX.match(text)
    if suffix:
        text, line = suffix.group(1), int(suffix.group(2))
    return source, text, line


def resolve_read_target(ctx: ToolContext, target: str) -> tuple[ReadTarget, int | None]:
    """Where docs_read reads `target`, confined to its source's folder; plus a locator's line."""
    source, rel, line = parse_locator(target)
    plain = rel[2:] if rel.startswith("./") else rel
    if source is None:
        if plain == MEMORY_FILE:
            source = "memory"
        elif plain.startswith(SKILLS_PREFIX):
            source = "skills"
        else:
            source = "docs"
    if source == "memory":
        if plain not in (MEMORY_FILE, ""):
            raise ToolError(f"not_found: {target} (memory has one file, {MEMORY_FILE})")
        path = resolve_safe_path(ctx.work_dir, MEMORY_FILE)
        return ReadTarget("memory", MEMORY_FILE, path, ctx.work_dir), line
    if source == "skills":
        name = plain[len(SKILLS_PREFIX) :] if plain.startswith(SKILLS_PREFIX) else plain
        if not name:
            raise ToolError("missing_arg: path (a skill file: skills/<name>.md)")
        directory = skills_dir(ctx)
        if directory is None:
            raise ToolError(f"not_found: {target} (there is no .lich/skills/ folder)")
        path = resolve_safe_path(directory, name)
        return ReadTarget(
            "skills", SKILLS_PREFIX + relative_to_root(directory, path), path, directory
        ), line
    root = resolve_docs_root(ctx)
    if root is None:
        raise ToolError(f"not_found: {target} (no docs root: set docs_dir, or add a docs/ folder)")
    if not plain:
        raise ToolError("missing_arg: path")
    path = resolve_safe_path(root, plain)
    return ReadTarget("docs", relative_to_root(root, path), path, root), line


def read_target_text(ctx: ToolContext, target: ReadTarget) -> str:
    """The file's text: through the workspace inside the work root (unsaved buffers included),
    else opened race-free inside its docs root. Raises not_found:, is_directory:, file_too_large:.
    """
    workspace = ctx.workspace
    assert workspace is not None
    path = target.path
    label = f"{target.source}:{target.display}"
    real_work = Path(os.path.realpath(ctx.work_dir))
    real = Path(os.path.realpath(path))
    is_unsaved = path in unsaved_set(workspace)
    if not is_unsaved:
        if os.path.isdir(path):
            raise ToolError(f"is_directory: {label} is a directory")
        if not os.path.exists(path):
            raise ToolError(f"not_found: {label}")
        size = os.path.getsize(path)
        if size > MAX_DOC_BYTES:
            raise ToolError(
                f"file_too_large: {label} is {size} bytes, over the {MAX_DOC_BYTES}-byte limit"
            )
    if is_unsaved or _inside(real_work, real):
        check_file_access(real_work, real, write=False)
        try:
            text = workspace.read_text(path)
        except FileNotFoundError:
            raise ToolError(f"not_found: {label}") from None
    else:
        try:
            text = read_disk_text(path, target.base)
        except FileNotFoundError:
            raise ToolError(f"not_found: {label}") from None
    if "\0" in text[:8192]:
        raise ToolError(f"binary_file: {label} looks binary (a NUL byte in its first 8 KB)")
    return text
