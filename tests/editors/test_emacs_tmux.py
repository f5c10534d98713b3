"""editors/emacs in a real terminal (issue #45): Emacs 28 (-nw) in a tmux pane, against the real
lich-lsp through Eglot and the fake provider, driven with tmux send-keys and read with
capture-pane, as a person uses it.

- The chat: C-c C-c on a turn that follows a failed one stops it and the chat takes the next
  message, several times in a row (each step waits for the screen to show its outcome, never for
  a time); a message sent while a turn runs shows as queued, C-c C-k takes one back to the input,
  and the queued one is sent when the turn ends; a tool call line opens with TAB to its output;
  the answer is not repeated in the echo area (*Messages* does not have it); an answer's markdown
  is drawn in markdown-mode's faces.
- Ghost text: `lich-completion-mode' shows the completion model's suggestion after the cursor in
  its own colour, and TAB inserts it (the saved file says so).

Each wait blocks on the pane's output (tmux pipe-pane into a FIFO, tests/support/tmux.py) and
fails after SCREEN_WAIT_S. Skips without emacs, Eglot or tmux (fails under CI=true).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.editors.test_emacs import EMACS_DIR, _eglot_available
from tests.editors.test_nvim import write_provider_config
from tests.support.fake_provider import FakeProviderServer
from tests.support.tmux import Terminal, shell_words

INIT = Path(__file__).resolve().parent / "emacs" / "tmux_init.el"
SESSION = "emacs"
# C-c C-c after a failed turn, this many times in a row (the bug stuck 6 runs of 24).
CANCEL_ROUNDS = 8
# A turn that runs until it is cancelled: text every 50 ms.
ENDLESS = {"endless": True, "text": "tick ", "chunk_delay_s": 0.05}


@pytest.fixture
def emacs_nw() -> str:
    binary = shutil.which("emacs")
    problem = None
    if binary is None:
        problem = "no `emacs` binary on PATH (Debian: apt-get install emacs-nox elpa-eglot)"
    elif not _eglot_available(binary):
        problem = "Emacs has no Eglot (Debian: apt-get install elpa-eglot)"
    elif shutil.which("tmux") is None:
        problem = "no `tmux` on PATH (scripts/test.sh installs it)"
    if problem:
        if os.environ.get("CI") == "true":
            pytest.fail(problem + " under CI=true")
        pytest.skip(problem)
    assert binary is not None
    return binary


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / ".git").mkdir(parents=True)
    (tmp_path / "home").mkdir()
    (root / "hello.py").write_text("def hello():\n    return 1\n", encoding="utf-8")
    return root


@pytest.fixture
def terminal(emacs_nw: str, workspace: Path, tmp_path: Path) -> Iterator[Callable[[str], Terminal]]:
    """Starts Emacs in a fresh tmux server (its own socket, the test's HOME and XDG dirs) with
    tmux_init.el in the given view ("chat" or "ghost"); kills the server at the end."""
    screens: list[Terminal] = []

    def start(view: str) -> Terminal:
        env = emacs_env(tmp_path, workspace)
        env["LICH_TEST_VIEW"] = view
        command = shell_words([emacs_nw, "-nw", "-q", "-L", str(EMACS_DIR), "-l", str(INIT)])
        screen = Terminal.start(
            f"lich-emacs-{os.getpid()}", SESSION, command,
            width=160, height=45, cwd=workspace, fifo=tmp_path / "pane.fifo", env=env,
        )  # fmt: skip
        screens.append(screen)
        return screen

    try:
        yield start
    finally:
        for screen in screens:
            screen.close()


def emacs_env(tmp_path: Path, workspace: Path) -> dict[str, str]:
    """Emacs's environment in the pane: the test's HOME and XDG dirs, the workspace and the
    Python that runs lich-lsp for the init file."""
    env = dict(os.environ)
    env.update(
        {
            "HOME": str(tmp_path / "home"),
            "XDG_CONFIG_HOME": str(tmp_path / "config"),
            "XDG_STATE_HOME": str(tmp_path / "state"),
            "XDG_DATA_HOME": str(tmp_path / "data"),
            "LICH_TEST_WORKSPACE": str(workspace),
            "LICH_TEST_PYTHON": sys.executable,
            "TERM": "xterm-256color",
        }
    )
    return env


def after(marker: str, screen: str) -> str | None:
    """The screen's text after the last `marker`, or None when it is not shown."""
    at = screen.rfind(marker)
    return None if at < 0 else screen[at + len(marker) :]


def between(text: str, before: str, after: str) -> str:
    """The text between the last `before` and the next `after` ("" when either is missing)."""
    start = text.rfind(before)
    end = text.find(after, start + len(before)) if start >= 0 else -1
    return text[start + len(before) : end] if end >= 0 else ""


def header(screen: str) -> str:
    return screen.splitlines()[0] if screen else ""


def chat_ready(screen: Terminal) -> None:
    screen.shows(lambda s: "lich chat · new thread" in header(s), "the chat's header")


def send(screen: Terminal, text: str) -> None:
    screen.type(text)
    screen.keys("Enter")


# Eight rounds of four screen waits each: more than the default 120 s on a loaded machine.
@pytest.mark.timeout(300)
def test_cancel_after_a_failed_turn_never_sticks(
    terminal: Callable[[str], Terminal], tmp_path: Path, fake_provider: FakeProviderServer
) -> None:
    """CANCEL_ROUNDS times: a turn the provider fails (HTTP 400), then a turn that streams until
    C-c C-c stops it: the screen shows "Cancelled." under it and the header stops saying
    "running" with no other key pressed; the next message is taken each time, and the last one
    is answered."""
    turns: list[dict[str, object]] = []
    for _ in range(CANCEL_ROUNDS):
        turns += [{"status": 400}, ENDLESS]
    turns.append({"text": "All done."})
    fake_provider.script(*turns)
    write_provider_config(tmp_path, fake_provider)
    screen = terminal("chat")
    chat_ready(screen)
    for round_ in range(CANCEL_ROUNDS):
        send(screen, f"fail {round_}")
        screen.shows(
            lambda s, r=round_: "Error" in (after(f"You: fail {r}", s) or ""),
            f"the error of 'fail {round_}'",
        )
        send(screen, f"long {round_}")
        screen.shows(
            lambda s, r=round_: "tick" in (after(f"You: long {r}", s) or ""),
            f"'long {round_}' streaming",
        )
        screen.keys("C-c", "C-c")
        shown = screen.shows(
            lambda s, r=round_: (
                "Cancelled." in (after(f"You: long {r}", s) or "")
                and "running" not in header(s)
                and "cancelling" not in header(s)
            ),
            f"'long {round_}' cancelled and the chat idle",
        )
        assert "Error" not in (after(f"You: long {round_}", shown) or ""), shown
    send(screen, "are we done?")
    screen.shows(
        lambda s: "lich: All done." in (after("You: are we done?", s) or ""), "the last answer"
    )
    # Every cancelled turn's stream was closed by the server (the core stopped the task).
    assert len(fake_provider.requests) == 2 * CANCEL_ROUNDS + 1


def test_a_message_sent_while_a_turn_runs_is_queued_then_sent(
    terminal: Callable[[str], Terminal], tmp_path: Path, fake_provider: FakeProviderServer
) -> None:
    """While "first" streams, "second" and "third" are sent: both show as queued and nothing
    reaches the provider; C-c C-k takes "third" back to the input; C-c C-c ends the running turn
    and "second" is sent and answered; RET then sends "third" from the input."""
    fake_provider.script(ENDLESS, {"text": "Second answer."}, {"text": "Third answer."})
    write_provider_config(tmp_path, fake_provider)
    screen = terminal("chat")
    chat_ready(screen)
    send(screen, "first")
    screen.shows(lambda s: "tick" in (after("You: first", s) or ""), "'first' streaming")
    send(screen, "second")
    send(screen, "third")
    shown = screen.shows(
        lambda s: "Queued: second" in s and "Queued: third" in s, "the two queued messages"
    )
    assert "You: second" not in shown, shown
    assert len(fake_provider.requests) == 1
    screen.keys("C-c", "C-k")
    shown = screen.shows(
        lambda s: "Queued: third" not in s and re.search(r"^» third$", s, re.M) is not None,
        "'third' taken back to the input",
    )
    assert "Queued: second" in shown, shown
    screen.keys("C-c", "C-c")
    shown = screen.shows(
        lambda s: "lich: Second answer." in (after("You: second", s) or ""),
        "the queued message sent and answered",
    )
    assert "Cancelled." in (after("You: first", shown) or ""), shown
    assert "Queued:" not in shown, shown
    screen.keys("Enter")
    screen.shows(
        lambda s: "lich: Third answer." in (after("You: third", s) or ""), "'third' answered"
    )
    second = json.dumps(fake_provider.requests[1]["json"]["messages"])
    assert "second" in second and "third" not in second


def test_a_tool_call_line_opens_to_its_output(
    terminal: Callable[[str], Terminal], tmp_path: Path, fake_provider: FakeProviderServer
) -> None:
    """The read_file call is one line naming its file, its output hidden; TAB on the line shows
    the file's lines as the model read them, TAB again hides them."""
    fake_provider.script(
        {"tool_calls": [{"name": "read_file", "arguments": {"path": "hello.py"}}]},
        {"text": "Read it."},
    )
    write_provider_config(tmp_path, fake_provider)
    screen = terminal("chat")
    chat_ready(screen)
    send(screen, "look at the file")
    shown = screen.shows(lambda s: "lich: Read it." in s, "the answer")
    assert "  ▸ read_file hello.py: ok" in shown, shown
    assert "def hello():" not in shown, shown
    # Search back to the tool line (C-r), leave the search (RET), open it (TAB).
    screen.keys("C-r")
    screen.type("read_file")
    screen.keys("Enter", "Tab")
    shown = screen.shows(lambda s: "|def hello():" in s, "the read_file output")
    assert "  ▾ read_file hello.py: ok" in shown, shown
    assert "|    return 1" in shown, shown
    screen.keys("Tab")
    screen.shows(
        lambda s: "|def hello():" not in s and "▸ read_file hello.py: ok" in s,
        "the output hidden again",
    )
    # The answer was said in the chat only: the server did not repeat it in the echo area
    # (lich.ask origin "chat"), as the *Messages* log, shown alone, tells.
    screen.keys("C-h", "e")
    screen.keys("C-x", "o", "C-x", "1")
    shown = screen.shows(lambda s: "*Messages*" in s and "lich chat" not in s, "*Messages* alone")
    assert "Connected!" in shown, shown  # the log holds Eglot's messages of this session
    assert "Read it." not in shown, shown


def test_ghost_text_shows_and_tab_accepts_it(
    terminal: Callable[[str], Terminal],
    workspace: Path,
    tmp_path: Path,
    fake_provider: FakeProviderServer,
) -> None:
    """lich-completion-mode in hello.py: typing `x = max(va` shows `lue_a, value_b)` after the
    cursor in a colour of its own (not in the buffer); TAB inserts it, typing goes on after it,
    and the saved file holds the whole line. The model was asked with the typed text (Eglot had
    sent the edit before the request)."""
    fake_provider.script(*[{"text": "lue_a, value_b)"}] * 4)
    config = {
        "completion": {
            "kind": "openai_compat",
            "format": "completions",
            "base_url": fake_provider.url + "/v1",
            "model": "fim",
        },
        "completion_debounce_ms": 0,
    }
    user_config = tmp_path / "config" / "lich" / "config.json"
    user_config.parent.mkdir(parents=True)
    user_config.write_text(json.dumps(config), encoding="utf-8")
    screen = terminal("ghost")
    screen.shows(lambda s: "lich-ghost" in s and "def hello():" in s, "hello.py, ghost mode on")
    screen.type("x = max(va")
    screen.shows(lambda s: "x = max(value_a, value_b)" in s, "the ghost text")
    line = next(
        row
        for row in screen.text(escapes=True).splitlines()
        if "lue_a, value_b)" in re.sub(r"\x1b\[[0-9;]*m", "", row)
    )
    # The suggestion is drawn in another colour than the typed text: an escape between them.
    assert re.search(r"\(va\x1b\[[0-9;]*mlue_a", line), repr(line)
    assert workspace.joinpath("hello.py").read_text(encoding="utf-8").endswith("return 1\n")
    screen.keys("Tab")
    screen.type("  # ok")
    screen.shows(lambda s: "x = max(value_a, value_b)  # ok" in s, "the accepted text")
    screen.keys("C-x", "C-s")
    screen.shows(lambda s: "Wrote " in s, "the save")
    text = workspace.joinpath("hello.py").read_text(encoding="utf-8")
    # python-mode ends the file with a newline (require-final-newline).
    assert text == "def hello():\n    return 1\nx = max(value_a, value_b)  # ok\n", text
    fim = [r for r in fake_provider.requests if r["path"].endswith("/completions")]
    assert fim and fim[0]["json"]["prompt"].endswith("return 1\nx = max(va"), fim


def test_an_answer_is_drawn_as_markdown(
    terminal: Callable[[str], Terminal], tmp_path: Path, fake_provider: FakeProviderServer
) -> None:
    """With markdown-mode installed (Debian's elpa-markdown-mode, scripts/test.sh), the answer's
    `**bold**` and `` `code` `` are drawn in their own faces: on the terminal, an escape sequence
    starts each of them, while the text stays as the model wrote it."""
    fake_provider.script({"text": "Use **strong** words and `code_here` too."})
    write_provider_config(tmp_path, fake_provider)
    screen = terminal("chat")
    chat_ready(screen)
    send(screen, "format it")
    screen.shows(
        lambda s: "lich: Use **strong** words and `code_here` too." in s, "the answer as written"
    )
    # The answer streams in plain; once whole (the turn's result) it takes markdown's faces: an
    # escape sequence between "Use " and "strong" and between "and " and "code_here", where plain
    # text runs on.
    screen.shows(
        lambda s: (
            "\x1b[" in between(s, "Use ", "strong") and "\x1b[" in between(s, "and ", "code_here")
        ),
        "the answer in markdown's faces",
        escapes=True,
    )
