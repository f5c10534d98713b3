"""One pytest-xdist group per test folder (`--dist loadgroup` sends a group to one worker)."""

from __future__ import annotations

import pytest


def group_folder(items: list[pytest.Item], folder: str, group: str) -> None:
    """Mark every collected test under `folder` (e.g. "tests/mcp/") as part of `group`.

    A conftest's pytest_collection_modifyitems sees the whole session's items, not its folder's.
    Its hook must be `tryfirst`: pytest-xdist turns the marks into the group its scheduler reads
    in its own pytest_collection_modifyitems, and without `tryfirst` whether ours runs first
    depends on when the conftest happens to be loaded (tests/suite/test_grouping.py).
    """
    for item in items:
        if folder in item.nodeid.replace("\\", "/"):
            item.add_marker(pytest.mark.xdist_group(group))
