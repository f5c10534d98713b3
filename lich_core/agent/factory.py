"""build_agent: one call that wires models, tools, plugins and sessions from a config."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

from lich_core.agent.loop import Agent
from lich_core.agent.sessions import SessionStore
from lich_core.providers.base import Model
from lich_core.runtime import ToolRuntime, build_tool_runtime
from lich_core.tools.executor import CallCheck
from lich_core.workspace import Workspace

log = logging.getLogger("lich.agent")


def build_agent(
    config: Mapping[str, Any],
    *,
    workspace: Workspace | None = None,
    call_checks: Sequence[CallCheck] = (),
    env: Mapping[str, str] | None = None,
    model: Model | None = None,
    compress_model: Model | None = None,
    session_store: SessionStore | None = None,
    runtime: ToolRuntime | None = None,
) -> Agent:
    """An Agent for `config`.

    `model` replaces the configured chat chain (and, unless `compress_model` is given, the
    compress chain too). A misconfigured provider raises ConfigError/ProviderError with one line.
    Plugins that fail to load are warnings (logged now, and reported as `plugin_warning` events
    at the start of each run); the agent is built without them. `runtime`: a tool runtime built
    once for this config (the language server shares one per config generation, so plugin modules
    run once, not once per task); `call_checks` and `env` then come from it.
    """
    from lich_core.providers.factory import build_model

    if model is None:
        model = build_model(config, "chat")
        if compress_model is None:
            compress_model = build_model(config, "compress")
    if runtime is None:
        runtime = build_tool_runtime(config, env=env, call_checks=call_checks)
    plugins = runtime.plugins
    return Agent(
        model=model,
        runtime=runtime,
        config=config,
        compress_model=compress_model,
        plugins=plugins,
        session_store=session_store or SessionStore.for_config(config),
        workspace=workspace,
    )
