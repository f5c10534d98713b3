"""Fixtures for the language-server tests.

`editor`: an EditorSession in this process against the in-memory FakeEditor (tests/lsp/fake_editor.py),
for the LSP behaviours (milliseconds per test). `session`: a real `python -m lich_lsp` over stdio
against the pytest-lsp test editor (lsp_harness.py), for the wire: the smoke tests per client
profile and what only the protocol layer does (framing, malformed messages, $/cancelRequest).
"""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

# The helper module sits beside the tests (no __init__.py here); importable in any import mode.
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from fake_editor import FakeEditor  # noqa: E402
from lsp_harness import CLIENTS, EditorClient, start_session, stop_session  # noqa: E402

Session = Callable[..., Awaitable[EditorClient]]


@pytest.fixture(params=CLIENTS)
def client_name(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture
def root(tmp_path: Path) -> Path:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    return workspace.resolve()


@pytest_asyncio.fixture
async def session(root: Path) -> AsyncIterator[Session]:
    """`await session(client_name, **options)` starts a server for this test; all stop at the end."""
    clients: list[EditorClient] = []

    async def start(client_name: str = "visual-studio-code", **options: Any) -> EditorClient:
        client = await start_session(options.pop("root", root), client_name, **options)
        clients.append(client)
        return client

    yield start
    for client in clients:
        await stop_session(client)
        assert not client.failures, client.failures


Editor = Callable[..., Awaitable[FakeEditor]]


@pytest_asyncio.fixture
async def editor(root: Path) -> AsyncIterator[Editor]:
    """`await editor(client_name, **options)`: a session in this process behind a FakeEditor that
    declares `client_name`'s capabilities (options as FakeEditor.start); all stop at the end."""
    editors: list[FakeEditor] = []

    async def start(client_name: str = "visual-studio-code", **options: Any) -> FakeEditor:
        fake = FakeEditor()
        editors.append(fake)
        await fake.start(options.pop("root", root), client_name, **options)
        return fake

    yield start
    for fake in editors:
        await fake.stop()
    for fake in editors:
        assert not fake.failures, fake.failures


SHORT_CANCEL_GRACE_MS = 300


@pytest.fixture
def short_cancel_grace(monkeypatch: pytest.MonkeyPatch) -> float:
    """A 0.3 s tool grace (CANCEL_GRACE_MS) and the hard stop its margin past it, for tests that
    wait through a cancelled tool's grace; returns the grace in seconds. The real values are
    pinned by test_the_hard_stop_is_not_shorter_than_the_tool_grace."""
    from lich_core.tools import guard
    from lich_lsp import tasks

    monkeypatch.setattr(guard, "CANCEL_GRACE_MS", SHORT_CANCEL_GRACE_MS)
    monkeypatch.setattr(
        tasks, "CANCEL_HARD_STOP_S", SHORT_CANCEL_GRACE_MS / 1000 + tasks.HARD_STOP_MARGIN_S
    )
    return SHORT_CANCEL_GRACE_MS / 1000
