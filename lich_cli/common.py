"""What every `lich` command shares: the workspace options, the workspace root and loading the
config (with its problems said once).

The CLI's side of "fail closed, per value" (docs/configuration.md, "One bad value is dropped
alone"): a bad value is named once on stderr and dropped alone, and the command runs with the
rest; a user config that cannot be parsed stops every command with exit status 2 (lich cannot know
the user's settings, and running restricted would only hide the typo), as an explicit `--config
FILE` that is missing or cannot be parsed does (load_config raises for that one).
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from lich_core.config import Config, load_config
from lich_core.errors import ConfigError

# The name of the CLI flags' layer in problems and in `lich config`'s source column.
CLI_FLAGS_SOURCE = "command-line flags"


def add_common_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--work-dir",
        default=None,
        help="workspace root tools are confined to (default: $LICH_WORK_DIR, else cwd)",
    )
    parser.add_argument(
        "--config",
        default=None,
        help="extra config file (trusted), read before the workspace's own",
    )


def cli_root(args: argparse.Namespace) -> str:
    """The workspace root: --work-dir, else LICH_WORK_DIR, else the current directory."""
    return os.path.abspath(args.work_dir or os.environ.get("LICH_WORK_DIR") or os.getcwd())


def refuse_broken_files(config: Config) -> None:
    """A ConfigError (exit status 2, lich_cli/main.py) for a trusted file that cannot be parsed:
    `FILE: invalid JSON at line L column C: ...`, as for a broken --config file."""
    if config.broken_files:
        problem = config.broken_files[0]
        raise ConfigError(f"{problem.source}: {problem.detail}")


def warn_problems(config: Config) -> None:
    """Each value that was dropped or replaced (and each unknown key), one line on stderr."""
    for problem in config.problems:
        print(problem.text(), file=sys.stderr)


def warn_ignored(config: Config) -> None:
    """Say once per command which values were dropped, which workspace settings were not
    applied, and how to trust them."""
    warn_problems(config)
    trust = config.trust
    if trust.state not in ("untrusted", "refused") or not trust.ignored:
        return
    print(trust.summary(), file=sys.stderr)
    if trust.state == "untrusted":
        print(
            f"lich: to apply them, review {trust.config_path} and run `lich trust`", file=sys.stderr
        )


def load_cli_config(
    args: argparse.Namespace, overrides: dict[str, Any] | None = None, *, quiet: bool = False
) -> Config:
    """The effective config for a command (`args.work_dir`, `args.config`, the flags as
    `overrides`). Raises ConfigError when the user config or the --config file cannot be parsed;
    otherwise says each problem once on stderr (unless `quiet`: the command shows them itself)."""
    config = load_config(
        cli_root(args),
        overrides=overrides,
        config_file=getattr(args, "config", None),
        overrides_source=CLI_FLAGS_SOURCE,
    )
    refuse_broken_files(config)
    if not quiet:
        warn_ignored(config)
    return config
