"""Pytest fixtures shared across test folders (loaded by tests/conftest.py via pytest_plugins)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.fake_provider import FakeProviderServer


@pytest.fixture
def fake_provider() -> Iterator[FakeProviderServer]:
    """A started fake model server; script turns with `fake_provider.script(...)`."""
    server = FakeProviderServer()
    server.start()
    try:
        yield server
    finally:
        server.stop()
