"""What every `lich` command shares: the workspace options, the workspace root and loading the
config (with its warnings said once)."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from lich_core.config import Config, load_config


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


def warn_ignored(config: Config) -> None:
    """Say once per command which keys look misspelled, which workspace settings were not
    applied, and how to trust them."""
    for warning in getattr(config, "warnings", []):
        print(warning, file=sys.stderr)
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
    config = load_config(cli_root(args), overrides=overrides, config_file=args.config)
    if not quiet:
        warn_ignored(config)
    return config
