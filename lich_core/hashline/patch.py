"""The hashline patch grammar: text → typed sections and ops.

    @@ PATH              section header (one or more per patch)
    + LINE:HH            insert the payload after the anchored line
    +                    insert the payload at the end of the file
    < LINE:HH            insert the payload before the anchored line
    <                    insert the payload at the beginning of the file
    - A:HH..B:HH         delete the inclusive range (no payload)
    = A:HH..B:HH         replace the range with the payload (no payload deletes it)
    ~text                one payload line, verbatim after the "~"

Markers sit in column 1. A `|` copied onto an anchor from a rendered row (`12:ab|`) is
tolerated, and so is a single anchor for a one-line range (`- 4:1f`). Every error quotes the
offending patch line and says how to fix it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

from lich_core.vocabulary import ToolError

OpKind = Literal["insert_after", "insert_before", "delete", "replace"]

PATCH_SYNTAX_PREFIX = "patch_syntax"

# `12:ab`, optionally followed by a `|` and whatever a copied row carried after it.
_ANCHOR = r"(\d+):([0-9A-Fa-f]{2})(?![0-9A-Za-z])\|?"
_ANCHOR_RE = re.compile(rf"^{_ANCHOR}.*$", re.DOTALL)
_RANGE_RE = re.compile(rf"^{_ANCHOR}[^.]*?\.\.\s*{_ANCHOR}.*$", re.DOTALL)
# A single anchor followed by the rest of a copied row: `12:ab|content`.
_COPIED_ROW_RE = re.compile(r"^\d+:[0-9A-Fa-f]{2}\|")
_OP_MARKERS = "+<-="
# A line that looks like an op with a marker we do not know: `* 12:ab`, `> 3:00..4:11`, `! 5:ab`.
_UNKNOWN_OP_RE = re.compile(r"^[^\w\s~@]\s+\d+:")
_MAX_QUOTE_CHARS = 120


class PatchSyntaxError(ToolError):
    def __init__(self, line_number: int, line: str, problem: str) -> None:
        self.line_number = line_number
        self.line = line
        self.problem = problem
        super().__init__(
            f"{PATCH_SYNTAX_PREFIX}: patch line {line_number}: {quote(line)}: {problem}"
        )


@dataclass(frozen=True)
class Anchor:
    line: int
    digest: str

    def __str__(self) -> str:
        return f"{self.line}:{self.digest}"


@dataclass
class PatchOp:
    kind: OpKind
    # insert_after/insert_before: `start` is the anchor (None for bare `+` / `<`).
    # delete/replace: the inclusive range start..end.
    start: Anchor | None
    end: Anchor | None
    payload: list[str] = field(default_factory=list)
    patch_line: int = 0
    source: str = ""

    @property
    def is_range(self) -> bool:
        return self.kind in ("delete", "replace")

    def span_text(self) -> str:
        if self.is_range:
            assert self.start is not None and self.end is not None
            return f"{self.start}..{self.end}"
        if self.start is None:
            return "end of file" if self.kind == "insert_after" else "beginning of file"
        return str(self.start)


@dataclass
class PatchSection:
    path: str
    header_line: int
    ops: list[PatchOp] = field(default_factory=list)


def quote(line: str) -> str:
    shown = line if len(line) <= _MAX_QUOTE_CHARS else line[:_MAX_QUOTE_CHARS] + "..."
    return "`" + shown.replace("`", "'") + "`"


def _parse_anchor(text: str) -> Anchor | None:
    match = _ANCHOR_RE.match(text.strip())
    if match is None:
        return None
    return Anchor(int(match.group(1)), match.group(2).lower())


def _parse_range(text: str) -> tuple[Anchor, Anchor] | None:
    text = text.strip()
    match = _RANGE_RE.match(text)
    if match is not None:
        return (
            Anchor(int(match.group(1)), match.group(2).lower()),
            Anchor(int(match.group(3)), match.group(4).lower()),
        )
    if ".." in text and _COPIED_ROW_RE.match(text) is None:
        return None  # a range with a bad half (a copied row's content may hold "..")
    single = _parse_anchor(text)
    return (single, single) if single is not None else None


def _parse_op(line: str, number: int) -> PatchOp:
    marker, rest = line[0], line[1:]
    if rest and not rest[0].isspace() and _parse_range(rest) is None:
        # `+foo` is a diff-style payload line, not an op.
        raise PatchSyntaxError(
            number,
            line,
            f"payload lines must start with `~` (write `~{rest}`); an op is `{marker} LINE:HH`",
        )
    if marker in "+<":
        kind: OpKind = "insert_after" if marker == "+" else "insert_before"
        if not rest.strip():
            return PatchOp(kind, None, None, patch_line=number, source=line)
        anchor = _parse_anchor(rest)
        if anchor is None:
            raise PatchSyntaxError(
                number,
                line,
                f"malformed anchor; write `{marker} LINE:HH` with the line number and two hex digits from a read, or a bare `{marker}`",
            )
        return PatchOp(kind, anchor, None, patch_line=number, source=line)
    kind = "delete" if marker == "-" else "replace"
    if not rest.strip():
        raise PatchSyntaxError(number, line, f"`{marker}` needs a range: `{marker} A:HH..B:HH`")
    span = _parse_range(rest)
    if span is None:
        raise PatchSyntaxError(
            number, line, f"malformed range; write `{marker} A:HH..B:HH` with anchors from a read"
        )
    start, end = span
    if start.line > end.line:
        raise PatchSyntaxError(
            number,
            line,
            f"reversed range: {start.line} comes after {end.line}; write the lower line first",
        )
    return PatchOp(kind, start, end, patch_line=number, source=line)


def parse_patch(text: str) -> list[PatchSection]:
    """Parse a patch; raise PatchSyntaxError quoting the first bad line."""
    lines = text.split("\n")
    # A trailing "\r" is a transport artefact (CRLF input), never payload: CRLF files get their
    # "\r" back from the file's own line-ending style.
    lines = [line[:-1] if line.endswith("\r") else line for line in lines]
    while lines and lines[-1].strip() == "":
        lines.pop()
    sections: list[PatchSection] = []
    current_op: PatchOp | None = None
    for index, line in enumerate(lines):
        number = index + 1
        if line.startswith("@@"):
            path = line[2:].strip()
            if path.endswith("@@"):  # tolerate a unified-diff style `@@ PATH @@`
                path = path[:-2].strip()
            if not path:
                raise PatchSyntaxError(number, line, "a section header needs a path: `@@ PATH`")
            sections.append(PatchSection(path, number))
            current_op = None
            continue
        if line.startswith("~"):
            if current_op is None:
                raise PatchSyntaxError(
                    number, line, "payload line outside an op; put it after a `+`, `<` or `=` op"
                )
            if current_op.kind == "delete":
                raise PatchSyntaxError(
                    number,
                    line,
                    f"no payload on a delete (`- {current_op.span_text()}`); use `= A:HH..B:HH` to replace lines",
                )
            current_op.payload.append(line[1:])
            continue
        if line and line[0] in _OP_MARKERS:
            if not sections:
                raise PatchSyntaxError(number, line, "ops must follow a `@@ PATH` section header")
            current_op = _parse_op(line, number)
            sections[-1].ops.append(current_op)
            continue
        if line.strip() == "":
            following = next((later for later in lines[index + 1 :] if later.strip()), "")
            if following.startswith("@@"):
                continue  # blank lines between sections
            raise PatchSyntaxError(
                number, line, "blank line inside a section; an empty payload line is written `~`"
            )
        stripped = line.lstrip()
        if stripped[:1] in _OP_MARKERS + "~@" and stripped != line:
            raise PatchSyntaxError(
                number, line, "markers must start in column 1; remove the leading whitespace"
            )
        if _UNKNOWN_OP_RE.match(line):
            raise PatchSyntaxError(
                number,
                line,
                f"unknown op `{line[0]}`; ops are `+`, `<`, `-`, `=` (payload lines start with `~`)",
            )
        raise PatchSyntaxError(number, line, f"payload lines must start with `~` (write `~{line}`)")
    if not sections:
        raise PatchSyntaxError(
            1, lines[0] if lines else "", "a patch starts with a `@@ PATH` section header"
        )
    for section in sections:
        if not section.ops:
            raise PatchSyntaxError(section.header_line, f"@@ {section.path}", "section has no ops")
        for op in section.ops:
            if op.kind in ("insert_after", "insert_before") and not op.payload:
                raise PatchSyntaxError(
                    op.patch_line, op.source, "insert without payload; add `~text` lines after it"
                )
    return sections
