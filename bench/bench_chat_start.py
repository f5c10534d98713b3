"""`lich chat`'s start (#46): from the process's spawn to its prompt on the screen, in a pty.

The real `python -m lich_cli chat` in a pseudo-terminal of 120x40, the bench acting as the
terminal (it answers prompt_toolkit's cursor position request). Two moments:

- the prompt drawn (`›`): lich draws it before prompt_toolkit loads, with the terminal set to
  keep what is typed until the input line takes it (nothing typed is lost or echoed twice);
  target <= 300 ms;
- the input line live (prompt_toolkit's status line, "Ctrl-D quits", drawn): information.

Then Ctrl-D quits. The agent (providers, tools) is built in the background after that, so this
is what a user waits for. Median and worst over several runs, against a reference measured in
the same run, interleaved: `python -c` printing a line (an interpreter's start, nothing loaded).
"""

from __future__ import annotations

import fcntl
import os
import select
import statistics
import struct
import subprocess
import sys
import tempfile
import termios
import time
from pathlib import Path

from bench.run import Figure

TARGET_MS = 300.0
SAMPLES = 15
QUICK_SAMPLES = 5
WAIT_S = 30.0
PROMPT_DRAWN = "›".encode()
INPUT_LIVE = b"Ctrl-D quits"
REFERENCE_LINE = b"ready"
REFERENCE = [sys.executable, "-c", "print('ready', flush=True)"]
ROWS, COLUMNS = 40, 120
# prompt_toolkit asks the terminal where the cursor is before it draws below the prompt.
CPR_REQUEST = b"\x1b[6n"
CPR_ANSWER = b"\x1b[1;1R"


def spawn_to_output_ms(
    argv: list[str], wanted: tuple[bytes, ...], cwd: Path, env: dict[str, str]
) -> list[float]:
    """Milliseconds from starting `argv` on a fresh pty to each of `wanted` in its output (in
    order); then Ctrl-D and the process's end."""
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", ROWS, COLUMNS, 0, 0))
    started = time.perf_counter()
    proc = subprocess.Popen(
        argv, cwd=cwd, env=env, stdin=slave, stdout=slave, stderr=slave, start_new_session=True
    )
    os.close(slave)
    seen = b""
    shown_at: list[float] = []
    deadline = time.monotonic() + WAIT_S
    try:
        while len(shown_at) < len(wanted) and time.monotonic() < deadline:
            if not select.select([master], [], [], deadline - time.monotonic())[0]:
                break
            try:
                chunk = os.read(master, 65536)
            except OSError:  # the child closed the terminal
                break
            seen += chunk
            if CPR_REQUEST in chunk:
                os.write(master, CPR_ANSWER)  # as a terminal does: prompt_toolkit waits for it
            now = time.perf_counter()
            while len(shown_at) < len(wanted) and wanted[len(shown_at)] in seen:
                shown_at.append(now)
        if len(shown_at) < len(wanted):
            missing = wanted[len(shown_at)]
            raise RuntimeError(f"{argv[:4]} never showed {missing!r}: {seen[-400:]!r}")
        os.write(master, b"\x04")  # Ctrl-D: quit
        while select.select([master], [], [], WAIT_S)[0]:
            try:
                if not os.read(master, 65536):
                    break
            except OSError:
                break
        proc.wait(timeout=WAIT_S)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(master)
    return [(at - started) * 1000 for at in shown_at]


def run(quick: bool) -> list[Figure]:
    samples = QUICK_SAMPLES if quick else SAMPLES
    project = Path(__file__).resolve().parent.parent
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(project), env.get("PYTHONPATH")]))
    env["TERM"] = "xterm-256color"
    # A provider that is never called (nothing is sent): the background build needs one.
    env.update(LICH_BASE_URL="http://127.0.0.1:9/v1", LICH_MODEL="m")
    drawn_ms: list[float] = []
    live_ms: list[float] = []
    reference_ms: list[float] = []
    with tempfile.TemporaryDirectory(prefix="lich-bench-chat-") as work:
        root = Path(work)
        chat = [sys.executable, "-m", "lich_cli", "chat", "--work-dir", str(root)]
        markers = (PROMPT_DRAWN, INPUT_LIVE)
        spawn_to_output_ms(chat, markers, root, env)  # warm-up: bytecode compiled
        for _ in range(samples):
            reference_ms += spawn_to_output_ms(REFERENCE, (REFERENCE_LINE,), root, env)
            drawn, live = spawn_to_output_ms(chat, markers, root, env)
            drawn_ms.append(drawn)
            live_ms.append(live)
    median, worst = statistics.median(drawn_ms), max(drawn_ms)
    what = f"{samples} starts of `python -m lich_cli chat` in a {COLUMNS}x{ROWS} pty"
    return [
        Figure(
            name="lich chat: spawn -> prompt drawn, median",
            value=median,
            unit="ms",
            reference_name="python -c print",
            reference_value=statistics.median(reference_ms),
            target=f"<= {TARGET_MS:g} ms",
            note=f"{'target holds' if median <= TARGET_MS else 'TARGET MISSED'}; {what}",
        ),
        Figure(
            name="lich chat: spawn -> prompt drawn, worst",
            value=worst,
            unit="ms",
            reference_name="python -c print",
            reference_value=max(reference_ms),
            target=f"<= {TARGET_MS:g} ms",
            note=f"{'target holds' if worst <= TARGET_MS else 'TARGET MISSED'}; as above",
        ),
        Figure(
            name="lich chat: spawn -> input line live, median",
            value=statistics.median(live_ms),
            unit="ms",
            reference_name="python -c print",
            reference_value=statistics.median(reference_ms),
            note=f"information: prompt_toolkit's status line drawn; worst {max(live_ms):.0f} ms",
        ),
    ]


if __name__ == "__main__":
    for figure in run(quick="--quick" in sys.argv):
        print(figure)
