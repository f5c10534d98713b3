"""Fixtures for the agent tests; the helpers themselves live in agent_helpers.py."""

from __future__ import annotations

import os
import sys

import pytest

# The helper modules sit beside the tests (no __init__.py here, by convention); make them
# importable whatever import mode pytest runs in.
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from agent_helpers import EventLog, RecordingTools  # noqa: E402


@pytest.fixture
def tools() -> RecordingTools:
    return RecordingTools()


@pytest.fixture
def events() -> EventLog:
    return EventLog()
