"""Make the shared fixtures available even when tests/conftest.py does not load them yet."""

from tests.support.fixtures import fake_provider  # noqa: F401
