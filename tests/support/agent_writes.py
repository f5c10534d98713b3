"""A workspace where an agent task without `process/exec` wrote a `conftest.py` (issue #42): that
conftest leaves a marker file beside it when pytest imports it, so "the tests ran the agent's
code" is a file on disk. Shared by the LSP, CLI and ACP tests of the lapse that follows such a
write: no test command runs until the user trusts the workspace again (docs/trust.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

MARKER = "AGENT_CONFTEST_IMPORTED"
# What the agent writes: pytest imports a root conftest.py before any test.
CONFTEST = (
    f"from pathlib import Path\n\nPath(__file__).with_name({MARKER!r}).write_text('imported')\n"
)
# The file tools only: a task with these capabilities has its writes noted in the trust store.
WITHOUT_EXEC = ["file/read", "file/write", "file/edit"]
WRITE_CONFTEST: dict[str, Any] = {
    "name": "write_file",
    "arguments": {"path": "conftest.py", "content": CONFTEST},
}
RUN_TESTS: dict[str, Any] = {"name": "run_tests", "arguments": {}}
# The start of the refusal (lich_core.trust.agent_writes_refusal).
REFUSAL = "workspace_changed: the agent wrote conftest.py in a task without process/exec; the test command"


def make_project(root: Path) -> Path:
    """A passing pytest project without a conftest.py (run_tests' default command takes it)."""
    tests = root / "tests"
    tests.mkdir(exist_ok=True)
    (tests / "test_ok.py").write_text("def test_ok():\n    assert True\n", encoding="utf-8")
    return root


def conftest_ran(root: Path) -> bool:
    return (root / MARKER).exists()
