"""`lich demo`: the agent at work in a couple of seconds, with no API key and no network.

A bundled sample workspace (sample/) is copied to a temp dir, and a recorded conversation
(recording.jsonl) is played by the replay provider through the real language server
(`python -m lich_lsp` over stdio) and a headless editor that prints each step: the prompt, the
model's text, the tool calls and their results, every WorkspaceEdit as a unified diff, the
approval, the final answer, with the server's progress line. `--editor nvim` plays the same
demo in Neovim with lich's plugin instead. The temp dir is removed afterwards (`--keep` keeps
it), so the demo leaves nothing behind, wherever it is run.
"""

from __future__ import annotations

import argparse
import asyncio
import io
import sys

from lich_cli.demo.sample_files import DemoSetup, prepare

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2

NEXT_STEPS = """\
Next:
  a real provider   set OPENAI_API_KEY or ANTHROPIC_API_KEY (or run Ollama on localhost), then in
                    a project of yours: lich "explain what main.py does"; all settings: docs/providers.md
                    (the sample was a temp copy, now removed: `lich demo --keep` keeps it to try it on)
  your editor       VS Code, Neovim, Emacs, Helix, Zed, ...: docs/getting-started.md
  this demo there   lich demo --editor nvim (in a terminal)"""


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="lich demo",
        description="Watch lich fix a bug in a sample project: a recorded conversation played through the real "
        "language server. No API key, no network; the sample is a temp copy, removed afterwards.",
    )
    p.add_argument(
        "--editor",
        choices=("nvim",),
        default=None,
        help="play the demo in Neovim with lich's plugin",
    )
    p.add_argument(
        "--nvim-plugin",
        default=None,
        metavar="DIR",
        help="lich's Neovim plugin (default: the bundled copy)",
    )
    p.add_argument(
        "--color",
        choices=("auto", "always", "never"),
        default="auto",
        help="colour the output (auto: on a terminal, unless NO_COLOR is set)",
    )
    p.add_argument(
        "--keep", action="store_true", help="keep the temp workspace and print where it is"
    )
    return p


def main(argv: list[str]) -> int:
    args = parser().parse_args(argv)
    if args.editor == "nvim":
        # Both refusals come before the sample is copied: nothing to clean up.
        from lich_cli.demo.nvim import NvimUnavailable, find_nvim, require_terminal

        for check, exit_code in ((find_nvim, EXIT_FAILED), (require_terminal, EXIT_USAGE)):
            try:
                check()
            except NvimUnavailable as err:
                print(str(err), file=sys.stderr)
                return exit_code
    setup = prepare()
    try:
        if args.editor == "nvim":
            from lich_cli.demo.nvim import NvimUnavailable, run_in_nvim

            try:
                return run_in_nvim(setup, args.nvim_plugin)
            except NvimUnavailable as err:
                print(str(err), file=sys.stderr)
                return EXIT_FAILED
        return _run_headless(setup, args.color)
    finally:
        if args.keep:
            print(f"lich demo: the workspace is kept in {setup.workspace}", file=sys.stderr)
        else:
            setup.remove()


def _run_headless(setup: DemoSetup, colour_choice: str) -> int:
    from lich_cli.demo.headless import run_headless
    from lich_cli.demo.render import Printer, use_colour

    out = sys.stdout
    if isinstance(out, io.TextIOWrapper):
        # The server's titles carry "…": a terminal that cannot show it gets "?", not a crash.
        out.reconfigure(errors="replace")
    live = bool(getattr(out, "isatty", lambda: False)())
    printer = Printer(out, colour=use_colour(out, colour_choice), live=live)
    printer.line(
        printer.style("lich demo", "bold")
        + ": a recorded conversation, played through the real language server"
    )
    printer.step("workspace", f"{setup.workspace} (a temp copy of the bundled sample)", "dim")
    outcome = asyncio.run(run_headless(setup, printer))
    printer.line()
    edited = ", ".join(
        sorted(_relative(uri, setup) for uri in (outcome.result or {}).get("edited") or [])
    )
    if outcome.ok:
        printer.line(
            f"lich demo: {_count(outcome.edits, 'edit')} to {edited or 'no file'}, {_count(outcome.approvals, 'approval')}, "
            f"{_count(outcome.tool_calls, 'tool call')} in {outcome.elapsed_s:.1f} s; no API key, nothing sent anywhere."
        )
        printer.line(NEXT_STEPS)
        return EXIT_OK
    problems = "; ".join(outcome.problems + [f"{name} failed" for name in outcome.failed_tools])
    stopped = (outcome.result or {}).get("stopped_reason", "no result")
    printer.line(
        f"lich demo: the demo did not complete ({stopped}{': ' + problems if problems else ''})"
    )
    return EXIT_FAILED


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}{'' if number == 1 else 's'}"


def _relative(uri: str, setup: DemoSetup) -> str:
    from lich_cli.demo.headless import path_of

    path = path_of(uri)
    try:
        return path.relative_to(setup.workspace).as_posix()
    except ValueError:
        return str(path)
