"""The editor tests (real Neovim, Emacs, code-server + Chromium) run one at a time: under
pytest-xdist they form one group (`--dist loadgroup`), so they share one worker while the other
workers take the rest of the suite. Each starts editors and servers that are heavy on a 2-core
machine; two at once would only make each slower."""

from __future__ import annotations

import pytest

from tests.support.xdist_groups import group_folder

EDITORS_GROUP = "editors"


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist's own hook reads the group marks
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    group_folder(items, "tests/editors/", EDITORS_GROUP)
