"""Issue 33's seed-parity leftovers, each against the seed's wording (/work/shared/seeds).

python_eval takes kli's `form` and rejects arguments it does not know, as every other tool does.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from lich_core.tools.builtin.python_eval import TOOL as PYTHON_EVAL
from lich_core.tools.python_image import REGISTRY
from lich_core.tools.registry import ToolRegistry
from lich_core.tools.runtime import register_builtin_tools
from lich_core.tools.types import ToolContext

BOUND_S = 60.0


@pytest.fixture
def ctx(tmp_path: Path):
    context = ToolContext(work_dir=tmp_path, env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(tmp_path)})
    yield context
    REGISTRY.stop_all()


async def evaluate(ctx: ToolContext, args: dict):
    return await asyncio.wait_for(PYTHON_EVAL.execute(args, ctx), BOUND_S)


def test_every_builtin_schema_refuses_unknown_arguments() -> None:
    registry = register_builtin_tools(ToolRegistry())
    lenient = [name for name in registry.names() if registry.get(name).parameters.get("additionalProperties") is not False]
    assert lenient == []


async def test_python_eval_takes_kli_form_as_the_code(ctx: ToolContext) -> None:
    done = await evaluate(ctx, {"form": "6 * 7"})
    assert done.ok and done.output == "42"
    assert "form" in PYTHON_EVAL.parameters["properties"]


async def test_python_eval_refuses_unknown_arguments_and_runs_nothing(ctx: ToolContext, tmp_path: Path) -> None:
    done = await evaluate(ctx, {"code": "open('ran.txt', 'w').close()", "package": "CL-USER"})
    assert not done.ok
    assert done.error == "unknown_argument: package (known: code, form, timeout)"
    assert not (tmp_path / "ran.txt").exists()


async def test_python_eval_code_and_form_together_is_an_error(ctx: ToolContext) -> None:
    done = await evaluate(ctx, {"code": "1", "form": "2"})
    assert not done.ok and done.error.startswith("conflicting_arguments: code and form both given")


async def test_python_eval_without_code_or_form_names_code(ctx: ToolContext) -> None:
    assert (await evaluate(ctx, {})).error == "missing_arg: code"
