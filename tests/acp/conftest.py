"""The ACP tests share one pytest-xdist worker (`--dist loadgroup`), so only that worker imports
the ACP SDK (tests/acp/sdk.py says why the modules name it through there)."""

from __future__ import annotations

import pytest

from tests.support.xdist_groups import group_folder

ACP_GROUP = "acp"


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist's own hook reads the group marks
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    group_folder(items, "tests/acp/", ACP_GROUP)
