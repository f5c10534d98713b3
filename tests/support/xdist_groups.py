"""One pytest-xdist group per test folder (`--dist loadgroup` sends a group to one worker)."""

from __future__ import annotations

import pytest


def group_folder(items: list[pytest.Item], folder: str, group: str) -> None:
    """Mark every collected test under `folder` (e.g. "tests/mcp/") as part of `group`.

    A conftest's pytest_collection_modifyitems sees the whole session's items, not its folder's.
    """
    for item in items:
        if folder in item.nodeid.replace("\\", "/"):
            item.add_marker(pytest.mark.xdist_group(group))
