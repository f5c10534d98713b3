"""Child processes a tool starts (terminal, disk_usage) and the environment tools see (env_get)."""

from __future__ import annotations

import os
import signal

from lich_core.tools.secrets import configured_key_env_names, scrubbed_env
from lich_core.tools.types import ToolContext


def tool_process_env(ctx: ToolContext) -> dict[str, str]:
    """The environment a tool's child process gets.

    An empty ctx.env is ToolContext's default, meaning "not configured" (a direct call), so the
    server's own environment is used; either way provider API keys are removed: the well-known
    names and every variable a configured provider reads its key from (`api_key_env` in
    ctx.settings, which is the config when the call comes through the runtime).
    """
    return scrubbed_env(ctx.env or os.environ, configured_key_env_names(ctx.settings))


def kill_process_group(pgid: int) -> None:
    """SIGKILL a whole process group (a child started with start_new_session=True).

    Without process groups (Windows) only the process itself can be terminated.
    """
    try:
        if hasattr(os, "killpg"):
            os.killpg(pgid, signal.SIGKILL)
        else:
            os.kill(pgid, signal.SIGTERM)
    except OSError:
        pass  # the group is already gone (or not ours to signal)
