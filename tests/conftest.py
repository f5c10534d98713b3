"""Shared pytest setup: the fake provider fixtures and a clean environment for every test."""

from __future__ import annotations

import importlib.util

import pytest

# The fake provider server (real HTTP on 127.0.0.1) is used across test folders.
pytest_plugins = ["tests.support.fixtures"] if importlib.util.find_spec("tests.support.fixtures") else []


@pytest.fixture(autouse=True)
def _isolated_user_config(tmp_path_factory, monkeypatch):
    """Keep the developer's own ~/.config/lich and provider keys out of every test."""
    home = tmp_path_factory.mktemp("xdg")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home))
    for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "LICH_PROVIDER_KIND", "LICH_BASE_URL", "LICH_MODEL"):
        monkeypatch.delenv(name, raising=False)
