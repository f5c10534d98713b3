"""Shared pytest setup: the fake provider fixtures and a clean environment for every test."""

from __future__ import annotations

import gc
import importlib.util
import os
import tempfile
from pathlib import Path

import pytest

# The fake provider server (real HTTP on 127.0.0.1) is used across test folders.
pytest_plugins = (
    ["tests.support.fixtures"] if importlib.util.find_spec("tests.support.fixtures") else []
)


def pytest_configure(config: pytest.Config) -> None:
    """Under xdist, the controller starts the one zygote every worker forks its servers from
    (tests/support/prefork.py), before the workers start: they inherit its socket's path."""
    if getattr(config.option, "numprocesses", None) and "PYTEST_XDIST_WORKER" not in os.environ:
        from tests.support import prefork

        prefork.share_with_workers()


def pytest_collection_finish(session: pytest.Session) -> None:
    """Freeze what collection made (every test module and what they import) out of the collector's
    generations: it lives for the whole run, and each full collection would walk it again
    (lich_core.startup does the same for the programs)."""
    gc.freeze()


# Under xdist: the workers each group's tests ran on (tests/support/xdist_groups.py), for the log.
_GROUP_WORKERS: dict[str, set[str]] = {}


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """On the xdist controller, note which worker ran a test of a group (its node id ends `@group`)."""
    node = getattr(report, "node", None)
    # pytest-xdist appends `@group` after the whole id; an `@` inside [params] is not one.
    _, at, group = report.nodeid.rpartition("@")
    if node is not None and at and group and "]" not in group and report.when == "call":
        _GROUP_WORKERS.setdefault(group, set()).add(node.gateway.id)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """One line per xdist group: the workers its tests ran on (one, when the grouping holds)."""
    for group, workers in sorted(_GROUP_WORKERS.items()):
        terminalreporter.write_line(
            f"xdist group {group}: ran on {len(workers)} worker(s) ({', '.join(sorted(workers))})"
        )


@pytest.fixture(scope="session")
def _homes(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("homes")


@pytest.fixture(autouse=True)
def _isolated_user_config(_homes: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Keep the developer's own ~/.config/lich, shell profile and provider keys out of every test.

    HOME matters beyond config: `terminal` runs `bash -lc`, and a login profile that does slow or
    lock-taking work (pyenv's rehash takes a lock file that a killed process group leaves behind)
    would make every later command in the suite wait on it.
    """
    # mkdtemp, not tmp_path_factory.mktemp: that one lists the whole base directory to number
    # the new one, and a directory per test made the suite's homes quadratic (~1 s a worker).
    home = Path(tempfile.mkdtemp(prefix="home", dir=_homes))
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    # Trust records, "allow always" answers, sessions and transcripts live here.
    monkeypatch.setenv("XDG_STATE_HOME", str(home / ".local" / "state"))
    for name in (
        "OPENAI_API_KEY",
        "ANTHROPIC_API_KEY",
        "LICH_PROVIDER_KIND",
        "LICH_BASE_URL",
        "LICH_MODEL",
        "LICH_WORK_DIR",
        "LICH_WORKSPACE_TRUST",
    ):
        monkeypatch.delenv(name, raising=False)
    # A pytest that a test starts (`run_tests`, `lich.runTests`, the gatekeeper's test run) tests a
    # small project that needs no plugin: loading this environment's plugins (pytest-lsp imports
    # lsprotocol, hypothesis...) would cost ~2 s of CPU per run, about 80% of such a run.
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
