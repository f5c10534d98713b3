"""HTML to readable text for fetch_url: what a reader sees of a page, with its line structure.

Built on Beautiful Soup (`beautifulsoup4`, MIT) with the standard library's `html.parser`, so no
compiled parser is needed and malformed real-world HTML still parses (unclosed tags, stray end
tags, bad nesting).

What is kept and how:
- headings as `# Title` ... `###### Title` (the level of `<h1>`..`<h6>`), on their own line with a
  blank line around them;
- paragraphs, divisions, sections, block quotes, figures, ... as blocks separated by a blank line;
- list items as `- item` (`1. item` in an ordered list), nested lists indented by two spaces;
- definition lists: the term on its line, the definition indented;
- table rows as one line, cells joined by ` | `;
- `<pre>` blocks verbatim (their whitespace is the content); `<br>` as a line break, `<hr>` as
  `---`;
- links, emphasis, code spans and every other inline element: their text only;
- the document title (`<title>`) as the first line, when the page has one.

What is dropped: `<head>` (apart from the title), `<script>`, `<style>`, `<noscript>`,
`<template>`, `<svg>`, `<iframe>`, `<object>`, `<embed>`, `<canvas>`, media elements, `<select>`
options, `<button>` labels, form inputs, comments, doctype and processing instructions, elements
marked `hidden` or `aria-hidden="true"`, and headings' permalink anchors (a link whose whole text
is `¶`, `§` or `#`).

Whitespace inside a block collapses to one space (non-breaking spaces included); lines are
stripped and runs of blank lines become one.

The walk is iterative (no recursion), so a deeply nested page cannot exhaust the stack.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from bs4 import BeautifulSoup
from bs4.element import NavigableString, PageElement, PreformattedString, Tag

__all__ = ["html_to_text"]

# Elements whose whole subtree is not part of what a reader sees.
DROPPED_TAGS = frozenset(
    {
        "head",
        "script",
        "style",
        "noscript",
        "template",
        "svg",
        "iframe",
        "object",
        "embed",
        "canvas",
        "select",
        "button",
        "input",
        "textarea",
        "datalist",
        "dialog",
        "map",
        "audio",
        "video",
        "source",
        "track",
        "picture",
        "link",
        "meta",
    }
)
HEADINGS = {"h1": 1, "h2": 2, "h3": 3, "h4": 4, "h5": 5, "h6": 6}
# Blocks separated from their neighbours by a blank line.
PARAGRAPH_TAGS = frozenset(
    {
        "p",
        "blockquote",
        "figure",
        "figcaption",
        "table",
        "pre",
        "address",
        "details",
        "fieldset",
        "form",
        "ul",
        "ol",
        "dl",
        "hr",
    }
)
# Blocks that start and end a line (no blank line of their own).
LINE_TAGS = frozenset(
    {
        "div",
        "section",
        "article",
        "header",
        "footer",
        "nav",
        "main",
        "aside",
        "body",
        "html",
        "li",
        "dt",
        "dd",
        "tr",
        "caption",
        "summary",
        "legend",
        "center",
        "hgroup",
        "search",
        "thead",
        "tbody",
        "tfoot",
        "label",
        "option",
        "optgroup",
        "menu",
    }
)
CELL_TAGS = frozenset({"td", "th"})
# A link whose whole text is one of these is a heading's permalink anchor (Sphinx, MkDocs, ...).
PERMALINK_MARKS = frozenset({"¶", "§", "#", "🔗"})
LIST_TAGS = frozenset({"ul", "ol", "menu"})
_SPACE_RE = re.compile(r"\s+")
_INDENT = "  "


def _hidden(tag: Tag) -> bool:
    if tag.name in DROPPED_TAGS:
        return True
    if tag.name == "a" and tag.get_text().strip() in PERMALINK_MARKS:
        return True
    attrs = tag.attrs or {}
    if "hidden" in attrs:
        return True
    return str(attrs.get("aria-hidden", "")).strip().lower() == "true"


class _Writer:
    """Collects lines: inline text is gathered into the current line, blocks break it."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self._parts: list[str] = []
        self._prefix = ""  # what the current line starts with (list marker, heading hashes)
        self.indent = 0
        self.blank_pending = False
        self.in_item = 0  # open list items and definitions: their paragraphs are lines, not blocks

    def text(self, text: str) -> None:
        self._parts.append(text)

    def has_text(self) -> bool:
        return any(part.strip() for part in self._parts)

    def set_prefix(self, prefix: str) -> None:
        self.flush()
        self._prefix = prefix

    def flush(self) -> None:
        """End the current line (if it holds text)."""
        line = _SPACE_RE.sub(" ", "".join(self._parts)).strip()
        self._parts = []
        if not line:
            return  # nothing written yet: a list marker or heading prefix waits for its text
        prefix, self._prefix = self._prefix, ""
        if self.blank_pending and self.lines and self.lines[-1] != "":
            self.lines.append("")
        self.blank_pending = False
        self.lines.append(_INDENT * self.indent + prefix + line)

    def verbatim(self, text: str) -> None:
        """A preformatted block: its lines as they are (trailing whitespace dropped)."""
        self.flush()
        rows = text.strip("\n").split("\n")
        if not any(row.strip() for row in rows):
            return
        if self.lines and self.lines[-1] != "":
            self.lines.append("")
        pad = _INDENT * self.indent
        self.lines.extend(pad + row.rstrip() if row.strip() else "" for row in rows)
        self.blank_pending = True

    def paragraph_break(self) -> None:
        self.flush()
        if not self.in_item:
            self.blank_pending = True

    def result(self) -> str:
        self.flush()
        lines: list[str] = []
        for line in self.lines:
            if line == "" and (not lines or lines[-1] == ""):
                continue
            lines.append(line)
        while lines and lines[-1] == "":
            lines.pop()
        return "\n".join(lines)


def _pre_text(tag: Tag) -> str:
    """The text of a <pre> block, <br> as newlines, dropped elements left out."""
    parts: list[str] = []
    for node in _walk(tag):
        if isinstance(node, Tag):
            if node.name == "br":
                parts.append("\n")
        elif type(node) is NavigableString:
            parts.append(str(node))
    return "".join(parts)


def _walk(root: Tag) -> Iterator[PageElement]:
    """root's visible descendants in document order (dropped subtrees skipped)."""
    stack: list[PageElement] = list(reversed(list(root.children)))
    while stack:
        node = stack.pop()
        if isinstance(node, Tag):
            if _hidden(node):
                continue
            yield node
            stack.extend(reversed(list(node.children)))
        else:
            yield node


def _convert(root: Tag, writer: _Writer) -> None:
    # (node, entering) pairs; a tag is visited again after its children to close its block.
    stack: list[tuple[PageElement, bool]] = [
        (child, True) for child in reversed(list(root.children))
    ]
    ordinal: list[int] = []  # item numbers of the open ordered lists (0: an unordered list)
    while stack:
        node, entering = stack.pop()
        if not isinstance(node, Tag):
            if isinstance(node, PreformattedString):  # comments, doctype, CDATA, PIs
                continue
            if isinstance(node, NavigableString):
                writer.text(str(node))
            continue
        name = node.name
        if entering:
            if _hidden(node):
                continue
            if name == "pre":
                writer.verbatim(_pre_text(node))
                continue
            if name == "br":
                writer.flush()
                continue
            if name == "hr":
                writer.paragraph_break()
                writer.text("---")
                writer.paragraph_break()
                continue
            if name in HEADINGS:
                writer.paragraph_break()
                writer.set_prefix("#" * HEADINGS[name] + " ")
            elif name in LIST_TAGS:
                if ordinal:  # a nested list: indent it under its item
                    writer.flush()
                    writer.indent += 1
                else:
                    writer.paragraph_break()
                ordinal.append(1 if name == "ol" else 0)
            elif name == "li":
                if ordinal and ordinal[-1]:
                    writer.set_prefix(f"{ordinal[-1]}. ")
                    ordinal[-1] += 1
                else:
                    writer.set_prefix("- ")
                writer.in_item += 1
            elif name in ("dt", "dd"):
                writer.flush()
                writer.indent += name == "dd"
                writer.in_item += 1
            elif name in CELL_TAGS:
                if writer.has_text():  # a row starts a line: any text before is an earlier cell
                    writer.text(" | ")
            elif name in PARAGRAPH_TAGS:
                writer.paragraph_break()
            elif name in LINE_TAGS:
                writer.flush()
            stack.append((node, False))
            stack.extend((child, True) for child in reversed(list(node.children)))
            continue
        # leaving a tag
        if name in HEADINGS:
            writer.paragraph_break()
        elif name in LIST_TAGS:
            writer.flush()
            ordinal.pop()
            if ordinal:
                writer.indent -= 1
            else:
                writer.blank_pending = True
        elif name in ("li", "dt", "dd"):
            writer.flush()
            writer.indent -= name == "dd"
            writer.in_item -= 1
        elif name in PARAGRAPH_TAGS:
            writer.paragraph_break()
        elif name in LINE_TAGS:
            writer.flush()
        elif name in CELL_TAGS:
            writer.text(" ")


def html_to_text(html: str) -> str:
    """The readable text of an HTML document (see the module docstring for the rules)."""
    soup = BeautifulSoup(html, "html.parser")
    writer = _Writer()
    title_tag = soup.find("title")
    title = _SPACE_RE.sub(" ", title_tag.get_text()).strip() if title_tag is not None else ""
    if title:
        writer.text(title)
        writer.paragraph_break()
    _convert(soup, writer)
    text = writer.result()
    if title and text.startswith(f"{title}\n\n# {title}"):
        text = text[len(title) + 2 :]  # the title repeats the first heading: say it once
    return text
