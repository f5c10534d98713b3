"""`lich demo --editor nvim` in a real Neovim with lich's plugin, against the real server.

The command runs as a user types it; only `nvim` on PATH is a wrapper that adds `--headless` and
a driver script (nvim_driver.lua) that answers the approval with "Allow once", waits for the
demo's ask to finish, and writes what Neovim saw to a JSON file. Skips when there is no `nvim`,
except under CI=true (CI installs Debian's neovim).
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import sys
from pathlib import Path

import pytest

from lich_cli.demo.nvim import BUNDLED_PLUGIN, find_plugin
from tests.demo.demo_support import repo_env, run_demo, run_demo_on_a_terminal
from tests.support.tmux import Terminal, shell_words

# With the editor tests: one Neovim at a time on a 2-core machine (tests/editors/conftest.py).
pytestmark = [pytest.mark.nvim, pytest.mark.xdist_group("editors")]

DRIVER = Path(__file__).resolve().parent / "nvim_driver.lua"
DRIVER_TIMEOUT_MS = 90_000


@pytest.fixture
def nvim() -> str:
    found = shutil.which("nvim")
    if found is None:
        if os.environ.get("CI") == "true":
            pytest.fail("no `nvim` on PATH under CI=true (CI installs Debian's neovim)")
        pytest.skip("no `nvim` on PATH: install Neovim to run")
    return found


def headless_wrapper(folder: Path, nvim: str) -> Path:
    folder.mkdir()
    wrapper = folder / "nvim"
    wrapper.write_text(
        f'#!/bin/sh\nexec "{nvim}" --headless "$@" -c "lua dofile(os.getenv(\'DEMO_TEST_DRIVER\'))"\n',
        encoding="utf-8",
    )
    wrapper.chmod(0o755)
    return folder


def test_the_demo_in_neovim_edits_the_buffers_with_the_plugin(
    nvim: str, tmp_path: Path, elsewhere: Path
) -> None:
    bin_dir = headless_wrapper(tmp_path / "bin", nvim)
    temp = tmp_path / "tmp"
    temp.mkdir()
    result_file = tmp_path / "nvim-result.json"
    env = repo_env(
        TMPDIR=str(temp),
        PATH=f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
        DEMO_TEST_DRIVER=str(DRIVER),
        DEMO_TEST_RESULT=str(result_file),
        DEMO_TEST_TIMEOUT_MS=str(DRIVER_TIMEOUT_MS),
    )
    returncode, output = run_demo_on_a_terminal("--editor", "nvim", cwd=elsewhere, env=env)
    assert result_file.exists(), f"nvim wrote no result (rc={returncode})\n{output}"
    seen = json.loads(result_file.read_text(encoding="utf-8"))
    context = json.dumps(seen, indent=1)
    assert returncode == 0, context
    assert seen["done"] and seen["err"] is None, context
    assert seen["result"]["stopped_reason"] == "final", context
    assert len(seen["result"]["edited"]) == 2, context
    # The edits landed in Neovim's buffers, through the plugin.
    assert "    if not values:\n        return 0.0\n" in seen["buffers"]["stats.py"], context
    assert "assert mean([]) == 0.0\n" in seen["buffers"]["check_stats.py"], context
    # Neovim was asked before the checks ran, and the transcript shows the run.
    assert seen["questions"] == [
        'lich wants to run terminal (process/exec): runs `python3 check_stats.py` with bash -lc in the workspace; runs check_stats.py from this repository. Arguments: {"command": "python3 check_stats.py"}'
    ]
    transcript = "\n".join(seen["transcript"])
    assert "→ terminal" in transcript and "all checks passed" in transcript, transcript
    assert list(elsewhere.iterdir()) == [] and list(temp.iterdir()) == []


def test_without_a_terminal_it_refuses_before_starting_neovim(
    nvim: str, tmp_path: Path, elsewhere: Path
) -> None:
    """Run from a pipe (no terminal), Neovim would print escape codes and fail reading input: the
    demo says so in one line and starts nothing."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    started = tmp_path / "nvim-started"
    wrapper = bin_dir / "nvim"
    wrapper.write_text(f'#!/bin/sh\ntouch "{started}"\nexec "{nvim}" "$@"\n', encoding="utf-8")
    wrapper.chmod(0o755)
    temp = tmp_path / "tmp"
    temp.mkdir()
    env = repo_env(TMPDIR=str(temp), PATH=f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")
    done = run_demo("--editor", "nvim", cwd=elsewhere, env=env)
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip() == (
        "lich demo: --editor nvim needs a terminal (its standard input and output are not one here); "
        "run it in a terminal, or run `lich demo` without --editor to see the demo here."
    )
    assert not started.exists() and list(temp.iterdir()) == [] and done.stdout == ""


def test_the_plugin_comes_with_the_package() -> None:
    # The link that the wheel build follows (pyproject.toml package-data) reaches the plugin.
    assert find_plugin() == BUNDLED_PLUGIN.resolve()
    assert (BUNDLED_PLUGIN / "plugin" / "lich.lua").is_file()


# --- as a person sees it: the real Neovim in a terminal (tmux) ---

QUIT_CHANNEL = "lich-demo-done"


def test_in_a_terminal_the_demo_asks_the_user_and_ends_without_press_enter(
    nvim: str, tmp_path: Path, elsewhere: Path
) -> None:
    """Typed in a terminal: the demo says the approval is the user's to answer, the user answers
    1 (Allow once), and the demo ends with its last line showing, no "Press ENTER" prompt."""
    socket = f"lich-demo-{os.getpid()}"
    temp = tmp_path / "tmp"
    temp.mkdir()
    env = repo_env(TMPDIR=str(temp))
    demo = shell_words([sys.executable, "-m", "lich_cli", "demo", "--editor", "nvim"])
    # When the demo ends, the shell signals a tmux channel the test waits on.
    command = f"{demo}; tmux -L {shlex.quote(socket)} wait-for -S {QUIT_CHANNEL}"
    environment = [
        f"-e{key}={value}"
        for key, value in env.items()
        if key in ("HOME", "PYTHONPATH", "TMPDIR") or key.startswith("XDG_")
    ]
    screen = Terminal.start(
        socket, "demo", command,
        width=150, height=40, cwd=elsewhere, fifo=tmp_path / "pane.fifo", options=environment,
    )  # fmt: skip
    try:
        shown = screen.shows(
            lambda text: "Type number and <Enter>" in text, "the approval question"
        )
        assert (
            "lich demo: this question is yours to answer (1 = Allow once); the demo waits for you."
            in shown
        ), shown
        assert "lich wants to run terminal" in shown, shown
        screen.keys("1", "Enter")
        shown = screen.shows(lambda text: "lich demo: done." in text, "the demo's last line")
        assert "Press ENTER" not in shown, shown
        screen.keys(":qa!", "Enter")
        screen.wait_for(QUIT_CHANNEL, "the demo did not end")
    finally:
        screen.close()
    assert list(elsewhere.iterdir()) == [] and list(temp.iterdir()) == []
