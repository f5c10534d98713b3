"""The import layering of lich_core, lich_lsp, lich_acp and lich_cli, checked statically (every
module parsed with `ast`).

Rules (see docs/architecture.md "Layers" and lich_core/vocabulary.py):

- `lich_core` never imports the faces (`lich_lsp`, `lich_acp`), the command line (`lich_cli`),
  `pygls` or `lsprotocol` (anywhere, lazily or not).
- The faces never import the command line or each other: `lich_cli` sits above them.
- `lich_core.vocabulary` is the bottom: it, `lich_core.settings` (the typed configuration),
  `lich_core.errors` and the `lich_core` package itself import only the standard library and
  `lich_core.errors`.
- Providers (`lich_core.providers.*`) import only the standard library, httpx,
  `lich_core.vocabulary`, `lich_core.settings`, `lich_core.errors` and each other.
- The hashline engine (`lich_core.hashline.*`) imports nothing from lich_core but
  `lich_core.vocabulary` and itself.
- Plugins (`lich_core.plugins.*`) never load the tool executor or the tool runtime when they are
  imported (directly or through another module); the runtime imports plugins.
- No import cycle, between modules or between packages (a package: the first two parts of a
  module's name, `lich_core.tools`, `lich_acp.agent`), counting every import statement: at module
  level, inside functions and under `if TYPE_CHECKING:`. Python loading a module's parent
  packages first is not an import of them. A cycle listed in KNOWN_CYCLES (none now) is an
  expected failure until it is untangled; any other cycle fails.
- A builtin tool module (`lich_core.tools.builtin.<tool>`) never imports another one (lazily or
  not): adding a tool is adding a file. What tools share lives outside the per-tool files
  (`lich_core.tools.*`) or in a helper module whose name starts with `_` (`_grep_engine`).
- Code in lich_core, lich_lsp, lich_acp and lich_cli imports the vocabulary's names from
  `lich_core.vocabulary`, not from a module that merely re-exports them
  (`lich_core.agent.messages`, `lich_core.tools.types`, `lich_core.workspace`, ...); those
  re-exports are for tests and plugins.

- docs/architecture.md's map names every module (itself or through its subpackage), and the
  imports go only where the map says they may (how it reads: below, and that page).

A failure names the module, the line and the import statement.
"""

from __future__ import annotations

import ast
import functools
import re
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from itertools import pairwise
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("lich_core", "lich_lsp", "lich_acp", "lich_cli")
VOCABULARY = "lich_core.vocabulary"
SETTINGS = "lich_core.settings"
ERRORS = "lich_core.errors"
# What lich_core never imports: the faces, the command line above them, the editor protocol.
ABOVE_CORE = ("lich_lsp", "lich_acp", "lich_cli", "pygls", "lsprotocol")
FACES = ("lich_lsp", "lich_acp")
CLI = "lich_cli"
# Cycles known and being untangled, each with where the work is tracked: a cycle whose modules
# are all in one of these sets is an expected failure (any other cycle fails, and so does one that
# draws a module outside the set in). Remove the entry once its work has landed.
KNOWN_CYCLES: dict[str, frozenset[str]] = {}
# What plugins must not load at import time (the runtime imports plugins).
PLUGIN_FORBIDDEN = ("lich_core.tools.executor", "lich_core.runtime")
BUILTIN_TOOLS = "lich_core.tools.builtin"
STDLIB = frozenset(sys.stdlib_module_names)


@dataclass(frozen=True)
class Import:
    module: str  # the importing module
    path: str  # its file, relative to the repository
    line: int
    statement: str  # the import statement as written (normalised by ast.unparse)
    target: str  # the imported module, absolute
    names: tuple[tuple[str, str], ...]  # from-imports: (name, bound name) taken from `target`
    at_import_time: bool  # runs when the module is imported (not in a function, not TYPE_CHECKING)

    def where(self) -> str:
        return f"{self.path}:{self.line} ({self.module}): `{self.statement}`"


@dataclass
class Module:
    name: str
    path: str
    is_package: bool
    imports: list[Import] = field(default_factory=list)


def _module_name(relative: Path) -> tuple[str, bool]:
    parts = list(relative.with_suffix("").parts)
    if parts[-1] == "__init__":
        return ".".join(parts[:-1]), True
    return ".".join(parts), False


def _is_type_checking(test: ast.expr) -> bool:
    if isinstance(test, ast.Name):
        return test.id == "TYPE_CHECKING"
    return isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"


def _walk_imports(
    nodes: Iterable[ast.AST], at_import_time: bool = True
) -> Iterator[tuple[ast.Import | ast.ImportFrom, bool]]:
    """Every import statement, with whether it runs when its module is imported."""
    for node in nodes:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node, at_import_time
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            yield from _walk_imports(ast.iter_child_nodes(node), False)
        elif isinstance(node, ast.If) and _is_type_checking(node.test):
            yield from _walk_imports(node.body, False)
            yield from _walk_imports(node.orelse, at_import_time)
        else:
            yield from _walk_imports(ast.iter_child_nodes(node), at_import_time)


@functools.cache
def _import_statements(
    path: str, source: str
) -> tuple[tuple[ast.Import | ast.ImportFrom, bool, str], ...]:
    """A file's import statements: (node, runs at import time, the statement as written).
    Cached by content: the checks below scan the project many times, each with one file changed."""
    tree = ast.parse(source, filename=path)
    return tuple(
        (node, at_import_time, ast.unparse(node))
        for node, at_import_time in _walk_imports(tree.body)
    )


def scan(sources: Mapping[str, str]) -> dict[str, Module]:
    """Parse modules given as {relative path: source} into their resolved imports."""
    modules: dict[str, Module] = {}
    found: dict[str, tuple[tuple[ast.Import | ast.ImportFrom, bool, str], ...]] = {}
    for path, source in sources.items():
        name, is_package = _module_name(Path(path))
        modules[name] = Module(name, path, is_package)
        found[name] = _import_statements(path, source)
    for name, statements in found.items():
        module = modules[name]
        for node, at_import_time, statement in statements:
            line = node.lineno
            if isinstance(node, ast.Import):
                for alias in node.names:
                    module.imports.append(
                        Import(name, module.path, line, statement, alias.name, (), at_import_time)
                    )
                continue
            if node.level:
                base = name.split(".") if module.is_package else name.split(".")[:-1]
                base = base[: len(base) - (node.level - 1)]
                source_module = ".".join(base + ([node.module] if node.module else []))
            else:
                source_module = node.module or ""
            by_target: dict[str, list[tuple[str, str]]] = {}
            for alias in node.names:
                submodule = f"{source_module}.{alias.name}"
                target = submodule if submodule in modules else source_module
                by_target.setdefault(target, []).append((alias.name, alias.asname or alias.name))
            for target, names in by_target.items():
                module.imports.append(
                    Import(name, module.path, line, statement, target, tuple(names), at_import_time)
                )
    return modules


def project_sources() -> dict[str, str]:
    sources = {}
    for package in PACKAGES:
        for file in sorted((ROOT / package).rglob("*.py")):
            sources[file.relative_to(ROOT).as_posix()] = file.read_text(encoding="utf-8")
    return sources


def _within(name: str, *prefixes: str) -> bool:
    return any(name == prefix or name.startswith(prefix + ".") for prefix in prefixes)


def _top(name: str) -> str:
    return name.split(".")[0]


# --- the rules: each returns one line per violation ---------------------------------------------


def core_never_imports_what_is_above_it(modules: Mapping[str, Module]) -> list[str]:
    return [
        f"{imp.where()} imports {imp.target}: lich_core never imports {', '.join(ABOVE_CORE)}"
        for module in modules.values()
        if _within(module.name, "lich_core")
        for imp in module.imports
        if _top(imp.target) in ABOVE_CORE
    ]


def faces_never_import_the_cli_or_each_other(modules: Mapping[str, Module]) -> list[str]:
    return [
        f"{imp.where()} imports {imp.target}: a face ({', '.join(FACES)}) never imports {CLI} "
        f"(it sits above the faces) or the other face"
        for module in modules.values()
        if _top(module.name) in FACES
        for imp in module.imports
        if _top(imp.target) in (CLI, *FACES) and _top(imp.target) != _top(module.name)
    ]


def vocabulary_is_the_bottom(modules: Mapping[str, Module]) -> list[str]:
    bottom = ("lich_core", ERRORS, VOCABULARY, SETTINGS)
    return [
        f"{imp.where()} imports {imp.target}: {module.name} may import only the standard library "
        f"and {ERRORS}"
        for module in modules.values()
        if module.name in bottom
        for imp in module.imports
        if not (_top(imp.target) in STDLIB or imp.target == ERRORS)
    ]


def providers_know_only_vocabulary_and_http(modules: Mapping[str, Module]) -> list[str]:
    return [
        f"{imp.where()} imports {imp.target}: providers may import only the standard library, "
        f"httpx, {VOCABULARY}, {SETTINGS}, {ERRORS} and lich_core.providers"
        for module in modules.values()
        if _within(module.name, "lich_core.providers")
        for imp in module.imports
        if not (
            _top(imp.target) in STDLIB
            or _top(imp.target) == "httpx"
            or imp.target in (VOCABULARY, SETTINGS, ERRORS)
            or _within(imp.target, "lich_core.providers")
        )
    ]


def hashline_imports_only_vocabulary(modules: Mapping[str, Module]) -> list[str]:
    return [
        f"{imp.where()} imports {imp.target}: the hashline engine imports nothing from "
        f"lich_core but {VOCABULARY} and lich_core.hashline"
        for module in modules.values()
        if _within(module.name, "lich_core.hashline")
        for imp in module.imports
        if _top(imp.target) in PACKAGES
        and not (imp.target == VOCABULARY or _within(imp.target, "lich_core.hashline"))
    ]


def _loaded_at_import(modules: Mapping[str, Module], start: str) -> dict[str, Import | None]:
    """Project modules loaded by importing `start`, each with the import that first loaded it.

    Importing `a.b.c` runs `a/__init__`, `a.b/__init__` and then `a.b.c`, so parents count.
    """

    def with_parents(name: str) -> list[str]:
        parts = name.split(".")
        return [".".join(parts[: i + 1]) for i in range(len(parts))]

    loaded: dict[str, Import | None] = {
        name: None for name in with_parents(start) if name in modules
    }
    queue = list(loaded)
    while queue:
        current = queue.pop(0)
        for imp in modules[current].imports:
            if not imp.at_import_time:
                continue
            for name in with_parents(imp.target):
                if name in modules and name not in loaded:
                    loaded[name] = imp
                    queue.append(name)
    return loaded


def _chain(loaded: Mapping[str, Import | None], name: str) -> list[Import]:
    chain: list[Import] = []
    step = loaded[name]
    while step is not None:
        chain.append(step)
        step = loaded[step.module]
    return chain[::-1]


def plugins_do_not_load_executor(modules: Mapping[str, Module]) -> list[str]:
    problems = []
    for module in modules.values():
        if not _within(module.name, "lich_core.plugins"):
            continue
        loaded = _loaded_at_import(modules, module.name)
        for forbidden in PLUGIN_FORBIDDEN:
            if forbidden in loaded:
                steps = " -> ".join(imp.where() for imp in _chain(loaded, forbidden))
                problems.append(
                    f"importing {module.name} loads {forbidden} (the runtime imports plugins; "
                    f"import it inside a function or under TYPE_CHECKING): {steps}"
                )
    return problems


def _module_unit(name: str) -> str:
    return name


def _package_unit(name: str) -> str:
    """The package a module belongs to: the first two parts of its name (`lich_core.tools`,
    `lich_core.shell`, `lich_acp.agent`; `lich_core` for the package itself)."""
    return ".".join(name.split(".")[:2])


@dataclass(frozen=True)
class Cycle:
    members: frozenset[str]  # the units of one strongly connected component
    message: str


def import_cycles(modules: Mapping[str, Module], unit: Callable[[str], str]) -> list[Cycle]:
    """Every import cycle between units (`unit` maps a module to its unit), counting every import
    statement wherever it is; one Cycle per strongly connected component, its message naming one
    cycle through it with the import line of each step."""
    edges: dict[str, dict[str, Import]] = {}
    for module in modules.values():
        source = unit(module.name)
        for imp in module.imports:
            if imp.target not in modules:
                continue
            target = unit(imp.target)
            if target != source:
                edges.setdefault(source, {}).setdefault(target, imp)
    components = _strongly_connected(edges)
    cycles = []
    for component in components:
        path = _cycle_through(sorted(component)[0], component, edges)
        steps = "; ".join(edges[a][b].where() for a, b in pairwise(path))
        others = sorted(component - set(path))
        also = f" (also in this cycle: {', '.join(others)})" if others else ""
        cycles.append(
            Cycle(frozenset(component), f"import cycle {' -> '.join(path)}{also}: {steps}")
        )
    return cycles


def _strongly_connected(edges: Mapping[str, Mapping[str, Import]]) -> list[set[str]]:
    """Tarjan's components of more than one unit, iteratively (no recursion limit to meet)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[set[str]] = []
    for start in sorted(edges):
        if start in index:
            continue
        work = [(start, iter(sorted(edges.get(start, {}))))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges.get(child, {})))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(component)
    return found


def _cycle_through(
    start: str, component: set[str], edges: Mapping[str, Mapping[str, Import]]
) -> list[str]:
    """The shortest path from `start` back to itself inside its component."""
    previous: dict[str, str] = {}
    queue = [start]
    while queue:
        node = queue.pop(0)
        for nxt in sorted(edges.get(node, {})):
            if nxt not in component:
                continue
            if nxt == start:
                chain = [node]
                while chain[-1] != start:
                    chain.append(previous[chain[-1]])
                return [*reversed(chain), start]
            if nxt not in previous:
                previous[nxt] = node
                queue.append(nxt)
    raise AssertionError(f"{start} is in a component without a cycle through it")


def module_cycles(modules: Mapping[str, Module]) -> list[str]:
    return [cycle.message for cycle in import_cycles(modules, _module_unit)]


def package_cycles(modules: Mapping[str, Module]) -> list[str]:
    return [cycle.message for cycle in import_cycles(modules, _package_unit)]


def _builtin_tool(name: str) -> str | None:
    """The tool a module `lich_core.tools.builtin.<tool>` holds (None: not a tool module; shared
    helpers start with `_`)."""
    prefix = BUILTIN_TOOLS + "."
    if not name.startswith(prefix):
        return None
    tool = name[len(prefix) :].split(".")[0]
    return None if tool.startswith("_") else tool


def builtin_tools_do_not_import_each_other(modules: Mapping[str, Module]) -> list[str]:
    return [
        f"{imp.where()} imports {imp.target}: a builtin tool never imports another one; move what "
        f"they share out of the tool's file (lich_core.tools.*, or a builtin `_helper` module)"
        for module in modules.values()
        if (tool := _builtin_tool(module.name)) is not None
        for imp in module.imports
        if (other := _builtin_tool(imp.target)) is not None and other != tool
    ]


def vocabulary_imported_from_its_home(modules: Mapping[str, Module]) -> list[str]:
    # Names each module only re-exports from the vocabulary (bound name -> original name).
    reexports: dict[str, dict[str, str]] = {
        module.name: {
            bound: name
            for imp in module.imports
            if imp.target == VOCABULARY
            for name, bound in imp.names
        }
        for module in modules.values()
    }
    return [
        f"{imp.where()} imports {name} from {imp.target}, which re-exports it: import it from "
        f"{VOCABULARY}"
        for module in modules.values()
        for imp in module.imports
        if imp.target != VOCABULARY
        for name, _ in imp.names
        if name in reexports.get(imp.target, {})
    ]


RULES: dict[str, Callable[[Mapping[str, Module]], list[str]]] = {
    "core_never_imports_what_is_above_it": core_never_imports_what_is_above_it,
    "faces_never_import_the_cli_or_each_other": faces_never_import_the_cli_or_each_other,
    "vocabulary_is_the_bottom": vocabulary_is_the_bottom,
    "providers_know_only_vocabulary_and_http": providers_know_only_vocabulary_and_http,
    "hashline_imports_only_vocabulary": hashline_imports_only_vocabulary,
    "plugins_do_not_load_executor": plugins_do_not_load_executor,
    "builtin_tools_do_not_import_each_other": builtin_tools_do_not_import_each_other,
    "vocabulary_imported_from_its_home": vocabulary_imported_from_its_home,
}


@pytest.fixture(scope="module")
def project() -> dict[str, Module]:
    return scan(project_sources())


def test_scan_sees_the_whole_project(project: dict[str, Module]) -> None:
    for name in (
        VOCABULARY,
        ERRORS,
        "lich_core.providers.http",
        "lich_core.hashline.edit",
        "lich_core.plugins.host",
        "lich_core.agent.loop",
        "lich_core.runtime",
        "lich_lsp.server",
        "lich_acp.agent",
        "lich_acp.__main__",
        "lich_cli.main",
        "lich_cli.agent",
    ):
        assert name in project, f"{name} not scanned"
    assert len(project) > 50
    assert any(imp.target == VOCABULARY for imp in project["lich_core.providers.base"].imports)


@pytest.mark.parametrize("rule", sorted(RULES))
def test_layering(project: dict[str, Module], rule: str) -> None:
    problems = RULES[rule](project)
    assert not problems, f"{rule}:\n  " + "\n  ".join(problems)


CYCLE_LEVELS: dict[str, Callable[[str], str]] = {"modules": _module_unit, "packages": _package_unit}


@pytest.mark.parametrize("level", sorted(CYCLE_LEVELS))
@pytest.mark.parametrize("package", PACKAGES)
def test_no_import_cycle(project: dict[str, Module], package: str, level: str) -> None:
    cycles = [
        cycle
        for cycle in import_cycles(project, CYCLE_LEVELS[level])
        if any(_within(member, package) for member in cycle.members)
    ]
    unknown = [
        cycle
        for cycle in cycles
        if not any(cycle.members <= known for known in KNOWN_CYCLES.values())
    ]
    assert not unknown, f"{package}'s {level}:\n  " + "\n  ".join(
        cycle.message for cycle in unknown
    )
    known = {
        reason: [cycle for cycle in cycles if cycle.members <= members]
        for reason, members in KNOWN_CYCLES.items()
        if any(_within(member, package) for member in members)
    }
    if any(known.values()):
        pytest.xfail(
            "; ".join(
                f"{reason}: {cycle.message}" for reason, found in known.items() for cycle in found
            )
        )


# --- the checker itself catches what it should -------------------------------------------------

BREAKS = [
    (
        "core_never_imports_what_is_above_it",
        "lich_core/tools/zz_bad.py",
        "def f():\n    from lsprotocol import types\n",
        "lsprotocol",
    ),
    (
        "core_never_imports_what_is_above_it",
        "lich_core/zz_bad.py",
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import lich_lsp.server\n",
        "lich_lsp.server",
    ),
    (
        "core_never_imports_what_is_above_it",
        "lich_core/zz_bad.py",
        "def main():\n    from lich_cli.main import main\n",
        "lich_cli.main",
    ),
    (
        "core_never_imports_what_is_above_it",
        "lich_core/agent/zz_bad.py",
        "def f():\n    import lich_acp.agent\n",
        "lich_acp.agent",
    ),
    (
        "faces_never_import_the_cli_or_each_other",
        "lich_acp/zz_bad.py",
        "def f():\n    from lich_cli.common import cli_root\n",
        "lich_cli.common",
    ),
    (
        "faces_never_import_the_cli_or_each_other",
        "lich_lsp/zz_bad.py",
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from lich_acp.agent import LichAcpAgent\n",
        "lich_acp.agent",
    ),
    (
        "vocabulary_is_the_bottom",
        "lich_core/vocabulary.py",
        "from lich_core.tools.types import ToolContext\n",
        "lich_core.tools.types",
    ),
    (
        "providers_know_only_vocabulary_and_http",
        "lich_core/providers/zz_bad.py",
        "from lich_core.agent.messages import Message\n",
        "lich_core.agent.messages",
    ),
    (
        "providers_know_only_vocabulary_and_http",
        "lich_core/providers/zz_bad.py",
        "import requests\n",
        "requests",
    ),
    (
        "hashline_imports_only_vocabulary",
        "lich_core/hashline/zz_bad.py",
        "from ..workspace import FileChange\n",
        "lich_core.workspace",
    ),
    (
        "hashline_imports_only_vocabulary",
        "lich_core/hashline/zz_bad.py",
        "from lich_core.errors import ToolError\n",
        "lich_core.errors",
    ),
    (
        "plugins_do_not_load_executor",
        "lich_core/plugins/zz_bad.py",
        "from lich_core.tools.executor import ToolExecutor\n",
        "lich_core.tools.executor",
    ),
    (
        "plugins_do_not_load_executor",
        "lich_core/plugins/zz_bad.py",
        "from lich_core.tools.builtin.terminal import TOOL\n",
        "lich_core/tools/builtin/terminal.py",
    ),
    (
        "package_cycles",
        "lich_core/providers/zz_bad.py",
        "from lich_core.agent.loop import Agent\n",
        "lich_core.agent -> lich_core.providers",
    ),
    # Counted inside functions and under TYPE_CHECKING, as well as at module level.
    (
        "package_cycles",
        "lich_core/tools/zz_bad.py",
        "def f():\n    from lich_core.runtime import build_tool_runtime\n",
        "lich_core.tools -> lich_core.runtime",
    ),
    (
        "module_cycles",
        "lich_cli/common.py",
        "def f():\n    from lich_cli.agent import COMMANDS\n",
        "lich_cli.agent -> lich_cli.common -> lich_cli.agent",
    ),
    (
        "module_cycles",
        "lich_core/shell.py",
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from lich_core.tools.builtin.terminal import TOOL\n",
        "lich_core.shell -> lich_core.tools.builtin.terminal -> lich_core.shell",
    ),
    (
        "module_cycles",
        "lich_acp/events.py",
        "def f():\n    from lich_acp.agent import LichAcpAgent\n",
        "lich_acp.agent -> lich_acp.events -> lich_acp.agent",
    ),
    (
        "builtin_tools_do_not_import_each_other",
        "lich_core/tools/builtin/zz_bad.py",
        "from lich_core.tools.builtin.read_file import MAX_OUTPUT_CHARS\n",
        "lich_core.tools.builtin.read_file",
    ),
    (
        "builtin_tools_do_not_import_each_other",
        "lich_core/tools/builtin/zz_bad.py",
        "from lich_core.tools.builtin import _grep_engine\ndef f():\n    from . import terminal\n",
        "lich_core.tools.builtin.terminal",
    ),
    (
        "vocabulary_imported_from_its_home",
        "lich_lsp/zz_bad.py",
        "from lich_core.workspace import FileChange, LineReplacement\n",
        "LineReplacement",
    ),
    (
        "vocabulary_imported_from_its_home",
        "lich_core/agent/zz_bad.py",
        "from .messages import Message\n",
        "lich_core.agent.messages",
    ),
]


@pytest.mark.parametrize(("rule", "path", "source", "named"), BREAKS)
def test_a_layering_break_fails_naming_module_and_import(
    rule: str, path: str, source: str, named: str
) -> None:
    sources = project_sources()
    sources[path] = source
    problems = CHECKS[rule](scan(sources))
    assert problems, f"{rule} missed {source!r} in {path}"
    text = "\n".join(problems)
    assert path in text and named in text, text


CHECKS = {**RULES, "module_cycles": module_cycles, "package_cycles": package_cycles}


def test_a_package_cycle_need_not_be_a_module_cycle() -> None:
    sources = project_sources()
    sources["lich_core/tools/zz_bad.py"] = (
        "def f():\n    from lich_core.runtime import build_tool_runtime\n"
    )
    modules = scan(sources)
    assert not any("zz_bad" in problem for problem in module_cycles(modules))
    assert any("lich_core/tools/zz_bad.py" in problem for problem in package_cycles(modules))


def test_lazy_and_type_checking_imports_do_not_count_at_import_time() -> None:
    sources = project_sources()
    sources["lich_core/plugins/zz_ok.py"] = (
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from lich_core.tools.executor import ToolExecutor\n"
        "def run():\n    from lich_core.runtime import build_tool_runtime\n"
    )
    assert plugins_do_not_load_executor(scan(sources)) == []


# --- the architecture map (docs/architecture.md, "Layers") is checked against the tree ----------
#
# The map is the first code block under "## Layers". Each entry starts a line (after the tree's
# drawing characters and an `editor ──LSP──▶ ` arrow): one or more module names (`main.py`,
# `lich_lsp/session.py`, `lich_core/agent`, `undo_rebase.py, hunk_tracking.py`) followed by two
# spaces or the line's end; the lines after it, up to the next entry, are its description. A name
# with a slash is a path from the repository root (a folder covers its whole subpackage); a bare
# `x.py` is in the package of the section (set by the last `lich_*` name an entry spelled out).
# The last `→` of an entry lists what it imports of its own package (words naming no entry of the
# package, `core only`, `httpx`, are ignored). What may import what:
# - lich_core, and lich_lsp above its "parts" line (adapter, server, session): each entry may
#   import the entries below it, and those named after its `→` (the map reads top to bottom);
# - lich_lsp's parts: what follows their `→` and the leaves;
# - lich_lsp's leaves, lich_acp, lich_cli: only what follows their `→`.
# Every import counts, lazy and under TYPE_CHECKING included; imports of other packages are the
# layering rules' business (above).

ARCHITECTURE = ROOT / "docs" / "architecture.md"
_MAP_NAME = r"(?:lich_(?:core|lsp|acp|cli)(?:/[\w.]+)*/?|\w+\.py)"
_MAP_ENTRY = re.compile(rf"^({_MAP_NAME}(?:, {_MAP_NAME})*)(?:\s{{2,}}|$)")
_MAP_DRAWING = "│├└─▼ "
TOP_DOWN, PART, LEAF, LISTED = "top-down", "part", "leaf", "listed"


@dataclass
class MapEntry:
    names: list[str]  # the modules (or subpackages) it covers, dotted
    package: str  # lich_core, lich_lsp, lich_acp or lich_cli
    position: int  # order in the map
    region: str  # TOP_DOWN, PART, LEAF or LISTED
    line: int
    text: str = ""  # the entry's line and description
    header: bool = False  # a bare package name (the section's title): covers the package only

    def imports_named(self) -> list[str]:
        """The words after the entry's last `→`, as dotted names in its package."""
        if "→" not in self.text:
            return []
        words = re.findall(r"[\w./]+", self.text.rsplit("→", 1)[1])
        named = []
        for word in words:
            word = word.removesuffix(".py").rstrip("/.")
            named.append(
                word.replace("/", ".")
                if word.startswith("lich_")
                else f"{self.package}.{word.replace('/', '.')}"
            )
        return named


def _map_block(text: str) -> tuple[int, list[str]]:
    start = text.index("## Layers")
    fence = text.index("```", start)
    end = text.index("```", fence + 3)
    first_line = text[:fence].count("\n") + 2
    return first_line, text[fence + 3 : end].split("\n")[1:]


def parse_architecture_map(text: str) -> list[MapEntry]:
    first_line, lines = _map_block(text)
    entries: list[MapEntry] = []
    package = ""
    region = LISTED
    in_marker = False  # the lines of a "parts (...)" or "leaves (...)" marker: no entry's text
    for offset, raw in enumerate(lines):
        line = raw.split("▶", 1)[1] if "▶" in raw else raw
        line = line.lstrip(_MAP_DRAWING)
        if line.startswith(("parts (", "leaves (")):
            region = PART if line.startswith("parts (") else LEAF
            in_marker = True
        match = _MAP_ENTRY.match(line)
        if match is None:
            if entries and not in_marker:
                entries[-1].text += "\n" + line
            continue
        in_marker = False
        names = []
        header = False
        for spelled in match.group(1).split(", "):
            if spelled.startswith("lich_"):
                top = spelled.split("/")[0]
                if top != package:
                    package = top
                    region = TOP_DOWN if top in ("lich_core", "lich_lsp") else LISTED
                header = "/" not in spelled
                dotted = spelled.rstrip("/").removesuffix(".py").replace("/", ".")
            else:
                dotted = f"{package}.{spelled.removesuffix('.py')}"
            names.append(dotted)
        entries.append(
            MapEntry(names, package, len(entries), region, first_line + offset, line, header)
        )
    return entries


def _map_entry_of(entries: list[MapEntry], module: str) -> MapEntry | None:
    """The most specific entry covering a module (its own name, else its subpackage's)."""
    best: tuple[int, MapEntry] | None = None
    for entry in entries:
        for name in entry.names:
            covers = module == name or (not entry.header and module.startswith(name + "."))
            if covers and (best is None or len(name) > best[0]):
                best = (len(name), entry)
    return best[1] if best else None


def map_misses_modules(modules: Mapping[str, Module], entries: list[MapEntry]) -> list[str]:
    problems = [
        f"{module.path} ({module.name}) is named neither itself nor through its subpackage in "
        "docs/architecture.md"
        for module in modules.values()
        if _map_entry_of(entries, module.name) is None
    ]
    problems += [
        f"docs/architecture.md:{entry.line}: {name} names no module of the tree"
        for entry in entries
        for name in entry.names
        if not any(_within(module, name) for module in modules)
    ]
    return sorted(set(problems))


def map_order_differs(modules: Mapping[str, Module], entries: list[MapEntry]) -> list[str]:
    problems = []
    for module in modules.values():
        source = _map_entry_of(entries, module.name)
        if source is None:
            continue
        named = source.imports_named()
        for imp in module.imports:
            if _top(imp.target) != source.package:
                continue
            target = _map_entry_of(entries, imp.target)
            if target is None or target is source or target.header:
                continue
            if any(_map_entry_of(entries, name) is target for name in named):
                continue
            if source.region == TOP_DOWN and target.position > source.position:
                continue
            if source.region == PART and target.region == LEAF:
                continue
            stated = ", ".join(n.rsplit(".", 1)[-1] for n in named) or "nothing of its package"
            problems.append(
                f"{imp.where()} imports {imp.target}, but docs/architecture.md:{source.line} "
                f"says {', '.join(source.names)} imports {stated}"
                + (" and what is listed below it" if source.region == TOP_DOWN else "")
                + (" and the leaves" if source.region == PART else "")
            )
    for entry in entries:
        for name in entry.imports_named():
            target = _map_entry_of(entries, name)
            if target is None or target.package != entry.package or target is entry:
                continue
            if not any(
                _map_entry_of(entries, imp.target) is target
                for module in modules.values()
                if _map_entry_of(entries, module.name) is entry
                for imp in module.imports
            ):
                problems.append(
                    f"docs/architecture.md:{entry.line}: {', '.join(entry.names)} is said to "
                    f"import {name}, which it does not"
                )
    return problems


@pytest.fixture(scope="module")
def architecture_map() -> list[MapEntry]:
    return parse_architecture_map(ARCHITECTURE.read_text(encoding="utf-8"))


def test_the_architecture_map_names_every_module(
    project: dict[str, Module], architecture_map: list[MapEntry]
) -> None:
    problems = map_misses_modules(project, architecture_map)
    assert not problems, "\n  ".join(["docs/architecture.md is not the tree:", *problems])


def test_the_architecture_map_states_the_real_import_order(
    project: dict[str, Module], architecture_map: list[MapEntry]
) -> None:
    problems = map_order_differs(project, architecture_map)
    assert not problems, "\n  ".join(["docs/architecture.md's import order:", *problems])


def test_the_architecture_map_check_fails_on_a_module_left_out_and_on_a_wrong_order() -> None:
    doc = "\n".join(
        [
            "## Layers",
            "",
            "```",
            "lich_core      the core",
            "lich_core/a.py        the top → b",
            "lich_core/pkg/        a subpackage",
            "lich_core/b.py        the middle",
            "lich_core/c.py        the bottom",
            "                      → a",
            "lich_core/gone.py     no such module",
            "```",
        ]
    )
    modules = scan(
        {
            "lich_core/__init__.py": "",
            "lich_core/a.py": "from lich_core import b\n",
            "lich_core/pkg/__init__.py": "",
            "lich_core/pkg/inner.py": "from lich_core.c import x\n",
            "lich_core/b.py": "def late():\n    import lich_core.a\n",
            "lich_core/c.py": "",
            "lich_core/d.py": "",
        }
    )
    entries = parse_architecture_map(doc)
    assert [entry.names for entry in entries] == [
        ["lich_core"],
        ["lich_core.a"],
        ["lich_core.pkg"],
        ["lich_core.b"],
        ["lich_core.c"],
        ["lich_core.gone"],
    ]
    assert map_misses_modules(modules, entries) == [
        "docs/architecture.md:10: lich_core.gone names no module of the tree",
        "lich_core/d.py (lich_core.d) is named neither itself nor through its subpackage in "
        "docs/architecture.md",
    ]
    assert map_order_differs(modules, entries) == [
        "lich_core/b.py:2 (lich_core.b): `import lich_core.a` imports lich_core.a, but "
        "docs/architecture.md:7 says lich_core.b imports nothing of its package and what is "
        "listed below it",
        "docs/architecture.md:8: lich_core.c is said to import lich_core.a, which it does not",
    ]
