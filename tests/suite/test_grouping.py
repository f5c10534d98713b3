"""The suite's xdist grouping is real: tests put in one group (tests/support/xdist_groups.py, as
tests/editors/conftest.py does) run on one worker under `--dist loadgroup`, the way
scripts/test.sh runs the suite. Otherwise the editor tests' setup (code-server and Chromium,
~150 s) runs once per worker at the same time on a 2-core machine. pytest 9.2 stopped honouring
the group marks with pytest-xdist 3.8, hence the pin in pyproject.toml; this test says so if a
new pair breaks it again."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
RUN_TIMEOUT_S = 110

CONFTEST = """
import pytest

from tests.support.xdist_groups import group_folder

@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    group_folder(items, "grouped/", "together")
"""

TESTS = """
import os
from pathlib import Path

import pytest

@pytest.mark.parametrize("index", range(6))
def test_records_its_worker(index):
    Path(os.environ["WORKERS_SEEN"], str(index)).write_text(os.environ["PYTEST_XDIST_WORKER"])
"""


def test_a_group_runs_on_one_worker(tmp_path: Path) -> None:
    (tmp_path / "conftest.py").write_text(CONFTEST, encoding="utf-8")
    (tmp_path / "grouped").mkdir()
    (tmp_path / "grouped" / "test_grouped.py").write_text(TESTS, encoding="utf-8")
    (tmp_path / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    seen = tmp_path / "seen"
    seen.mkdir()
    env = {**os.environ, "WORKERS_SEEN": str(seen), "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "xdist.plugin",
            "-p",
            "no:cacheprovider",
            "-q",
            "-n",
            "3",
            "--dist",
            "loadgroup",
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT_S,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    workers = {path.read_text(encoding="utf-8") for path in seen.iterdir()}
    assert len(list(seen.iterdir())) == 6
    assert len(workers) == 1, f"one group ran on workers {sorted(workers)}"
