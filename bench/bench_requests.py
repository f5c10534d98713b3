"""What each request costs in bytes (#35).

Tool schemas: the JSON of the tool definitions the agent sends with every request under the
default config (the default tools, capabilities all granted, LICH_ALLOW_SELF_COMMIT unset), target
<= 8 KiB. One-edit task: the OpenAI-compatible request bodies (as lich_core.providers.http encodes
them) of a scripted read_file, apply_patch, answer task on a two-line file, summed over its three
requests: an information line. The issue's reference, aider's bytes for the same task, is left
out: aider is not installable here.
"""

from __future__ import annotations

import asyncio
import json
import os
import tempfile
from collections import deque
from collections.abc import Sequence
from pathlib import Path

from bench.run import Figure
from lich_core.agent.loop import Agent
from lich_core.config import load_config
from lich_core.hashline.anchors import line_hash
from lich_core.providers.base import NO_CALL_OPTIONS, CallOptions
from lich_core.providers.openai_compat import OpenAICompatModel
from lich_core.runtime import build_tool_runtime
from lich_core.vocabulary import Message, ModelResponse, ToolCall, ToolDefinition, json_text

TOOL_SCHEMAS_TARGET_BYTES = 8 * 1024
# Just above where the one-edit task stands after the cut (about 33 KB, 63 KB before it): a
# ceiling against regressions. The target (<= 3x aider's 9 KB) cannot be checked here.
ONE_EDIT_CEILING_BYTES = 36 * 1024
SELF_COMMIT_ENV = "LICH_ALLOW_SELF_COMMIT"


class _MeasuringModel:
    """Answers from a script and counts the bytes of the body an OpenAI-compatible provider
    would POST for each request."""

    reports_sent = False
    stops_on_cancel = False
    name = "bench"

    def __init__(self, answers: Sequence[Message]) -> None:
        self.answers = deque(answers)
        self.wire = OpenAICompatModel(model="bench-model", base_url="http://127.0.0.1:9")
        self.request_bytes: list[int] = []
        self.tool_bytes: list[int] = []

    async def complete(
        self,
        messages: Sequence[Message],
        tools: Sequence[ToolDefinition],
        options: CallOptions = NO_CALL_OPTIONS,
    ) -> ModelResponse:
        body = self.wire.request_body(list(messages), list(tools))
        self.request_bytes.append(len(json_text(body).encode("utf-8")))
        self.tool_bytes.append(len(json_text(body.get("tools", [])).encode("utf-8")))
        return ModelResponse(message=self.answers.popleft())


def _default_agent(work_dir: Path, model: _MeasuringModel) -> Agent:
    env = {"HOME": str(work_dir / "home")}
    config = load_config(work_dir, env=env)
    return Agent(model=model, runtime=build_tool_runtime(config, env=env), config=config)  # type: ignore[arg-type]


def _one_edit_answers() -> list[Message]:
    anchor = f"2:{line_hash('    return a - b')}"
    patch = f"@@ calc.py\n= {anchor}..{anchor}\n~    return a + b\n"
    return [
        Message(
            role="assistant",
            tool_calls=[ToolCall(id="c1", name="read_file", arguments={"path": "calc.py"})],
        ),
        Message(
            role="assistant",
            tool_calls=[ToolCall(id="c2", name="apply_patch", arguments={"input": patch})],
        ),
        Message(role="assistant", content="Fixed add: it subtracted."),
    ]


def _measure(work_dir: Path) -> tuple[int, int, list[int], int]:
    (work_dir / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    model = _MeasuringModel(_one_edit_answers())
    agent = _default_agent(work_dir, model)
    schemas = [definition.to_dict() for definition in agent.tool_definitions()]
    result = asyncio.run(agent.run("Fix add in calc.py: it subtracts."))
    assert result.stopped_reason == "final", result.stopped_reason
    assert "a + b" in (work_dir / "calc.py").read_text(), "the scripted edit did not apply"
    return (
        len(json.dumps(schemas).encode("utf-8")),
        len(schemas),
        model.request_bytes,
        max(model.tool_bytes),
    )


def run(quick: bool) -> list[Figure]:
    # The figure is for the default config, which has no self-commit: the variable of whoever
    # runs the bench must not change it.
    saved = os.environ.pop(SELF_COMMIT_ENV, None)
    try:
        with tempfile.TemporaryDirectory() as folder:
            schema_bytes, tools, requests, wire_tool_bytes = _measure(Path(folder))
    finally:
        if saved is not None:
            os.environ[SELF_COMMIT_ENV] = saved
    return [
        Figure(
            name="tool schemas per request (default config)",
            value=schema_bytes,
            unit="bytes",
            target=f"<= {TOOL_SCHEMAS_TARGET_BYTES} bytes",
            note=f"{tools} tools; {wire_tool_bytes} bytes as OpenAI-compatible `tools`",
        ),
        Figure(
            name="one-edit task, request bytes (read, edit, answer)",
            value=sum(requests),
            unit="bytes",
            ceiling=ONE_EDIT_CEILING_BYTES,
            note=(
                f"{len(requests)} requests: {', '.join(map(str, requests))}; aider's figure "
                "(target <= 3x it) left out: aider is not installable here"
            ),
        ),
    ]


if __name__ == "__main__":
    from bench.run import format_figure

    for figure in run(quick=False):
        print(format_figure(figure))
