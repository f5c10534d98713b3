"""grep_files' pure-Python search engine (the fallback when `rg` is missing or refuses a pattern).

Standard library only: grep_files runs this file as a child process (`python -I FILE`), so a
pathological regular expression (Python's `re` backtracks) can be stopped by killing the child
at the time budget instead of hanging the server. The parent imports it for the glob matcher.

Job (one JSON object on stdin):
    {"pattern", "root", "glob", "skip_dirs", "max_bytes", "max_entries", "exclude": [rel...],
     "texts": {rel: text}, "walk": bool}
Output, one JSON object per line: {"file": rel, "lines": [n, ...]} for each file with matches
(flushed as found, so a stopped search still yields what it found), then
{"done": true, "too_large": n, "binary": n, "visited": n, "stopped": reason or ""}.

Walk semantics mirror how grep_files runs rg (`--no-ignore --hidden`, no symlinks): every
regular file under root except inside a skipped directory name; .gitignore is not consulted.
Like find_files, the walk stops after `max_entries` directory entries and says so.
"""

from __future__ import annotations

import json
import os
import re
import stat
import sys
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass

GlobMatcher = Callable[[str], bool]
# find_files' bound (kli's find/search): directory entries one walk may visit. The parent passes
# its own value; this default only serves a job without one.
DEFAULT_MAX_WALK_ENTRIES = 100_000


def _translate_glob(glob: str) -> str:
    """Glob → regex body with gitignore/ripgrep semantics (`*` stays inside a path segment)."""
    out: list[str] = []
    index = 0
    length = len(glob)
    depth = 0  # inside {a,b}
    while index < length:
        char = glob[index]
        if glob.startswith("**/", index):
            out.append("(?:.*/)?")
            index += 3
            continue
        if glob.startswith("/**", index) and index + 3 == length:
            out.append("/.*")
            index += 3
            continue
        if glob.startswith("**", index):
            out.append(".*")
            index += 2
            continue
        if char == "*":
            out.append("[^/]*")
        elif char == "?":
            out.append("[^/]")
        elif char == "[":
            close = glob.find("]", index + 2)
            if close < 0:
                out.append(re.escape(char))
            else:
                body = glob[index + 1 : close]
                if body.startswith("!"):
                    body = "^" + body[1:]
                out.append("[" + body.replace("\\", "\\\\") + "]")
                index = close
        elif char == "{":
            depth += 1
            out.append("(?:")
        elif char == "}" and depth:
            depth -= 1
            out.append(")")
        elif char == "," and depth:
            out.append("|")
        elif char == "\\" and index + 1 < length:
            index += 1
            out.append(re.escape(glob[index]))
        else:
            out.append(re.escape(char))
        index += 1
    return "".join(out)


def compile_glob(glob: str | None) -> tuple[GlobMatcher | None, bool]:
    """(matcher over a root-relative "a/b/c.py" path, negated). None matcher: no glob."""
    if not glob:
        return None, False
    negated = glob.startswith("!")
    if negated:
        glob = glob[1:]
    anchored = "/" in glob.rstrip("/")
    glob = glob.lstrip("/").rstrip("/")
    regex = re.compile(_translate_glob(glob) + r"\Z", re.DOTALL)
    if anchored:
        return (lambda rel: regex.match(rel) is not None), negated
    return (lambda rel: regex.match(rel.rsplit("/", 1)[-1]) is not None), negated


def glob_allows_file(rel: str, matcher: GlobMatcher | None, negated: bool) -> bool:
    if matcher is None:
        return True
    return matcher(rel) != negated


@dataclass
class WalkCounts:
    too_large: int = 0
    binary: int = 0
    visited: int = 0
    stopped: str = ""


def walk_files(
    root: str,
    matcher: GlobMatcher | None,
    negated: bool,
    skip_dirs: set[str],
    counts: WalkCounts,
    max_bytes: int,
    max_entries: int = DEFAULT_MAX_WALK_ENTRIES,
) -> Iterator[str]:
    """Root-relative paths of regular files to search (explicit stack; symlinks skipped).

    Stops after `max_entries` directory entries (counts.stopped says so): a huge tree must not
    keep the search busy until its time budget runs out.
    """
    stack = [""]
    while stack:
        rel_dir = stack.pop()
        try:
            entries = sorted(os.scandir(os.path.join(root, rel_dir)), key=lambda entry: entry.name)
        except OSError:
            continue
        subdirs: list[str] = []
        for entry in entries:
            if counts.visited >= max_entries:
                counts.stopped = f"entry limit of {max_entries} entries visited"
                return
            counts.visited += 1
            rel = f"{rel_dir}/{entry.name}" if rel_dir else entry.name
            try:
                info = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            if stat.S_ISLNK(info.st_mode):
                continue
            if stat.S_ISDIR(info.st_mode):
                # A negated glob prunes matching directories, as rg's `-g '!name'` does.
                if entry.name in skip_dirs or (negated and matcher is not None and matcher(rel)):
                    continue
                subdirs.append(rel)
                continue
            if not stat.S_ISREG(info.st_mode) or not glob_allows_file(rel, matcher, negated):
                continue
            if info.st_size > max_bytes:
                counts.too_large += 1
                continue
            yield rel
        stack.extend(reversed(subdirs))


def matching_lines(regex: re.Pattern[str], text: str) -> list[int]:
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    search = regex.search
    return [number for number, line in enumerate(lines, 1) if search(line) is not None]


def _emit(record: dict[str, object]) -> None:
    sys.stdout.write(json.dumps(record) + "\n")
    sys.stdout.flush()


def run_job(job: dict[str, object]) -> None:
    regex = re.compile(str(job["pattern"]))
    counts = WalkCounts()
    texts = job.get("texts") or {}
    assert isinstance(texts, dict)
    for rel in sorted(texts):
        found = matching_lines(regex, texts[rel])
        if found:
            _emit({"file": rel, "lines": found})
    if job.get("walk"):
        root = str(job["root"])
        matcher, negated = compile_glob(job.get("glob"))  # type: ignore[arg-type]
        skip = set(job.get("skip_dirs") or ())  # type: ignore[call-overload]
        exclude = set(job.get("exclude") or ())  # type: ignore[call-overload]
        max_bytes = int(job.get("max_bytes") or 2 * 1024 * 1024)  # type: ignore[call-overload]
        max_entries = int(job.get("max_entries") or DEFAULT_MAX_WALK_ENTRIES)  # type: ignore[call-overload]
        for rel in walk_files(root, matcher, negated, skip, counts, max_bytes, max_entries):
            if rel in exclude:
                continue
            try:
                with open(os.path.join(root, rel), "rb") as handle:
                    data = handle.read()
            except OSError:
                continue
            if b"\0" in data:
                counts.binary += 1
                continue
            found = matching_lines(regex, data.decode("utf-8", "surrogateescape"))
            if found:
                _emit({"file": rel, "lines": found})
    _emit({"done": True, **asdict(counts)})


def main() -> None:
    job = json.loads(sys.stdin.read())
    run_job(job)


if __name__ == "__main__":
    main()
