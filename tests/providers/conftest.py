"""Fixtures for the provider tests (`fake_provider` comes from tests.support.fixtures)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from lich_core.providers.http import HttpModel
from tests.support.fake_provider import FakeProviderServer
from tests.support.provider_helpers import SleepRecorder, make_model


@pytest.fixture
def sleeps() -> SleepRecorder:
    return SleepRecorder()


@pytest.fixture
def model_for(fake_provider: FakeProviderServer) -> Callable[..., HttpModel]:
    def build(kind: str, **kwargs: Any) -> HttpModel:
        return make_model(kind, fake_provider, **kwargs)

    return build
