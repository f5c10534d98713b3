"""Next edit suggestions in the Neovim plugin (editors/nvim/lua/lich/next_edit.lua, issue #47) in a
real Neovim (0.7.2 and 0.11, as tests/editors/test_nvim.py finds them), headless and in a real
terminal under tmux, against the real lich-lsp server and a fake Zeta-format model on 127.0.0.1
(tests/support/fake_zeta.py: it renames `count` to `total` in the editable region it is sent).

The scenario (tests/editors/nvim/next_edit.lua) renames `count` at its definition; the two uses
below show as suggestions away from the cursor; <Tab> jumps, <Tab> accepts, for each; a new use
typed later is dismissed with <Esc> in Normal mode."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.editors.test_nvim import (  # noqa: F401 - nvim and workspace are fixtures
    _version,
    _version_tuple,
    assert_passed,
    nvim,
    run_scenario,
    workspace,
)
from tests.editors.test_nvim_chat import scenario_in_terminal, terminal_result
from tests.editors.test_nvim_completion import local_model, write_user_config
from tests.support.fake_zeta import FakeZetaModel

pytestmark = pytest.mark.nvim

CALC = "def summary(items):\n    count = 0\n    for item in items:\n        count += item\n    return count\n"
RENAMED = "def summary(items):\n    total = 0\n    for item in items:\n        total += item\n    return total"
TERMINAL_DONE = "lich-next-edit-done"


@pytest.fixture
def zeta() -> Any:
    with FakeZetaModel({"count": "total"}) as model:
        yield model


def write_next_edit_config(tmp_path: Path, model: FakeZetaModel) -> None:
    """The user's config: the fake Zeta model as the next-edit model."""
    write_user_config(tmp_path, {"next_edit": local_model(model.url, "zeta", "zeta")})


def calc_with_next_edits(root: Path, tmp_path: Path, model: FakeZetaModel) -> None:
    """calc.py, whose `count` the scenarios rename, and the fake Zeta model in the config."""
    (root / "calc.py").write_text(CALC, encoding="utf-8")
    write_next_edit_config(tmp_path, model)


def check_result(result: dict[str, Any], zeta: FakeZetaModel) -> None:
    assert_passed(result)
    values = result["values"]
    assert "zeta" in values["model"]
    assert values["renamed"] == RENAMED
    # The new use was dismissed, not renamed.
    assert values["final"] == RENAMED + "\nprint(count)"
    assert values["accepted"] == 2
    # The model saw the user's rename in the editable region, with the cursor after it.
    prompts = [str(body.get("prompt", "")) for body in zeta.requests]
    assert any("total<|user_cursor_is_here|> = 0" in prompt for prompt in prompts), prompts


@pytest.mark.parametrize("start", ["setup", "builtin"])
def test_next_edit_away_from_the_cursor_is_shown_jumped_to_and_accepted(
    nvim: str,  # noqa: F811
    workspace: Path,  # noqa: F811
    tmp_path: Path,
    zeta: FakeZetaModel,
    start: str,
) -> None:
    """`start`: require("lich").setup{}, or (0.11+) vim.lsp.enable("lich") with next edits wired
    by require("lich.next_edit").setup(require("lich").config)."""
    if start == "builtin" and _version_tuple(nvim) < (0, 11):
        pytest.skip(f"vim.lsp.enable needs Neovim 0.11+ (this is {_version(nvim)})")
    calc_with_next_edits(workspace, tmp_path, zeta)
    result = run_scenario(nvim, "next_edit", workspace, tmp_path, {"builtin": start == "builtin"})
    check_result(result, zeta)


def test_next_edit_is_off_when_turned_off(
    nvim: str,  # noqa: F811
    workspace: Path,  # noqa: F811
    tmp_path: Path,
    zeta: FakeZetaModel,
) -> None:
    """`next_edit = { enabled = false }`: nothing is asked and <Tab> is not mapped."""
    calc_with_next_edits(workspace, tmp_path, zeta)
    result = run_scenario(nvim, "next_edit_off", workspace, tmp_path)
    assert_passed(result)
    assert not str(result["values"]["tab_map"]).startswith("lich")
    assert result["values"]["requests"] == 0
    assert zeta.requests == []


def test_with_nothing_shown_tab_does_what_it_did_before(
    nvim: str,  # noqa: F811
    workspace: Path,  # noqa: F811
    tmp_path: Path,
    zeta: FakeZetaModel,
) -> None:
    """The user's own Insert-mode <Tab> mapping (made before setup) still runs while no
    suggestion is shown: the plugin's mapping falls through to it, not to a bare <Tab>."""
    write_next_edit_config(tmp_path, zeta)
    result = run_scenario(nvim, "next_edit_keys", workspace, tmp_path)
    assert_passed(result)
    assert result["values"]["tab_desc"].startswith("lich:")
    assert result["values"]["line"] == "x<TAB>y"
    assert result["values"]["shown"] is False


# --- as a person sees it: Neovim in a terminal (tmux) -----------------------------------------


def _lines_with(screen: str, text: str) -> list[str]:
    return [line for line in screen.splitlines() if text in line]


def _shown(screen: str) -> bool:
    """Two lines with the sign, each still reading `count` with the suggested `total` beside it
    (0.10+: inline, `counttotal`; before: after the line)."""
    marked = _lines_with(screen, "»")
    return len(marked) == 2 and all("count" in line and "total" in line for line in marked)


def _accepted(screen: str) -> bool:
    return any("total += item" in line and "count" not in line for line in screen.splitlines())


def _new_use_suggested(screen: str) -> bool:
    return any("total" in line for line in _lines_with(screen, "»") if "print(count" in line)


def _dismissed(screen: str) -> bool:
    lines = _lines_with(screen, "print(count)")
    return bool(lines) and "»" not in screen and all("total" not in line for line in lines)


STAGES: list[tuple[str, Callable[[str], bool]]] = [
    ("shown", _shown),
    ("accepted", _accepted),
    ("before_dismiss", _new_use_suggested),
    ("dismissed", _dismissed),
]


def test_in_a_terminal_the_suggestion_shows_where_it_applies(
    nvim: str,  # noqa: F811
    workspace: Path,  # noqa: F811
    tmp_path: Path,
    zeta: FakeZetaModel,
) -> None:
    """The same scenario with Neovim drawing on a real terminal: at each stage the pane shows the
    suggestion next to the text it replaces (with its gutter sign), then the accepted text, then a
    new suggestion and, after Normal mode's <Esc>, none."""
    calc_with_next_edits(workspace, tmp_path, zeta)
    result_file = tmp_path / "next_edit.json"
    screen = scenario_in_terminal(
        nvim, "next_edit", workspace, tmp_path, result_file,
        f"lich-next-edit-{os.getpid()}", TERMINAL_DONE, 120, 40,
    )  # fmt: skip
    seen: dict[str, str] = {}
    try:
        for name, predicate in STAGES:
            seen[name] = screen.shows(predicate, f"the {name} stage")
            (workspace / f"seen-{name}").write_text("", encoding="utf-8")
        screen.wait_for(TERMINAL_DONE, "Neovim did not finish the scenario")
    finally:
        screen.close()
    result = terminal_result(result_file, json.dumps(seen, indent=1))
    check_result(result, zeta)
