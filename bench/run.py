"""Benchmark runner.

Each `bench/bench_<area>.py` module defines `run(quick: bool) -> list[Figure]`. A figure is one
measurement printed next to a reference measured in the same run (GNU find, rg, plain httpx, a
bare pygls server...), with the ratio and either its target (what a user sees: time to first
token, editor latency, search and edit on big trees) or, for an information line (per-call and
per-turn overheads no user waits on), the ceiling it must stay under. `--quick` makes inputs
smaller.

    python -m bench            # everything
    python -m bench hashline   # only modules whose name contains "hashline"
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import json
import os
import pkgutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path


@dataclass
class Figure:
    name: str
    value: float
    unit: str
    reference_name: str = ""
    reference_value: float | None = None
    target: str = ""  # e.g. "<= 2.0x" or "<= 10 ms"
    note: str = ""
    # An information line's bound, in `unit`: not a target to improve on, a ceiling to stay under.
    ceiling: float | None = None

    @property
    def ratio(self) -> float | None:
        if self.reference_value in (None, 0):
            return None
        return self.value / self.reference_value


def best_of(fn: Callable[[], object], repeat: int = 5) -> float:
    """Best wall time in seconds over `repeat` runs (least disturbed by other load)."""
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def format_figure(figure: Figure) -> str:
    line = f"{figure.name:<52} {figure.value:>12.3f} {figure.unit:<6}"
    if figure.reference_value is not None:
        line += f"  ref {figure.reference_name}: {figure.reference_value:.3f} {figure.unit}"
        if figure.ratio is not None:
            line += f"  ratio {figure.ratio:.2f}x"
    if figure.target:
        line += f"  (target {figure.target})"
    if figure.ceiling is not None:
        over = "  OVER THE CEILING" if figure.value > figure.ceiling else ""
        line += f"  (information; ceiling {figure.ceiling:g} {figure.unit}{over})"
    if figure.note:
        line += f"  [{figure.note}]"
    return line


def discover() -> list[str]:
    folder = Path(__file__).parent
    return sorted(
        info.name for info in pkgutil.iter_modules([str(folder)]) if info.name.startswith("bench_")
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "only", nargs="*", help="run modules whose name contains one of these words"
    )
    parser.add_argument("--quick", action="store_true", help="smaller inputs, fewer repeats")
    parser.add_argument("--json", action="store_true", help="print figures as JSON lines")
    args = parser.parse_args(argv)
    # As an installed package is (pip compiles it): an environment with PYTHONDONTWRITEBYTECODE=1
    # would make only lich, installed editable, recompile at every server start it times.
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    with tempfile.TemporaryDirectory(prefix="lich-bench-home-") as home:
        isolate_user_dirs(Path(home))
        return run_benchmarks(args)


USER_DIRS = (
    ("XDG_CONFIG_HOME", ".config"),
    ("XDG_STATE_HOME", ".local/state"),
    ("XDG_DATA_HOME", ".local/share"),
    ("XDG_CACHE_HOME", ".cache"),
)


def isolate_user_dirs(home: Path) -> None:
    """HOME and the XDG dirs in a temp dir, for this process and the servers it starts: a
    benchmark never reads the user's config or trust records, nor writes transcripts there."""
    os.environ["HOME"] = str(home)
    for variable, folder in USER_DIRS:
        (home / folder).mkdir(parents=True, exist_ok=True)
        os.environ[variable] = str(home / folder)


@contextlib.contextmanager
def user_dirs_in(home: Path) -> Iterator[None]:
    """isolate_user_dirs for the block, the variables given back afterwards (a bench module
    run as a script, or one that writes state it must not leave to the next)."""
    names = ["HOME", *(variable for variable, _ in USER_DIRS)]
    saved = {name: os.environ.get(name) for name in names}
    try:
        isolate_user_dirs(home)
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def run_benchmarks(args: argparse.Namespace) -> int:
    failures = 0
    for name in discover():
        if args.only and not any(word in name for word in args.only):
            continue
        module = importlib.import_module(f"bench.{name}")
        print(f"== {name}", flush=True)
        try:
            figures = module.run(args.quick)
        except Exception as err:  # noqa: BLE001 - one broken benchmark must not hide the rest
            failures += 1
            print(f"   failed: {type(err).__name__}: {err}", file=sys.stderr)
            continue
        for figure in figures:
            if args.json:
                print(json.dumps({**asdict(figure), "ratio": figure.ratio}))
            else:
                print("   " + format_figure(figure), flush=True)
    return 1 if failures else 0
