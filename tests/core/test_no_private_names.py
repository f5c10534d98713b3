"""No module outside one adapter reaches a private name of asyncio or pygls (#34).

Private names of a library change in its point releases without notice; lich touches pygls'
internals in lich_lsp/pygls_adapter.py only, and asyncio's nowhere. Two checks over the source:

- exact: a name bound by importing asyncio or pygls (the module, or anything from it) is never
  followed by a private attribute (`asyncio.tasks._PyTask`, `LanguageServer._send`), and no
  private name or module is imported from them;
- by name: an attribute access `x._name` where `_name` is private in asyncio's or pygls' own
  source and lich (outside the adapter) never defines a `_name` of its own: that is how
  `server.protocol._send_response` or `task._coro` would slip past the exact check.
"""

from __future__ import annotations

import ast
import importlib.util
from collections.abc import Iterable, Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PACKAGES = ("lich_core", "lich_lsp", "lich_acp", "lich_cli")
ADAPTER = REPO / "lich_lsp" / "pygls_adapter.py"
LIBRARIES = ("asyncio", "pygls")


def is_private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def is_library(module: str) -> bool:
    return module.split(".")[0] in LIBRARIES


def scanned_files() -> list[Path]:
    files = [
        path
        for package in PACKAGES
        if (REPO / package).is_dir()
        for path in (REPO / package).rglob("*.py")
    ]
    return sorted(path for path in files if path != ADAPTER)


def library_files(name: str) -> list[Path]:
    spec = importlib.util.find_spec(name)
    assert spec is not None and spec.origin is not None, name
    return sorted(Path(spec.origin).parent.rglob("*.py"))


def defined_private_names(trees: Iterable[ast.AST]) -> set[str]:
    """Private names a body of code defines: functions, classes, and assigned names and attributes."""
    names: set[str] = set()
    for tree in trees:
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = node.name
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                name = node.attr
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                name = node.id
            else:
                continue
            if is_private(name):
                names.add(name)
    return names


def parse(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


def _imports(tree: ast.AST) -> tuple[set[str], set[str]]:
    """(names bound to asyncio/pygls or to what was imported from them, names bound to other modules)."""
    library: set[str] = set()
    other: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                bound = alias.asname or alias.name.split(".")[0]
                (library if is_library(alias.name) else other).add(bound)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                (library if is_library(node.module) else other).add(alias.asname or alias.name)
    return library, other


def _root(node: ast.expr) -> str | None:
    while isinstance(node, (ast.Attribute, ast.Call, ast.Subscript)):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node.id if isinstance(node, ast.Name) else None


def private_uses(tree: ast.Module, suspects: set[str]) -> Iterator[tuple[int, str]]:
    """(line, what) for each reach into a private name of asyncio or pygls in `tree`."""
    library, other = _imports(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and is_library(node.module):
            if any(is_private(part) for part in node.module.split(".")):
                yield node.lineno, f"from {node.module} import"
            for alias in node.names:
                if is_private(alias.name):
                    yield node.lineno, f"from {node.module} import {alias.name}"
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if is_library(alias.name) and any(
                    is_private(part) for part in alias.name.split(".")
                ):
                    yield node.lineno, f"import {alias.name}"
        elif isinstance(node, ast.Attribute) and is_private(node.attr):
            root = _root(node.value)
            if root in library:
                yield node.lineno, f"{root}...{node.attr}"
            elif node.attr in suspects and root not in other:
                yield node.lineno, f"...{node.attr} (private in asyncio or pygls)"
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in ("getattr", "setattr", "hasattr", "delattr")
            and len(node.args) >= 2
            and isinstance(node.args[1], ast.Constant)
            and isinstance(node.args[1].value, str)
            and is_private(node.args[1].value)
            and (_root(node.args[0]) in library or node.args[1].value in suspects)
        ):
            yield node.lineno, f"{node.func.id}(..., {node.args[1].value!r})"


@pytest.fixture(scope="module")
def suspects() -> set[str]:
    """Private names of asyncio and pygls that lich, outside the adapter, never defines itself."""
    library = defined_private_names(
        parse(path) for package in LIBRARIES for path in library_files(package)
    )
    ours = defined_private_names(parse(path) for path in scanned_files())
    return library - ours


def test_no_module_outside_the_adapter_reaches_a_private_name_of_asyncio_or_pygls(
    suspects: set[str],
) -> None:
    files = scanned_files()
    assert len(files) > 50 and REPO / "lich_core" / "agent" / "loop.py" in files
    found = [
        f"{path.relative_to(REPO)}:{line}: {what}"
        for path in files
        for line, what in private_uses(parse(path), suspects)
    ]
    assert found == [], (
        "private names of asyncio/pygls outside lich_lsp/pygls_adapter.py:\n" + "\n".join(found)
    )


def test_the_scan_finds_each_kind_of_reach(suspects: set[str]) -> None:
    """The checks above are only worth their silence if they speak up on these."""
    source = """
import asyncio
import os
from asyncio import tasks
from asyncio.tasks import _enter_task
from pygls.lsp.server import LanguageServer

class Mine:
    def __init__(self):
        self._own = 1

def f(server, task, loop):
    asyncio.tasks._PyTask
    tasks._register_task(task)
    LanguageServer._private_thing
    server.protocol._send_response(1, 2)
    task._coro
    getattr(loop, "_ready")
    os._exit(0)
    Mine()._own
"""
    found = [what for _, what in sorted(private_uses(ast.parse(source), suspects))]
    assert found == [
        "from asyncio.tasks import _enter_task",
        "asyncio..._PyTask",
        "tasks..._register_task",
        "LanguageServer..._private_thing",
        "..._send_response (private in asyncio or pygls)",
        "..._coro (private in asyncio or pygls)",
        "getattr(..., '_ready')",
    ], found


def test_the_adapter_is_where_pygls_internals_are_reached(suspects: set[str]) -> None:
    """The exemption is not dead: the adapter does reach into pygls (a name check would find it)."""
    assert ADAPTER.is_file()
    adapter_private = {
        node.attr for node in ast.walk(parse(ADAPTER)) if isinstance(node, ast.Attribute)
    }
    library = defined_private_names(parse(path) for path in library_files("pygls"))
    assert adapter_private & library
