"""Issue 33's seed-parity leftovers, each against the seed's wording (/work/shared/seeds).

python_eval takes kli's `form` and rejects arguments it does not know, as every other tool does.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from lich_core.tools.builtin import register_builtin_tools
from lich_core.tools.builtin.python_eval import TOOL as PYTHON_EVAL
from lich_core.tools.python_image import REGISTRY
from lich_core.tools.registry import ToolRegistry
from lich_core.tools.types import ToolContext

BOUND_S = 60.0


@pytest.fixture
def ctx(tmp_path: Path):
    context = ToolContext(
        work_dir=tmp_path,
        env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(tmp_path)},
    )
    yield context
    REGISTRY.stop_all()


async def evaluate(ctx: ToolContext, args: dict):
    return await asyncio.wait_for(PYTHON_EVAL.execute(args, ctx), BOUND_S)


def test_every_builtin_schema_refuses_unknown_arguments() -> None:
    registry = register_builtin_tools(ToolRegistry())
    lenient = [
        name
        for name in registry.names()
        if registry.get(name).parameters.get("additionalProperties") is not False
    ]
    assert lenient == []


async def test_python_eval_takes_kli_form_as_the_code(ctx: ToolContext) -> None:
    done = await evaluate(ctx, {"form": "6 * 7"})
    assert done.ok and done.output == "42"
    assert "form" in PYTHON_EVAL.parameters["properties"]


async def test_python_eval_refuses_unknown_arguments_and_runs_nothing(
    ctx: ToolContext, tmp_path: Path
) -> None:
    done = await evaluate(ctx, {"code": "open('ran.txt', 'w').close()", "package": "CL-USER"})
    assert not done.ok
    assert done.error == "unknown_argument: package (known: code, form, timeout)"
    assert not (tmp_path / "ran.txt").exists()


async def test_python_eval_code_and_form_together_is_an_error(ctx: ToolContext) -> None:
    done = await evaluate(ctx, {"code": "1", "form": "2"})
    assert not done.ok and done.error.startswith("conflicting_arguments: code and form both given")


async def test_python_eval_without_code_or_form_names_code(ctx: ToolContext) -> None:
    assert (await evaluate(ctx, {})).error == "missing_arg: code"


async def test_list_dir_cap_keeps_every_top_level_entry(tmp_path: Path) -> None:
    from lich_core.tools.builtin.list_dir import MAX_LIST_ENTRIES
    from lich_core.tools.builtin.list_dir import TOOL as LIST_DIR

    per_dir = 300
    for name in ("a", "b", "c"):
        (tmp_path / name).mkdir()
        for index in range(per_dir):
            (tmp_path / name / f"f{index:03}.txt").write_text("x")
    (tmp_path / "z.txt").write_text("z")
    ctx = ToolContext(work_dir=tmp_path, env={})
    done = await LIST_DIR.execute({"depth": 2}, ctx)
    assert done.ok, done.error
    lines = done.output.splitlines()[1:]
    body, note = lines[:-1], lines[-1]
    assert len(body) == MAX_LIST_ENTRIES
    total = 3 + 1 + 3 * per_dir
    assert note.startswith(f"... {total - MAX_LIST_ENTRIES} more entries omitted")
    # Depth-first, c/ and z.txt were the entries dropped; breadth-first keeps all four.
    assert [line for line in body if "/" not in line.split("  ")[0].rstrip("/")] == [
        "a/",
        "b/",
        "c/",
        "z.txt  (1 B)",
    ]
    # Shown as a tree: each directory's kept children right under it, a/ and b/ filled first.
    assert body[0] == "a/" and body[1].startswith("a/f000.txt")
    b_at, c_at = body.index("b/"), body.index("c/")
    assert all(line.startswith("a/") for line in body[1:b_at])
    assert all(line.startswith("b/") for line in body[b_at + 1 : c_at])
    assert body[-1] == "z.txt  (1 B)"
    assert (
        done.details["entries"] == MAX_LIST_ENTRIES
        and done.details["omitted"] == total - MAX_LIST_ENTRIES
    )
