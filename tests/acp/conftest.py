"""The ACP tests share one pytest-xdist worker (`--dist loadgroup`), so only that worker imports
the ACP SDK (tests/acp/sdk.py says why the modules name it through there)."""

from __future__ import annotations

import pytest

ACP_GROUP = "acp"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if "tests/acp/" in item.nodeid.replace("\\", "/"):
            item.add_marker(pytest.mark.xdist_group(ACP_GROUP))
