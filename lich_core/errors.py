"""Exceptions that carry a model-readable, prefixed error string.

Tools raise these internally; `capture_errors` and the executor turn them into
`ToolResult(ok=False, error=str(exc))`, so the prefix is what the model sees.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable


class ToolError(Exception):
    """A tool failure whose message already starts with a stable prefix (`not_found: ...`)."""


class ToolTimeoutError(ToolError):
    def __init__(self, label: str, timeout_ms: int) -> None:
        super().__init__(f"timeout: {label} exceeded {timeout_ms}ms")
        self.timeout_ms = timeout_ms


class ToolCancelledError(ToolError):
    """The caller cancelled the call; the model sees exactly `cancelled`."""

    def __init__(self) -> None:
        super().__init__("cancelled")


class EditRejected(ToolError):
    """The workspace refused a change (stale document, client said no, I/O failure).

    Nothing of the change set was written.
    """

    def __init__(self, reason: str) -> None:
        super().__init__(f"edit_rejected: {reason}")
        self.reason = reason


class ConfigError(Exception):
    """A bad configuration value; the message names the key."""


# How alike a wrong word must be to a known one to be offered as what was meant ("provider" and
# "providers" score 0.94, "baseurl" and "base_url" 0.93, "tools" and "tools_enabled" 0.56).
CLOSE_MATCH_CUTOFF = 0.75


def close_match(word: object, known: Iterable[str]) -> str | None:
    """The known word `word` most likely misspells (case aside), or None."""
    if not isinstance(word, str):
        return None
    by_lower = {name.lower(): name for name in known}
    found = difflib.get_close_matches(word.lower(), list(by_lower), n=1, cutoff=CLOSE_MATCH_CUTOFF)
    return by_lower[found[0]] if found else None


def did_you_mean(word: object, known: Iterable[str]) -> str:
    """`; did you mean 'x'?`, or nothing: the end of a message about a wrong word."""
    match = close_match(word, known)
    return f"; did you mean {match!r}?" if match else ""
