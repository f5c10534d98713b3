"""Showing configuration values: secrets masked (`lich config`, the server's status)."""

from __future__ import annotations

from typing import Any

from lich_core.tools.secrets import is_secret_name as tool_secret_name


def is_secret_name(name: str) -> bool:
    """The tools' secret rule (lich_core.tools.secrets), except that `*_env` names a variable, not a secret."""
    if name.lower().endswith("_env"):
        return False
    return tool_secret_name(name)


def mask_secrets(value: Any) -> Any:
    """Copy of a config value with secret-looking fields masked, for display."""
    if isinstance(value, dict):
        return {
            key: (
                f"<redacted: {len(str(item))} chars>"
                if is_secret_name(key) and isinstance(item, str)
                else mask_secrets(item)
            )
            for key, item in value.items()
        }
    if isinstance(value, list):
        return [mask_secrets(item) for item in value]
    return value
