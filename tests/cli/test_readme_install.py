"""Issue 33: the README's install commands carry the venv step themselves (PEP 668 systems refuse
a bare `pip install`), say what `[search]` installs, and say what `scripts/test.sh` installs
beside the test command; the test-suite internals live in docs/contributing.md."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
README = (REPO / "README.md").read_text(encoding="utf-8")
VENV_STEPS = [
    ["python3", "-m", "venv", ".venv"],
    [".", ".venv/bin/activate"],
    ["pip", "install", "-e", ".[search]"],
]


def section(title: str) -> str:
    return README.split(f"## {title}", 1)[1].split("\n## ", 1)[0]


def sh_blocks(text: str) -> list[str]:
    return [block.strip() for block in re.findall(r"```sh\n(.*?)```", text, re.DOTALL)]


def steps(command: str) -> list[list[str]]:
    return [shlex.split(part) for part in command.split("&&")]


def test_the_first_commands_make_and_activate_a_venv_before_pip() -> None:
    demo = sh_blocks(section("See it work: `lich demo`"))[0]
    server, tests = sh_blocks(section("Two commands"))
    assert steps(demo) == [*VENV_STEPS, ["lich", "demo"]]
    assert steps(server) == [*VENV_STEPS, ["lich-lsp"]]
    assert tests == "bash scripts/test.sh"  # what CI runs (.ci/run), unchanged


def test_the_readme_says_what_the_installs_bring_next_to_the_commands() -> None:
    demo_text = section("See it work: `lich demo`")
    assert "PEP 668" in demo_text
    assert re.search(r"`\[search\]` adds\s+ripgrep", demo_text)
    suite_text = section("Two commands").split("bash scripts/test.sh", 1)[1]
    for what in (
        "As root",
        "apt-get install",
        "npm",
        "MB",
        "LICH_TEST_SKIP_INSTALL=1",
        "docs/contributing.md",
    ):
        assert what in suite_text, what


def test_the_suite_internals_moved_to_the_contributor_doc() -> None:
    assert "### Tests under load" not in README and "--under-load" not in README
    contributing = (REPO / "docs" / "contributing.md").read_text(encoding="utf-8")
    for what in (
        "## Tests under load",
        "--under-load",
        "LICH_TEST_BURNERS",
        "LICH_TEST_WORKERS",
        "prefork.py",
        "120 s",
    ):
        assert what in contributing, what
