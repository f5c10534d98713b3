"""Exceptions that carry a model-readable, prefixed error string.

Tools raise these internally; `capture_errors` and the executor turn them into
`ToolResult(ok=False, error=str(exc))`, so the prefix is what the model sees.
"""

from __future__ import annotations


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
