"""A program in a real terminal for the tests that use it as a person does: a tmux session on a
tmux server of its own (`tmux -L socket`), keys in with send-keys, the screen out with
capture-pane.

A wait reads the screen again each time the pane writes (tmux copies the pane's output into a
FIFO with pipe-pane), so it blocks on the terminal's output, never on a clock; `wait_s` only
bounds a hang, which then fails with the screen in the message."""

from __future__ import annotations

import os
import select
import shlex
import shutil
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import pytest

SCREEN_WAIT_S = 90.0
# Stopping the tmux server at the end of a test.
KILL_TIMEOUT_S = 30.0


def require_tmux() -> None:
    """Skips without tmux on PATH; fails instead under CI=true (scripts/test.sh installs it)."""
    if shutil.which("tmux") is None:
        if os.environ.get("CI") == "true":
            pytest.fail("no `tmux` on PATH under CI=true (scripts/test.sh installs it)")
        pytest.skip("no `tmux` on PATH")


def shell_words(words: Sequence[str]) -> str:
    """`words` as one shell command line (what new-session runs)."""
    return " ".join(shlex.quote(word) for word in words)


class Terminal:
    """One tmux pane: `start` opens it running a shell command, `keys`/`type` send keys, `text`
    reads the screen, `shows` waits for it, `wait_for` waits on a tmux channel the command
    signals (`tmux -L socket wait-for -S channel`), `close` stops the tmux server."""

    def __init__(
        self,
        socket: str,
        session: str,
        fifo: Path,
        wait_s: float = SCREEN_WAIT_S,
        capture: Sequence[str] = (),
    ) -> None:
        self.socket = socket
        self.session = session
        self.wait_s = wait_s
        # Extra capture-pane flags, e.g. ("-J", "-S", "-"): wrapped lines joined, scrollback too.
        self.capture = tuple(capture)
        os.mkfifo(fifo)
        self.reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
        # Our own writer keeps the FIFO open: no end-of-file before we are done with it.
        self.keeper = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
        self.tmux("pipe-pane", "-t", session, "-O", f"cat > {shlex.quote(str(fifo))}")

    @classmethod
    def start(
        cls,
        socket: str,
        session: str,
        command: str,
        *,
        width: int,
        height: int,
        cwd: Path,
        fifo: Path,
        env: Mapping[str, str] | None = None,
        options: Sequence[str] = (),
        wait_s: float = SCREEN_WAIT_S,
        capture: Sequence[str] = (),
    ) -> Terminal:
        """A fresh tmux server on `socket` (it and the pane's shell get `env`, or this process's
        environment) running `command` in a `width` x `height` pane; `options` go to new-session
        before the command (e.g. `-eKEY=VALUE`)."""
        require_tmux()
        run_tmux(
            socket,
            "new-session", "-d", "-s", session, "-x", str(width), "-y", str(height),
            "-c", str(cwd), *options, command,
            env=env,
            timeout=wait_s,
        )  # fmt: skip
        try:
            return cls(socket, session, fifo, wait_s=wait_s, capture=capture)
        except BaseException:
            kill_server(socket)
            raise

    def tmux(self, *args: str) -> str:
        """A tmux command on this terminal's server; its output (it must succeed)."""
        return run_tmux(self.socket, *args, timeout=self.wait_s)

    def keys(self, *keys: str) -> None:
        """tmux key names ("Enter", "Escape", "C-s") or literal text, in order."""
        self.tmux("send-keys", "-t", self.session, *keys)

    def type(self, text: str) -> None:
        """`text` typed literally (send-keys -l: no key names)."""
        self.keys("-l", text)

    def text(self, escapes: bool = False) -> str:
        """The screen; with its colour escapes when `escapes` (capture-pane -e)."""
        flags = ["-e"] if escapes else []
        return self.tmux("capture-pane", "-p", *flags, *self.capture, "-t", self.session)

    def shows(self, predicate: Callable[[str], bool], what: str, escapes: bool = False) -> str:
        """The screen once `predicate` holds for it; fails after `wait_s` without it."""
        deadline = time.monotonic() + self.wait_s
        while True:
            screen = self.text(escapes)
            if predicate(screen):
                return screen
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not select.select([self.reader], [], [], remaining)[0]:
                raise AssertionError(f"the screen never showed {what}:\n{screen}")
            os.read(self.reader, 65536)

    def wait_for(self, channel: str, what: str) -> None:
        """Blocks until the pane's command signals `channel`; fails with the screen and `what`
        after `wait_s`. A server already gone counts as signalled: the command signals as its
        last step, and its pane (the session, then the server) may end before we ask."""
        try:
            done = subprocess.run(
                ["tmux", "-L", self.socket, "wait-for", channel],
                capture_output=True,
                text=True,
                timeout=self.wait_s,
            )
        except subprocess.TimeoutExpired:
            raise AssertionError(f"{what}:\n{self.text()}") from None
        gone = "no server running" in done.stderr or "server exited" in done.stderr
        assert done.returncode == 0 or gone, (channel, done.stderr)

    def close(self) -> None:
        os.close(self.keeper)
        os.close(self.reader)
        kill_server(self.socket)


def run_tmux(
    socket: str, *args: str, env: Mapping[str, str] | None = None, timeout: float = SCREEN_WAIT_S
) -> str:
    done = subprocess.run(
        ["tmux", "-L", socket, *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=None if env is None else dict(env),
    )
    assert done.returncode == 0, (args, done.stderr)
    return done.stdout


def kill_server(socket: str) -> None:
    subprocess.run(
        ["tmux", "-L", socket, "kill-server"], capture_output=True, timeout=KILL_TIMEOUT_S
    )
