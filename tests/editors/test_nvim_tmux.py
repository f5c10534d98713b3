"""The Neovim plugin as a person uses it (issue #45): a real Neovim (0.7.2 and 0.11, as
tests/editors/test_nvim.py finds them) in a real terminal, tmux, started with a user's init file
that calls require("lich").setup{}, driven with send-keys and read with capture-pane, against the
real lich-lsp and the fake provider on 127.0.0.1. Hit-enter prompts, folds drawn while the user
types and colours only show there.

Each wait blocks on the pane's output (pipe-pane into a FIFO), never on a clock; the init file
writes what the test waits for on the status line (`lich:` then a state), so a wait has
something on screen to see."""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.editors.test_nvim import (  # noqa: F401 - `nvim` and `workspace` are fixtures
    PLUGIN_DIR,
    nvim,
    workspace,
    write_provider_config,
)
from tests.editors.test_nvim_completion import SUGGESTION, write_completion_config
from tests.support.fake_provider import FakeProviderServer
from tests.support.tmux import Terminal, require_tmux, shell_words

pytestmark = pytest.mark.nvim

WIDTH, HEIGHT = 160, 50
HIT_ENTER = "Press ENTER or type command to continue"

# The user's init file: the plugin from this checkout, setup{}, and a status line that shows
# when the lich client is ready (attached, and its first lich.status answered: the server has
# read its settings by then; for ghost text, once the plugin knows the completion model) and
# the chat's state (whether a turn runs, how many turns it counts).
INIT_LUA = """
vim.opt.rtp:prepend({plugin})
vim.o.swapfile = false
vim.o.laststatus = 2
function _G.lich_test_chat()
  local chat = package.loaded["lich.chat"]
  if not chat then
    return ""
  end
  return (chat.running and "chat:running" or "chat:idle") .. " turns:" .. chat.turns
end
vim.o.statusline = "%f lich:starting %{{v:lua.lich_test_chat()}}"
local lich = require("lich")
lich.setup({{ cmd = {{ {python}, "-m", "lich_lsp" }} }})
local function ready(client)
  if {wait_model} and not require("lich.ghost").model(client.id).known then
    return false
  end
  return true
end
local timer = vim.loop.new_timer()
timer:start(50, 50, vim.schedule_wrap(function()
  local client = lich.get_client(0)
  if client and client.initialized and ready(client) then
    timer:stop()
    lich.execute("lich.status", vim.empty_dict(), function()
      vim.o.statusline = "%f lich:ready %{{v:lua.lich_test_chat()}}"
      vim.cmd("redrawstatus!")
    end)
  end
end))
"""


class NvimTerminal(Terminal):
    """Neovim in a tmux pane, whose waits also end at a hit-enter prompt."""

    def shows_all(self, *needles: str, absent: tuple[str, ...] = ()) -> str:
        """The screen once it holds every needle and none of `absent`, or once a hit-enter
        prompt is up (which nothing in these tests answers: the assertion then fails at once)."""

        def predicate(screen: str) -> bool:
            return all(n in screen for n in needles) and not any(a in screen for a in absent)

        screen = self.shows(lambda s: predicate(s) or HIT_ENTER in s, f"{needles} without {absent}")
        assert HIT_ENTER not in screen, f"a hit-enter prompt:\n{screen}"
        return screen


@contextmanager
def neovim_in_tmux(
    binary: str, root: Path, tmp_path: Path, file: str, wait_model: bool = False
) -> Iterator[NvimTerminal]:
    """Neovim editing `file` of the workspace `root` in a fresh tmux server of its own, with the
    user's init file above and temporary XDG directories."""
    require_tmux()
    init = tmp_path / "init.lua"
    init.write_text(
        INIT_LUA.format(
            plugin=json.dumps(str(PLUGIN_DIR)),
            python=json.dumps(sys.executable),
            wait_model="true" if wait_model else "false",
        ),
        encoding="utf-8",
    )
    env = dict(os.environ)
    env.update(
        {
            "XDG_STATE_HOME": str(tmp_path / "state"),
            "XDG_DATA_HOME": str(tmp_path / "data"),
            "XDG_CONFIG_HOME": str(tmp_path / "config"),
            "TERM": "xterm-256color",
        }
    )
    # No truecolor: the ghost text's colour must show in a 256-colour terminal.
    env.pop("COLORTERM", None)
    terminal = NvimTerminal.start(
        f"lich-nvim-{os.getpid()}-{tmp_path.name}",
        "nvim",
        shell_words([binary, "-n", "-i", "NONE", "-u", str(init), file]),
        width=WIDTH,
        height=HEIGHT,
        cwd=root,
        fifo=tmp_path / "pane.fifo",
        env=env,
    )
    try:
        yield terminal
    finally:
        terminal.close()


EDIT = {
    "name": "edit_file",
    "arguments": {
        "path": "hello.py",
        "old_string": "def hello():\n    return 1\n",
        "new_string": "def hello():\n    return 2\n",
    },
}
FOLDED = re.compile(r"▸ (read_file|edit_file) hello\.py · ok \(\d+ ms\)  \[\+\d+ lines\]")


def _folded_tools(screen: str) -> list[str]:
    return [m.group(1) for m in FOLDED.finditer(screen)]


def test_in_a_terminal_no_hit_enter_prompt_tool_calls_fold_as_they_arrive_q_and_toggle(
    nvim: str,  # noqa: F811 - the fixture imported above
    workspace: Path,  # noqa: F811 - the fixture imported above
    tmp_path: Path,
    fake_provider: FakeProviderServer,
) -> None:
    """Start: no hit-enter prompt (0.11 showed "unknown config key 'lich'" behind one). A chat
    turn sent with <C-s>, the user still in Insert mode in the input while the tool calls
    arrive: both are drawn folded (an expr fold was not computed in Insert mode), the answer
    ends the turn with no message and no hit-enter prompt; zR opens the folds and zM closes
    them; q closes the chat; :LichChat opens it (folds still closed) and closes it again. With
    the chat closed, :LichAsk ends with one short line (the server's), no hit-enter prompt."""
    fake_provider.script(
        {
            "text": "Let me look.",
            "tool_calls": [{"name": "read_file", "arguments": {"path": "hello.py"}}],
        },
        {"tool_calls": [EDIT]},
        {"text": "Done, answer one.", "chunks": 3},
        {"text": "It returns 2.\nA second line that stays in the log."},
    )
    write_provider_config(tmp_path, fake_provider)
    with neovim_in_tmux(nvim, workspace, tmp_path, "hello.py") as term:
        screen = term.shows_all("lich:ready")
        assert "unknown config key" not in screen, screen

        term.keys(":LichChat", "Enter")
        term.shows_all("lich://chat-input", "# lich · new thread")
        term.keys("i", "fix it", "C-s")
        screen = term.shows_all("Done, answer one.", "chat:idle turns:1", "-- INSERT --")
        assert _folded_tools(screen) == ["read_file", "edit_file"], screen
        assert "arguments:" not in screen, screen
        assert "LSP[lich]" not in screen, screen  # no end-of-turn message for a chat turn
        assert (workspace / "hello.py").read_text(
            encoding="utf-8"
        ) == "def hello():\n    return 2\n"

        # Into the conversation: zR opens every fold, zM closes them again.
        term.keys("Escape", "C-w", "k", "zR")
        screen = term.shows_all("  arguments: ", "```diff", "-    return 1", "+    return 2")
        assert _folded_tools(screen) == [], screen
        term.keys("zM")
        screen = term.shows_all("[+2 lines]", absent=("  arguments: ",))
        assert _folded_tools(screen) == ["read_file", "edit_file"], screen

        term.keys("q")
        term.shows_all("hello.py", absent=("lich://chat",))
        term.keys(":LichChat", "Enter")
        screen = term.shows_all("lich://chat-input", "Done, answer one.")
        assert _folded_tools(screen) == ["read_file", "edit_file"], screen
        term.keys(":LichChat", "Enter")
        term.shows_all("hello.py", absent=("lich://chat",))

        # With the chat closed, :LichAsk ends with the server's one-line message, nothing more.
        term.keys(":LichAsk what does hello return", "Enter")
        screen = term.shows_all("It returns 2.")
        assert "A second line" not in screen, screen


def test_in_a_terminal_a_message_sent_while_a_turn_runs_is_queued_then_sent(
    nvim: str,  # noqa: F811 - the fixture imported above
    workspace: Path,  # noqa: F811 - the fixture imported above
    tmp_path: Path,
    fake_provider: FakeProviderServer,
) -> None:
    """The first turn stalls mid-answer; two more messages typed meanwhile show as queued (not
    refused), dd on the second takes it back, and when the turn ends (:LichCancel) the first
    queued message goes out as turn 2 and is answered. No hit-enter prompt throughout."""
    fake_provider.script(
        {"text": "Thinking about it", "stall_after_chunks": 2},
        {"text": "Answer two."},
    )
    write_provider_config(tmp_path, fake_provider)
    with neovim_in_tmux(nvim, workspace, tmp_path, "hello.py") as term:
        term.shows_all("lich:ready")
        term.keys(":LichChat", "Enter")
        term.shows_all("lich://chat-input")
        term.keys("i", "first question", "C-s")
        term.shows_all("Thinking about it")
        term.keys("second question", "C-s")
        screen = term.shows_all("⋯ queued 1: second question")
        assert "is running" not in screen, screen
        term.keys("third question", "C-s")
        term.shows_all("⋯ queued 1: second question", "⋯ queued 2: third question")

        # dd on the second queued message, in the conversation.
        term.keys("Escape", "C-w", "k", "/queued 2", "Enter", "dd")
        term.shows_all("⋯ queued 1: second question", absent=("third question",))

        term.keys(":LichCancel", "Enter")
        screen = term.shows_all(
            "Cancelled.",
            "## You · turn 2",
            "Answer two.",
            "chat:idle turns:2",
            absent=("⋯ queued",),
        )
        assert screen.index("Cancelled.") < screen.index("## You · turn 2"), screen
    assert fake_provider.wait_for_requests(2)
    second = json.dumps(fake_provider.requests[1]["json"]["messages"])
    assert "second question" in second and "third question" not in second


def test_in_a_terminal_tab_accepts_ghost_text_drawn_in_a_colour_of_its_own(
    nvim: str,  # noqa: F811 - the fixture imported above
    workspace: Path,  # noqa: F811 - the fixture imported above
    tmp_path: Path,
    fake_provider: FakeProviderServer,
) -> None:
    """Typing shows the suggestion as ghost text in a foreground colour of its own (a
    256-colour terminal, no termguicolors); <Tab> inserts it."""
    (workspace / "calc.py").write_text("", encoding="utf-8")
    fake_provider.script({"text": SUGGESTION, "chunks": 2}, *[{"text": ""}] * 5)
    write_completion_config(tmp_path, fake_provider)
    with neovim_in_tmux(nvim, workspace, tmp_path, "calc.py", wait_model=True) as term:
        term.shows_all("lich:ready")
        term.keys("i", "def add")
        screen = term.shows_all("def add(a, b):", "    return a + b", "-- INSERT --")
        coloured = term.text(escapes=True)
        ghost_line = next(line for line in coloured.splitlines() if "(a, b):" in line)
        # The ghost text starts with a foreground colour of its own: the escapes right before it
        # set one (SGR 38;5;N or 38;2;R;G;B, 30-37 or 90-97), as the typed text is not grey.
        before = ghost_line.split("(a, b):", 1)[0]
        escapes = re.search(r"((?:\x1b\[[\d;]*m)+)$", before)
        params = ";".join(re.findall(r"\x1b\[([\d;]*)m", escapes.group(1))) if escapes else ""
        assert re.search(r"(^|;)(38;[25];|3[0-7](;|$)|9[0-7](;|$))", params), repr(ghost_line)
        term.keys("Tab", "Escape")
        screen = term.shows_all("def add(a, b):", "    return a + b", absent=("-- INSERT --",))
    assert "def add(a, b):\n    return a + b" in screen
