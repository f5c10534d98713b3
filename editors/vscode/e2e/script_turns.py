"""Fake-provider script for the VS Code end-to-end run (called by run.mjs with the repo's Python).

Prints {"turns": [...], "uses": "apply_patch" | "edit_file", "expected": {...}} for the workspace
files run.mjs creates. The scripted model reads hello.py and patches one line with correct hashline
anchors (computed by lich_core.hashline), falling back to edit_file while the hashline tools are
not installed; then a slow turn for the cancel scenario.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

HELLO_PY = 'def greet(name):\n    return "Hello, " + name\n\n\nprint(greet("world"))\n'
HELLO_OLD_LINE = '    return "Hello, " + name'
HELLO_NEW_LINE = '    return f"Hello, {name}!"'
PATCH_ME_PY = "x = 1\ny = 2\nz = 3\n"
PATCH_ME_NEW_LINE = "y = 42"
PATCH_ME_CLIPBOARD_LINE = "z = 7"
SLOW_TURN_DELAY_S = 120.0
CODE_ACTION_ANSWER = "Explained: greet builds a greeting."
# The chat scenario (its own folder and provider): an answer, then a follow-up that edits.
CHAT_FIRST_ANSWER = "greet() joins the strings with +; an f-string would read better."
CHAT_SECOND_ANSWER = "Done: greet() uses an f-string now."


def builtin_tool_names() -> set[str]:
    from lich_core.tools.builtin import builtin_tools

    return {tool.name for tool in builtin_tools()}


def tool_properties(name: str) -> dict[str, Any]:
    from lich_core.tools.builtin import builtin_tools

    for tool in builtin_tools():
        if tool.name == name:
            return dict(tool.parameters.get("properties") or {})
    return {}


def anchor(text: str, line_no: int) -> str:
    from lich_core.hashline.anchors import line_hash, split_lines

    return f"{line_no}:{line_hash(split_lines(text)[line_no - 1])}"


def replace_line_patch(path: str, text: str, line_no: int, new_line: str) -> str:
    a = anchor(text, line_no)
    return f"@@ {path}\n= {a}..{a}\n~{new_line}\n"


def patch_arguments(patch: str) -> dict[str, Any]:
    # The tool's own schema names its payload field; "input" is the name lich.applyPatch uses.
    props = tool_properties("apply_patch")
    for key in ("input", "patch", "text"):
        if key in props:
            return {key: patch}
    return {"input": patch}


def read_arguments(path: str) -> dict[str, Any]:
    props = tool_properties("read_file")
    key = "path" if "path" in props or not props else next(iter(props))
    return {key: path}


def chat_turns() -> list[dict[str, Any]]:
    """Turn 1 answers in words; turn 2 (the follow-up) reads greet.py and patches line 2."""
    patch = replace_line_patch("greet.py", HELLO_PY, 2, HELLO_NEW_LINE)
    return [
        {"text": CHAT_FIRST_ANSWER, "chunks": 3},
        {
            "tool_calls": [
                {"name": "read_file", "arguments": read_arguments("greet.py"), "id": "c1"}
            ]
        },
        {"tool_calls": [{"name": "apply_patch", "arguments": patch_arguments(patch), "id": "c2"}]},
        {"text": CHAT_SECOND_ANSWER, "chunks": 2},
    ]


CHAT_REVIEW_COMMAND = "echo approved-in-chat"
CHAT_REVIEW_ANSWER = "Proposed: greet() uses an f-string; the change waits for your review."


def chat_review_turns() -> list[dict[str, Any]]:
    """The review-mode chat turn: a terminal call (asks approval), then read and patch greet.py
    (a pending hunk in review mode), then the answer."""
    patch = replace_line_patch("greet.py", HELLO_PY, 2, HELLO_NEW_LINE)
    return [
        {
            "tool_calls": [
                {"name": "terminal", "arguments": {"command": CHAT_REVIEW_COMMAND}, "id": "r1"}
            ]
        },
        {
            "tool_calls": [
                {"name": "read_file", "arguments": read_arguments("greet.py"), "id": "r2"}
            ]
        },
        {"tool_calls": [{"name": "apply_patch", "arguments": patch_arguments(patch), "id": "r3"}]},
        {"text": CHAT_REVIEW_ANSWER, "chunks": 2},
    ]


# The chat links scenario (issue #43): links in the model's text open only web pages and
# workspace files; an edit's Open file opens the file the server reported, whatever path the
# model named. Each link's label is its key.
CHAT_LINKS = {
    "x": "../../etc/passwd",
    "y": "file:///etc/passwd",
    "z": "command:workbench.action.quit",
    # Enough `..` to reach / from any scratch folder: /etc/passwd for sure.
    "deep": "../" * 12 + "etc/passwd",
    # A real file next to the workspace folder (run.mjs writes it).
    "sibling": "../outside-secret.txt",
    "notes": "docs/notes.md",
}
CHAT_LINKS_REFUSED = ["x", "y", "z", "deep", "sibling"]
CHAT_LINKS_FILES = {"greet.py": HELLO_PY, "docs/notes.md": "# Notes\n\nworkspace notes\n"}
CHAT_LINKS_OUTSIDE = "outside-secret.txt"
CHAT_LINKS_OUTSIDE_TEXT = "outside the workspace\n"
# The model names `file:///etc/passwd` as the path to write: the tool resolves it against the
# root (a relative path), so the file written is <root>/file:/etc/passwd, which the server reports.
CHAT_LINKS_WRITE_PATH = "file:///etc/passwd"
CHAT_LINKS_WRITTEN = "written by the agent, inside the workspace\n"
CHAT_LINKS_FIRST_ANSWER = "Links: " + ", ".join(
    f"[{label}]({target})" for label, target in CHAT_LINKS.items()
)
CHAT_LINKS_SECOND_ANSWER = f"Wrote it: [the file]({CHAT_LINKS_WRITE_PATH})."


def chat_links_turns() -> list[dict[str, Any]]:
    """Turn 1: an answer full of links; turn 2: write_file to a path the model chose."""
    return [
        {"text": CHAT_LINKS_FIRST_ANSWER},
        {
            "tool_calls": [
                {
                    "name": "write_file",
                    "arguments": {"path": CHAT_LINKS_WRITE_PATH, "content": CHAT_LINKS_WRITTEN},
                    "id": "w1",
                }
            ]
        },
        {"text": CHAT_LINKS_SECOND_ANSWER},
    ]


# The inline completion scenario: a FIM model that always completes `return ` with `a + b`.
FIM_FILE = "calc.py"
FIM_TEXT = "def add(a, b):\n"
FIM_TYPED = "    return "
FIM_SUGGESTION = "a + b"
# Every keystroke VS Code asks for may reach the model; enough answers for a slow typist.
FIM_ANSWERS = 200


def fim_turns() -> list[dict[str, Any]]:
    return [{"text": FIM_SUGGESTION} for _ in range(FIM_ANSWERS)]


def build() -> dict[str, Any]:
    names = builtin_tool_names()
    hashline = {"read_file", "apply_patch"} <= names
    turns: list[dict[str, Any]] = []
    if hashline:
        turns.append(
            {
                "tool_calls": [
                    {
                        "name": "read_file",
                        "arguments": read_arguments("hello.py"),
                        "id": "call_read",
                    }
                ]
            }
        )
        patch = replace_line_patch("hello.py", HELLO_PY, 2, HELLO_NEW_LINE)
        turns.append(
            {
                "tool_calls": [
                    {"name": "apply_patch", "arguments": patch_arguments(patch), "id": "call_patch"}
                ],
                "chunks": 3,
            }
        )
    else:
        turns.append(
            {
                "tool_calls": [
                    {
                        "name": "edit_file",
                        "arguments": {
                            "path": "hello.py",
                            "old_string": HELLO_OLD_LINE,
                            "new_string": HELLO_NEW_LINE,
                        },
                        "id": "call_edit",
                    }
                ]
            }
        )
    turns.append({"text": "Done: greet() now uses an f-string.", "chunks": 4})
    # Code action scenario: "Ask agent…" without a prompt; the extension asks for one.
    turns.append({"text": CODE_ACTION_ANSWER})
    # Cancel scenario: the model never answers in time.
    turns.append({"delay_s": SLOW_TURN_DELAY_S, "text": "(too late)"})
    return {
        "turns": turns,
        "uses": "apply_patch" if hashline else "edit_file",
        "files": {"hello.py": HELLO_PY, "patch_me.py": PATCH_ME_PY},
        "has_apply_patch": "apply_patch" in names,
        "user_patch": replace_line_patch("patch_me.py", PATCH_ME_PY, 2, PATCH_ME_NEW_LINE),
        # Applied after user_patch; line 3 is untouched by it, so its anchor still holds.
        "clipboard_patch": replace_line_patch(
            "patch_me.py", PATCH_ME_PY, 3, PATCH_ME_CLIPBOARD_LINE
        ),
        "code_action_answer": CODE_ACTION_ANSWER,
        "chat": {
            "files": {"greet.py": HELLO_PY},
            "first_answer": CHAT_FIRST_ANSWER,
            "second_answer": CHAT_SECOND_ANSWER,
            "old_line": HELLO_OLD_LINE,
            "new_line": HELLO_NEW_LINE,
            "review_answer": CHAT_REVIEW_ANSWER,
            "review_command": CHAT_REVIEW_COMMAND,
        },
        "chat_links": {
            "files": CHAT_LINKS_FILES,
            "links": CHAT_LINKS,
            "refused": CHAT_LINKS_REFUSED,
            "outside": CHAT_LINKS_OUTSIDE,
            "outside_text": CHAT_LINKS_OUTSIDE_TEXT,
            "write_path": CHAT_LINKS_WRITE_PATH,
            "written": CHAT_LINKS_WRITTEN,
            "first_answer_start": "Links: ",
        },
        "fim": {
            "file": FIM_FILE,
            "text": FIM_TEXT,
            "typed": FIM_TYPED,
            "suggestion": FIM_SUGGESTION,
        },
        "expected": {
            "hello.py": HELLO_NEW_LINE,
            "patch_me.py": PATCH_ME_NEW_LINE,
            "patch_me.py@clipboard": PATCH_ME_CLIPBOARD_LINE,
        },
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True, help="write the fake-provider turns here")
    parser.add_argument("--chat-out", help="write the chat scenario's provider turns here")
    parser.add_argument("--chat-review-out", help="write the review-mode chat turns here")
    parser.add_argument("--fim-out", help="write the completion model's answers here")
    parser.add_argument("--chat-links-out", help="write the chat links scenario's turns here")
    args = parser.parse_args(argv)
    plan = build()
    Path(args.out).write_text(json.dumps(plan["turns"], indent=1), encoding="utf-8")
    if args.chat_out:
        Path(args.chat_out).write_text(json.dumps(chat_turns(), indent=1), encoding="utf-8")
    if args.fim_out:
        Path(args.fim_out).write_text(json.dumps(fim_turns()), encoding="utf-8")
    if args.chat_links_out:
        Path(args.chat_links_out).write_text(
            json.dumps(chat_links_turns(), indent=1), encoding="utf-8"
        )
    if args.chat_review_out:
        Path(args.chat_review_out).write_text(
            json.dumps(chat_review_turns(), indent=1), encoding="utf-8"
        )
    json.dump({key: value for key, value in plan.items() if key != "turns"}, sys.stdout)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
