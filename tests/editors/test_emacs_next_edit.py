"""Next edit suggestions in Emacs (editors/emacs/lich-next-edit.el, issue #47) in a real batch
Emacs through each LSP client (Eglot; lsp-mode when installed) against the real lich-lsp server
and a fake Zeta-format model on 127.0.0.1 (tests/support/fake_zeta.py: it renames `count` to
`total` in the editable region it is sent). The scenario (tests/editors/emacs/
next_edit_scenario.el) renames `count` at its definition; the two uses below show as overlays
away from point; TAB moves to each and TAB accepts it; a new use is dismissed with C-g."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.editors.test_emacs import (  # noqa: F401 - emacs is a fixture
    EMACS_DIR,
    PROCESS_TIMEOUT_S,
    SCENARIO,
    _feature_available,
    emacs,
    run_emacs_scenario,
)
from tests.editors.test_emacs_tmux import SESSION, emacs_env, emacs_nw  # noqa: F401
from tests.support.fake_zeta import FakeZetaModel
from tests.support.tmux import Terminal, shell_words

SCENARIO_FILE = SCENARIO.parent / "next_edit_scenario.el"
TMUX_INIT = SCENARIO.parent / "next_edit_tmux_init.el"
CALC = "def summary(items):\n    count = 0\n    for item in items:\n        count += item\n    return count\n"
RENAMED = "def summary(items):\n    total = 0\n    for item in items:\n        total += item\n    return total\n"


@pytest.fixture
def zeta() -> Iterator[FakeZetaModel]:
    with FakeZetaModel({"count": "total"}) as model:
        yield model


def write_next_edit_config(tmp_path: Path, zeta: FakeZetaModel) -> None:
    """The fake Zeta model as the user config's next-edit model (XDG_CONFIG_HOME=tmp/config)."""
    config = {
        "next_edit": {
            "kind": "openai_compat",
            "format": "zeta",
            "base_url": zeta.url + "/v1",
            "model": "zeta",
        }
    }
    user_config = tmp_path / "config" / "lich" / "config.json"
    user_config.parent.mkdir(parents=True, exist_ok=True)
    user_config.write_text(json.dumps(config), encoding="utf-8")


@pytest.mark.parametrize("client", ["eglot", "lsp-mode"])
def test_next_edit_away_from_point_is_shown_jumped_to_and_accepted(
    emacs: str,  # noqa: F811
    tmp_path: Path,
    zeta: FakeZetaModel,
    client: str,
) -> None:
    if client == "lsp-mode" and not _feature_available(emacs, "lsp-mode"):
        pytest.skip("Emacs has no lsp-mode (Debian: apt-get install elpa-lsp-mode)")
    write_next_edit_config(tmp_path, zeta)
    workspace = tmp_path / "ws"
    (workspace / ".git").mkdir(parents=True)
    (tmp_path / "home").mkdir()
    (workspace / "calc.py").write_text(CALC, encoding="utf-8")
    result = run_emacs_scenario(
        emacs,
        SCENARIO_FILE,
        workspace,
        tmp_path,
        {"LICH_TEST_CLIENT": client, "XDG_CONFIG_HOME": str(tmp_path / "config")},
    )
    values = result["values"]
    assert "zeta" in values["model"]
    assert values["renamed"] == RENAMED
    assert values["final"] == RENAMED + "print(count)"
    assert values["accepted"] == 2
    # While a suggestion shows TAB and C-g are the mode's; with none, TAB is python-mode's own.
    bound = [v for k, v in values.items() if k.startswith("binding_")]
    assert bound.count("lich-next-edit-accept-or-jump") == 4 and "lich-next-edit-dismiss" in bound
    assert not values["tab_without_suggestion"].startswith("lich-")
    prompts = [str(body.get("prompt", "")) for body in zeta.requests]
    assert any("total<|user_cursor_is_here|> = 0" in prompt for prompt in prompts), prompts


def test_next_edit_byte_compiles(emacs: str, tmp_path: Path) -> None:  # noqa: F811
    """lich-next-edit.el byte-compiles with warnings as errors next to lich.el."""
    for name in ("lich.el", "lich-next-edit.el"):
        shutil.copy(EMACS_DIR / name, tmp_path / name)
    proc = subprocess.run(
        [emacs, "--batch", "-L", str(tmp_path), "--eval", "(setq byte-compile-error-on-warn t)"]
        + ["-f", "batch-byte-compile", "lich-next-edit.el"],
        cwd=tmp_path,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=PROCESS_TIMEOUT_S,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert (tmp_path / "lich-next-edit.elc").exists()


def test_in_a_terminal_the_suggestions_show_and_tab_takes_them(
    emacs_nw: str,  # noqa: F811
    tmp_path: Path,
    zeta: FakeZetaModel,
) -> None:
    """Emacs -nw in tmux, keys typed as a person types them (Eglot sends the edit when Emacs is
    idle, as it does for a user): M-d and `total` rename `count` at its definition; both uses
    show `total` right after the old name on the screen; TAB, TAB takes the first, TAB, TAB the
    second; C-x C-s saves the renamed file."""
    write_next_edit_config(tmp_path, zeta)
    workspace = tmp_path / "ws"
    (workspace / ".git").mkdir(parents=True)
    (tmp_path / "home").mkdir()
    (workspace / "calc.py").write_text(CALC, encoding="utf-8")
    command = shell_words([emacs_nw, "-nw", "-q", "-L", str(EMACS_DIR), "-l", str(TMUX_INIT)])
    screen = Terminal.start(
        f"lich-emacs-next-edit-{os.getpid()}", SESSION, command,
        width=120, height=40, cwd=workspace, fifo=tmp_path / "pane.fifo",
        env=emacs_env(tmp_path, workspace),
    )  # fmt: skip
    try:
        screen.shows(lambda s: "Next" in s and "def summary(items):" in s, "calc.py, the mode on")
        screen.keys("M-d")
        screen.type("total")
        shown = screen.shows(
            lambda s: "counttotal += item" in s and "return counttotal" in s,
            "both uses suggested in place",
        )
        assert "    total = 0" in shown, shown
        screen.keys("Tab", "Tab")
        screen.shows(
            lambda s: "        total += item" in s and "return counttotal" in s,
            "the first use accepted, the second still suggested",
        )
        screen.keys("Tab", "Tab")
        screen.shows(lambda s: "    return total" in s and "counttotal" not in s, "both accepted")
        screen.keys("C-x", "C-s")
        screen.shows(lambda s: "Wrote " in s, "the file saved")
    finally:
        screen.close()
    assert (workspace / "calc.py").read_text(encoding="utf-8") == RENAMED
