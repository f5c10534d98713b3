"""One table of error codes (lich_core/error_codes.py): every `prefix: ` lich's code starts an
error string with is in the table, and every entry of the table is documented on a docs page."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from lich_core.config import KEYS
from lich_core.error_codes import ERROR_CODES
from lich_core.tools.builtin import register_builtin_tools
from lich_core.tools.registry import ToolRegistry

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("lich_core", "lich_acp", "lich_cli", "lich_lsp")
PREFIX_RE = re.compile(r"^([a-z][a-z_]+): ")
# Strings that start like a prefix and are no error code: a name followed by what it says
# (config keys in ConfigError messages and tool names are excluded separately).
NOT_CODES = {
    "lich",
    "lich_core",
    "lich_lsp",
    "lich_acp",  # user-facing messages and the package names
    "apply",
    "ask",
    "final",  # KEYS docs and an event field's docs listing values
    "assistant",
    "review",
    "error",
    "failed",
    "filter",
    "began",
    "ended",  # transcript, log and progress lines
    "note",  # an extra line of a tool's output
    "usage",
    "mcp",  # the CLI's help and its `lich mcp` usage error
    "headers_env",  # names the MCP entry's field in an mcp_unavailable attach error
    "rg",  # ripgrep's own stderr lines
    "render_rows",  # a ValueError naming the function (a bug, never shown to a model)
    # lich_lsp.review_hunks strips it from a review note written by older versions; nothing emits it now.
    "review_unavailable",
}


def _docstrings(tree: ast.AST) -> set[int]:
    found = set()
    for node in ast.walk(tree):
        if (
            isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
            and node.body
        ):
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                found.add(id(first.value))
    return found


def prefixes_in(source: str, path: str) -> dict[str, str]:
    """{prefix: where} for each string literal (or f-string head) that starts with `word: `,
    docstrings aside."""
    tree = ast.parse(source, filename=path)
    docstrings = _docstrings(tree)
    found: dict[str, str] = {}
    for node in ast.walk(tree):
        text = None
        if (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and id(node) not in docstrings
        ):
            text = node.value
        elif (
            isinstance(node, ast.JoinedStr)
            and node.values
            and isinstance(node.values[0], ast.Constant)
        ):
            text = node.values[0].value
        match = PREFIX_RE.match(text) if isinstance(text, str) else None
        if match:
            found.setdefault(match.group(1), f"{path}:{node.lineno}")
    return found


def test_the_scan_finds_prefixes_and_skips_docstrings() -> None:
    source = '"""made_up: a docstring"""\nx = f"not_found: {p}"\ny = "stale_anchor: re-read"\nz = "plain text"\n'
    assert set(prefixes_in(source, "x.py")) == {"not_found", "stale_anchor"}


def test_every_prefix_in_the_code_is_in_the_table() -> None:
    tools = set(register_builtin_tools(ToolRegistry()).names())
    unknown = []
    for package in PACKAGES:
        for file in sorted((ROOT / package).rglob("*.py")):
            relative = file.relative_to(ROOT).as_posix()
            if (
                relative.startswith("lich_cli/demo/sample/")
                or relative == "lich_core/error_codes.py"
            ):
                continue  # the demo's sample project (data, not lich); the table's own meanings
            for prefix, where in prefixes_in(file.read_text(encoding="utf-8"), relative).items():
                if (
                    prefix in ERROR_CODES
                    or prefix in NOT_CODES
                    or prefix in KEYS
                    or prefix in tools
                ):
                    continue
                unknown.append(f"{where}: {prefix}:")
    assert not unknown, "add these to lich_core/error_codes.py (and document them):\n" + "\n".join(
        unknown
    )


def test_every_code_in_the_table_is_documented() -> None:
    docs = "\n".join(
        page.read_text(encoding="utf-8") for page in sorted((ROOT / "docs").rglob("*.md"))
    )
    missing = [
        code
        for code in ERROR_CODES
        if not re.search(rf"(?<![a-z_]){re.escape(code)}(?=[:` ])", docs)
    ]
    assert not missing, f"document these error codes on the page that owns them: {missing}"


def test_every_entry_has_a_one_line_meaning() -> None:
    for code, meaning in ERROR_CODES.items():
        assert re.fullmatch(r"[a-z][a-z_]+", code), code
        assert meaning and "\n" not in meaning, code
    assert not set(ERROR_CODES) & NOT_CODES
