"""`:LichUndo` in a real headless Neovim against the real server (tests/editors/nvim/undo.lua):
the task picked with vim.ui.select, undone as one edit through the user's later line, a closed
file restored through the save request. Runs under every Neovim test_nvim.py finds."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.editors.test_nvim import (  # noqa: F401 - `nvim` and `workspace` are fixtures
    assert_passed,
    nvim,
    run_scenario,
    workspace,
    write_provider_config,
)
from tests.support.fake_provider import FakeProviderServer

pytestmark = pytest.mark.nvim


def _edit(path: str, old: str, new: str) -> dict:
    return {
        "tool_calls": [
            {"name": "edit_file", "arguments": {"path": path, "old_string": old, "new_string": new}}
        ]
    }


def test_lich_undo_picks_the_task_and_keeps_the_users_edit(
    nvim: str,  # noqa: F811 - the fixture imported above
    workspace: Path,  # noqa: F811 - the fixture imported above
    tmp_path: Path,
    fake_provider: FakeProviderServer,  # noqa: F811
) -> None:
    (workspace / "other.py").write_text("x = 1\n", encoding="utf-8")
    fake_provider.script(
        _edit("hello.py", "return 1", "return 42"),
        _edit("other.py", "x = 1", "x = 2"),
        {"text": "Changed both."},
    )
    write_provider_config(tmp_path, fake_provider)
    result = run_scenario(nvim, "undo", workspace, tmp_path)
    assert_passed(result)
    undo = result["values"]["undo"]
    assert undo["title"] == "make it return 42"
    assert result["values"]["offered"]["prompt"] == "Undo which task? "
    assert (workspace / "other.py").read_text(encoding="utf-8") == "x = 1\n"
