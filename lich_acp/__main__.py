"""`python -m lich_acp [--work-dir D]` / `lich acp`: lich's agent over ACP on stdio."""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sys
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="lich acp", description="lich's agent over the Agent Client Protocol (stdio)"
    )
    parser.add_argument("--work-dir", help="the default root (sessions use the client's cwd)")
    parser.add_argument("--log-level", default=os.environ.get("LICH_ACP_LOG", "WARNING"))
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    # stdout is the protocol: logs go to stderr.
    logging.basicConfig(
        stream=sys.stderr,
        level=args.log_level.upper(),
        format="lich-acp %(levelname)s %(name)s: %(message)s",
    )
    if args.work_dir:
        root = Path(args.work_dir).resolve()
        if not root.is_dir():
            print(f"lich acp: --work-dir {args.work_dir}: not a directory", file=sys.stderr)
            return 2
        os.chdir(root)
    from lich_core.startup import quiet_start

    with quiet_start():  # the ACP SDK's models load with the agent
        from lich_acp.agent import LichAcpAgent

    agent = LichAcpAgent(Path.cwd())
    try:
        asyncio.run(_serve(agent))
    except KeyboardInterrupt:
        return 130
    return 0


async def _serve(agent: object) -> None:
    from acp import run_agent

    from lich_acp.agent import LichAcpAgent

    assert isinstance(agent, LichAcpAgent)
    try:
        await run_agent(agent)  # type: ignore[arg-type]
    finally:
        await agent.close()


if __name__ == "__main__":
    sys.exit(main())
