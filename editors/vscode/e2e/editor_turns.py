"""Fake-provider scripts for the VS Code editor-side end-to-end run (editor.mjs, issue #45).

Prints {"notify": {...}, "review": {...}} with each scenario's turns, files and expected text.
The patches carry correct hashline anchors (script_turns.py's helpers, lich_core.hashline).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from script_turns import (  # noqa: E402 - the sibling script, found through the path above
    HELLO_NEW_LINE,
    HELLO_OLD_LINE,
    HELLO_PY,
    patch_arguments,
    read_arguments,
    replace_line_patch,
)

# A code action's task, then a chat turn on its thread.
NOTIFY_ANSWER = "Explained: greet() builds a greeting with +."
NOTIFY_ANSWER_MORE = "It joins three strings; an f-string would read better."
CHAT_ANSWER = "Chat answer: yes, that is all it does."
REVIEW_ANSWER = "Proposed: greet() uses an f-string; it waits for your review."


def notify() -> dict[str, Any]:
    return {
        "turns": [
            {"text": f"{NOTIFY_ANSWER}\n\n{NOTIFY_ANSWER_MORE}"},
            {"text": CHAT_ANSWER},
        ],
        "files": {"hello.py": HELLO_PY},
        "answer": NOTIFY_ANSWER,
        "chat_answer": CHAT_ANSWER,
    }


def review() -> dict[str, Any]:
    patch = replace_line_patch("hello.py", HELLO_PY, 2, HELLO_NEW_LINE)
    return {
        "turns": [
            {
                "tool_calls": [
                    {"name": "read_file", "arguments": read_arguments("hello.py"), "id": "v1"}
                ]
            },
            {
                "tool_calls": [
                    {"name": "apply_patch", "arguments": patch_arguments(patch), "id": "v2"}
                ]
            },
            {"text": REVIEW_ANSWER},
        ],
        "files": {"hello.py": HELLO_PY},
        "old_line": HELLO_OLD_LINE,
        "new_line": HELLO_NEW_LINE,
    }


def main() -> None:
    out = Path(sys.argv[1])
    plan = {"notify": notify(), "review": review()}
    for name, scenario in plan.items():
        turns_file = out / f"{name}-turns.json"
        turns_file.write_text(json.dumps(scenario["turns"]), encoding="utf-8")
        scenario["turns_file"] = str(turns_file)
    print(json.dumps(plan))


if __name__ == "__main__":
    main()
