"""Agent loop overhead per turn.

A replay model (recorded turns, no network) asks for a trivial tool on every turn, then answers.
Measured: `Agent.run` with its full machinery (events to a listener, session JSONL written as it
goes, compression checks, plugin-free). Reference, in the same process: a bare loop that calls the
same model and the same tool and appends the same messages, with nothing else. No user waits on
this overhead (every real turn waits on a model): an information line, under a ceiling (#34).
"""

from __future__ import annotations

import asyncio
import json
import tempfile
from pathlib import Path
from typing import Any

from bench.run import Figure, best_of
from lich_core.agent.loop import Agent
from lich_core.agent.messages import Message, ToolCall
from lich_core.agent.sessions import SessionStore
from lich_core.config import load_config
from lich_core.providers.replay import ReplayModel
from lich_core.runtime import ToolRuntime
from lich_core.tools.executor import ToolExecutor
from lich_core.tools.registry import ToolRegistry
from lich_core.tools.types import FunctionTool, ToolContext, ToolResult
from lich_core.vocabulary import format_tool_result

CEILING_MS_PER_TURN = 0.2


async def _noop(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    return ToolResult(ok=True, output=f"ok {args.get('n')}")


NOOP = FunctionTool(
    "noop", "Does nothing.", {"type": "object", "properties": {"n": {"type": "integer"}}}, _noop
)


def _write_replay(path: Path, turns: int) -> None:
    lines = []
    for index in range(turns - 1):
        call = ToolCall(id=f"c{index}", name="noop", arguments={"n": index})
        message = Message(role="assistant", content="working", tool_calls=[call])
        lines.append(
            json.dumps(
                {"message": message.to_dict(), "usage": {"input_tokens": 10, "output_tokens": 3}}
            )
        )
    lines.append(json.dumps({"message": {"role": "assistant", "content": "done"}}))
    path.write_text("\n".join(lines) + "\n")


async def _agent_run(work_dir: Path, replay: Path, turns: int) -> None:
    config = load_config(work_dir, overrides={"max_turns": turns + 1}, env={"HOME": str(work_dir)})
    registry = ToolRegistry([NOOP])
    runtime = ToolRuntime(
        registry, registry, ToolExecutor(registry, work_dir=work_dir, settings=config), config
    )
    agent = Agent(
        model=ReplayModel(replay),
        runtime=runtime,
        config=config,
        session_store=SessionStore(work_dir / "sessions"),
    )
    events: list[Any] = []
    result = await agent.run("benchmark", on_event=events.append)
    assert result.stopped_reason == "final" and result.turns_used == turns, result.stopped_reason


async def _bare_run(work_dir: Path, replay: Path, turns: int) -> None:
    model = ReplayModel(replay)
    registry = ToolRegistry([NOOP])
    definitions = registry.definitions()
    ctx = ToolContext(work_dir=work_dir)
    messages = [Message(role="system", content="sys"), Message(role="user", content="benchmark")]
    for _ in range(turns):
        response = await model.complete(messages, definitions)
        messages.append(response.message)
        if not response.message.tool_calls:
            return
        for call in response.message.tool_calls:
            result = await registry.get(call.name).execute(call.arguments, ctx)  # type: ignore[union-attr]
            messages.append(
                Message(
                    role="tool",
                    content=format_tool_result(result),
                    tool_call_id=call.id,
                    name=call.name,
                )
            )


def run(quick: bool) -> list[Figure]:
    turns = 50 if quick else 200
    repeat = 3 if quick else 5
    with tempfile.TemporaryDirectory() as folder:
        work_dir = Path(folder)
        replay = work_dir / "turns.jsonl"
        _write_replay(replay, turns)
        agent_s = best_of(lambda: asyncio.run(_agent_run(work_dir, replay, turns)), repeat)
        bare_s = best_of(lambda: asyncio.run(_bare_run(work_dir, replay, turns)), repeat)
    agent_ms = agent_s * 1000 / turns
    bare_ms = bare_s * 1000 / turns
    return [
        Figure(
            name=f"agent loop per turn ({turns} turns, replay + trivial tool)",
            value=agent_ms,
            unit="ms",
            reference_name="bare loop, same model and tool",
            reference_value=bare_ms,
            ceiling=CEILING_MS_PER_TURN,
            note=f"overhead {agent_ms - bare_ms:.3f} ms/turn (events, session log, executor, compression check)",
        )
    ]


if __name__ == "__main__":
    from bench.run import format_figure

    for figure in run(quick=False):
        print(format_figure(figure))
