"""An untrusted repository that ships code lich could run: `conftest.py`, a `pyproject.toml` and an
executable `.venv/bin/python`, each leaving a marker file when it runs; and the approval texts
lich must show for it (lich_core.approvals.what_will_run), shared by the LSP, ACP and CLI tests."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

CONFTEST_MARKER = "CONFTEST_RAN"
VENV_MARKER = "VENV_PYTHON_RAN"
EVAL_CODE = "import sys\nsys.executable"


def make_untrusted_repo(root: Path) -> Path:
    (root / "pyproject.toml").write_text("[tool.pytest.ini_options]\n")
    (root / "conftest.py").write_text(f"open({str(root / CONFTEST_MARKER)!r}, 'w').close()\n")
    venv_python = root / ".venv" / "bin" / "python"
    venv_python.parent.mkdir(parents=True)
    venv_python.write_text(
        f'#!/bin/sh\ntouch {shlex.quote(str(root / VENV_MARKER))}\nexec {shlex.quote(sys.executable)} "$@"\n'
    )
    venv_python.chmod(0o755)
    return root


def nothing_of_the_repo_ran(root: Path) -> bool:
    return not (root / CONFTEST_MARKER).exists() and not (root / VENV_MARKER).exists()


# What each call will run, in an untrusted workspace (lich's own interpreter is the user's).
RUN_TESTS_RUNS = (
    f"runs `{shlex.quote(sys.executable)} -m pytest`: starts your Python {sys.executable} "
    "(not this repository's .venv/bin/python: the workspace is not trusted); "
    "pytest loads conftest.py, pyproject.toml and the test files from this repository"
)
PYTHON_EVAL_RUNS = (
    f"runs the code in your Python {sys.executable} "
    "(not this repository's .venv/bin/python: the workspace is not trusted), in the workspace"
)
RUN_TESTS_QUESTION = (
    f"lich wants to run run_tests (process/exec): {RUN_TESTS_RUNS}. Arguments: {{}}"
)
PYTHON_EVAL_QUESTION = (
    f"lich wants to run python_eval (image/eval): {PYTHON_EVAL_RUNS}. "
    f"Arguments: {json.dumps({'code': EVAL_CODE}, ensure_ascii=False)}"
)
