"""`lich "task"`'s exit (#44): from the final answer line on stdout to the process's exit.

The real `python -m lich_cli "task"` against the fake provider in its own process (standalone
mode, loopback, a one-turn answer); the bench reads the child's stdout pipe and takes the time
the final answer line arrives, then the time `waitpid` returns. p50 and p99 over many runs,
target p99 <= 30 ms, against a reference measured in the same run, interleaved: `python -c`
printing a line and exiting, timed the same way (an interpreter's own exit with nothing loaded).

Information line: the same run through `lich_cli.main.main(argv)` called with its arguments,
which returns instead of leaving through exit_now: the interpreter's teardown of a task run's
heap and modules, what the CLI spent before exit_now.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.run import Figure

ANSWER = "The exit bench's final answer."
TARGET_P99_MS = 30.0
SAMPLES = 40
QUICK_SAMPLES = 12
RUN_TIMEOUT_S = 60
REFERENCE = [sys.executable, "-c", f"print({ANSWER!r}, flush=True)"]
# The same task run, main(argv) called with its arguments: it returns, the interpreter tears down.
TEARDOWN = [
    sys.executable,
    "-c",
    "import sys; from lich_cli.main import main; raise SystemExit(main(sys.argv[1:]))",
]
PROVIDER_KEYS = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "LICH_API_KEY")


def line_to_exit_ms(argv: list[str], cwd: Path, env: dict[str, str]) -> float:
    """Run `argv`; milliseconds from ANSWER's line on its stdout to its exit (exit code 0)."""
    proc = subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    wanted = ANSWER.encode() + b"\n"
    seen = b""
    line_at: float | None = None
    deadline = time.monotonic() + RUN_TIMEOUT_S
    while True:
        chunk = os.read(proc.stdout.fileno(), 65536)  # blocks until bytes or end of file
        if line_at is None and chunk:
            seen += chunk
            if wanted in seen:
                line_at = time.perf_counter()
        if not chunk or time.monotonic() > deadline:
            break
    proc.wait(timeout=RUN_TIMEOUT_S)
    exited_at = time.perf_counter()
    stderr = proc.stderr.read().decode(errors="replace")
    proc.stdout.close()
    proc.stderr.close()
    if proc.returncode != 0 or line_at is None:
        raise RuntimeError(f"{argv[:4]} exited {proc.returncode} without the answer: {stderr}")
    return (exited_at - line_at) * 1000


def _percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(fraction * (len(ordered) - 1))))]


def run(quick: bool) -> list[Figure]:
    from tests.support.fake_provider import standalone_process

    samples = QUICK_SAMPLES if quick else SAMPLES
    env = {k: v for k, v in os.environ.items() if k not in PROVIDER_KEYS}
    project = Path(__file__).resolve().parent.parent
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(project), env.get("PYTHONPATH")]))
    lich_ms: list[float] = []
    teardown_ms: list[float] = []
    reference_ms: list[float] = []
    # One turn per task run, a few over for the warm-up run.
    with standalone_process([{"text": ANSWER}] * (2 * samples + 4)) as url:
        with tempfile.TemporaryDirectory(prefix="lich-bench-exit-") as work:
            root = Path(work)
            task = [
                "say it",
                "--work-dir",
                str(root),
                "--base-url",
                url + "/v1",
                "--model",
                "m",
                "--provider-kind",
                "openai_compat",
                "--quiet",
            ]
            lich = [sys.executable, "-m", "lich_cli", *task]
            line_to_exit_ms(lich, root, env)  # warm-up: bytecode compiled, caches filled
            for _ in range(samples):
                reference_ms.append(line_to_exit_ms(REFERENCE, root, env))
                lich_ms.append(line_to_exit_ms(lich, root, env))
                teardown_ms.append(line_to_exit_ms([*TEARDOWN, *task], root, env))
    p50, p99 = statistics.median(lich_ms), _percentile(lich_ms, 0.99)
    ref_p50, ref_p99 = statistics.median(reference_ms), _percentile(reference_ms, 0.99)
    holds = "target holds" if p99 <= TARGET_P99_MS else "TARGET MISSED"
    what = f'{samples} runs of `python -m lich_cli "task"` against the standalone fake provider'
    return [
        Figure(
            name='lich "task": final answer line -> exit, p50',
            value=p50,
            unit="ms",
            reference_name="python -c print",
            reference_value=ref_p50,
            target=f"<= {TARGET_P99_MS:g} ms",
            note=f"{'target holds' if p50 <= TARGET_P99_MS else 'TARGET MISSED'}; {what}",
        ),
        Figure(
            name='lich "task": final answer line -> exit, p99',
            value=p99,
            unit="ms",
            reference_name="python -c print",
            reference_value=ref_p99,
            target=f"<= {TARGET_P99_MS:g} ms",
            note=f"{holds}; as above",
        ),
        Figure(
            name='lich "task" with the interpreter\'s teardown, p50',
            value=statistics.median(teardown_ms),
            unit="ms",
            reference_name="python -c print",
            reference_value=ref_p50,
            note="information: main(argv) returns instead of exit_now (the exit before #44); "
            f"p99 {_percentile(teardown_ms, 0.99):.1f} ms",
        ),
    ]
