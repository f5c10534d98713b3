"""The import layering of lich_core and lich_lsp, checked statically (every module parsed with `ast`).

Rules (see DESIGN.md "Layers and data flow" and lich_core/vocabulary.py):

- `lich_core` never imports `lich_lsp`, `pygls` or `lsprotocol` (anywhere, lazily or not).
- `lich_core.vocabulary` is the bottom: it, `lich_core.errors` and the `lich_core` package itself
  import only the standard library and `lich_core.errors`.
- Providers (`lich_core.providers.*`) import only the standard library, httpx,
  `lich_core.vocabulary`, `lich_core.errors` and each other.
- The hashline engine (`lich_core.hashline.*`) imports nothing from lich_core but
  `lich_core.vocabulary` and itself.
- Plugins (`lich_core.plugins.*`) never load the tool executor or the tool runtime when they are
  imported (directly or through another module); the runtime imports plugins, so that would be a
  cycle. Imports inside functions or under `if TYPE_CHECKING:` are fine.
- lich_core's packages form no import cycle at import time.
- A builtin tool module (`lich_core.tools.builtin.<tool>`) never imports another one (lazily or
  not): adding a tool is adding a file. What tools share lives outside the per-tool files
  (`lich_core.tools.*`) or in a helper module whose name starts with `_` (`_grep_engine`).
- Code in lich_core and lich_lsp imports the vocabulary's names from `lich_core.vocabulary`, not
  from a module that merely re-exports them (`lich_core.agent.messages`, `lich_core.tools.types`,
  `lich_core.workspace`, ...); those re-exports are for tests and plugins.

A failure names the module, the line and the import statement.
"""

from __future__ import annotations

import ast
import functools
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from itertools import pairwise
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("lich_core", "lich_lsp")
VOCABULARY = "lich_core.vocabulary"
ERRORS = "lich_core.errors"
EDITOR_LAYER = ("lich_lsp", "pygls", "lsprotocol")
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
def _import_statements(path: str, source: str) -> tuple[tuple[ast.Import | ast.ImportFrom, bool, str], ...]:
    """A file's import statements: (node, runs at import time, the statement as written).
    Cached by content: the checks below scan the project many times, each with one file changed."""
    tree = ast.parse(source, filename=path)
    return tuple((node, at_import_time, ast.unparse(node)) for node, at_import_time in _walk_imports(tree.body))


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


def core_never_imports_editor_layer(modules: Mapping[str, Module]) -> list[str]:
    return [
        f"{imp.where()} imports {imp.target}: lich_core never imports {', '.join(EDITOR_LAYER)}"
        for module in modules.values()
        if _within(module.name, "lich_core")
        for imp in module.imports
        if _top(imp.target) in EDITOR_LAYER
    ]


def vocabulary_is_the_bottom(modules: Mapping[str, Module]) -> list[str]:
    bottom = ("lich_core", ERRORS, VOCABULARY)
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
        f"httpx, {VOCABULARY}, {ERRORS} and lich_core.providers"
        for module in modules.values()
        if _within(module.name, "lich_core.providers")
        for imp in module.imports
        if not (
            _top(imp.target) in STDLIB
            or _top(imp.target) == "httpx"
            or imp.target in (VOCABULARY, ERRORS)
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

    loaded: dict[str, Import | None] = {name: None for name in with_parents(start) if name in modules}
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


def _core_unit(name: str) -> str | None:
    """lich_core's first-level package or module a module belongs to (None: not lich_core)."""
    parts = name.split(".")
    if parts[0] != "lich_core" or len(parts) == 1:
        return None
    return ".".join(parts[:2])


def core_packages_form_no_cycle(modules: Mapping[str, Module]) -> list[str]:
    edges: dict[str, dict[str, Import]] = {}
    for module in modules.values():
        source = _core_unit(module.name)
        if source is None:
            continue
        for imp in module.imports:
            target = _core_unit(imp.target)
            if imp.at_import_time and target is not None and target != source:
                edges.setdefault(source, {}).setdefault(target, imp)
    problems: list[str] = []
    done: set[str] = set()

    def visit(node: str, path: list[str]) -> None:
        # Depth-first; an edge back into the current path closes a cycle.
        for nxt in sorted(edges.get(node, {})):
            if nxt in path:
                cycle = path[path.index(nxt) :] + [nxt]
                steps = "; ".join(edges[a][b].where() for a, b in pairwise(cycle))
                problems.append(f"import cycle {' -> '.join(cycle)}: {steps}")
            elif nxt not in done:
                visit(nxt, path + [nxt])
        done.add(node)

    for start in sorted(edges):
        if start not in done:
            visit(start, [start])
    return problems


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
    "core_never_imports_editor_layer": core_never_imports_editor_layer,
    "vocabulary_is_the_bottom": vocabulary_is_the_bottom,
    "providers_know_only_vocabulary_and_http": providers_know_only_vocabulary_and_http,
    "hashline_imports_only_vocabulary": hashline_imports_only_vocabulary,
    "plugins_do_not_load_executor": plugins_do_not_load_executor,
    "core_packages_form_no_cycle": core_packages_form_no_cycle,
    "builtin_tools_do_not_import_each_other": builtin_tools_do_not_import_each_other,
    "vocabulary_imported_from_its_home": vocabulary_imported_from_its_home,
}


@pytest.fixture(scope="module")
def project() -> dict[str, Module]:
    return scan(project_sources())


def test_scan_sees_the_whole_project(project: dict[str, Module]) -> None:
    for name in (VOCABULARY, ERRORS, "lich_core.providers.http", "lich_core.hashline.edit",
                 "lich_core.plugins.host", "lich_core.agent.loop", "lich_lsp.server"):
        assert name in project, f"{name} not scanned"
    assert len(project) > 50
    assert any(imp.target == VOCABULARY for imp in project["lich_core.providers.base"].imports)


@pytest.mark.parametrize("rule", sorted(RULES))
def test_layering(project: dict[str, Module], rule: str) -> None:
    problems = RULES[rule](project)
    assert not problems, f"{rule}:\n  " + "\n  ".join(problems)


# --- the checker itself catches what it should -------------------------------------------------

BREAKS = [
    ("core_never_imports_editor_layer", "lich_core/tools/zz_bad.py",
     "def f():\n    from lsprotocol import types\n", "lsprotocol"),
    ("core_never_imports_editor_layer", "lich_core/zz_bad.py",
     "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import lich_lsp.server\n", "lich_lsp.server"),
    ("vocabulary_is_the_bottom", "lich_core/vocabulary.py",
     "from lich_core.tools.types import ToolContext\n", "lich_core.tools.types"),
    ("providers_know_only_vocabulary_and_http", "lich_core/providers/zz_bad.py",
     "from lich_core.agent.messages import Message\n", "lich_core.agent.messages"),
    ("providers_know_only_vocabulary_and_http", "lich_core/providers/zz_bad.py",
     "import requests\n", "requests"),
    ("hashline_imports_only_vocabulary", "lich_core/hashline/zz_bad.py",
     "from ..workspace import FileChange\n", "lich_core.workspace"),
    ("hashline_imports_only_vocabulary", "lich_core/hashline/zz_bad.py",
     "from lich_core.errors import ToolError\n", "lich_core.errors"),
    ("plugins_do_not_load_executor", "lich_core/plugins/zz_bad.py",
     "from lich_core.tools.executor import ToolExecutor\n", "lich_core.tools.executor"),
    ("plugins_do_not_load_executor", "lich_core/plugins/zz_bad.py",
     "from lich_core.tools.builtin.terminal import TOOL\n",
     "lich_core/tools/builtin/terminal.py"),
    ("core_packages_form_no_cycle", "lich_core/providers/zz_bad.py",
     "from lich_core.agent.loop import Agent\n", "lich_core.agent -> lich_core.providers"),
    ("builtin_tools_do_not_import_each_other", "lich_core/tools/builtin/zz_bad.py",
     "from lich_core.tools.builtin.read_file import MAX_OUTPUT_CHARS\n", "lich_core.tools.builtin.read_file"),
    ("builtin_tools_do_not_import_each_other", "lich_core/tools/builtin/zz_bad.py",
     "from lich_core.tools.builtin import _grep_engine\ndef f():\n    from . import terminal\n",
     "lich_core.tools.builtin.terminal"),
    ("vocabulary_imported_from_its_home", "lich_lsp/zz_bad.py",
     "from lich_core.workspace import FileChange, LineReplacement\n", "LineReplacement"),
    ("vocabulary_imported_from_its_home", "lich_core/agent/zz_bad.py",
     "from .messages import Message\n", "lich_core.agent.messages"),
]


@pytest.mark.parametrize(("rule", "path", "source", "named"), BREAKS)
def test_a_layering_break_fails_naming_module_and_import(
    rule: str, path: str, source: str, named: str
) -> None:
    sources = project_sources()
    sources[path] = source
    problems = RULES[rule](scan(sources))
    assert problems, f"{rule} missed {source!r} in {path}"
    text = "\n".join(problems)
    assert path in text and named in text, text


def test_lazy_and_type_checking_imports_do_not_count_at_import_time() -> None:
    sources = project_sources()
    sources["lich_core/plugins/zz_ok.py"] = (
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from lich_core.tools.executor import ToolExecutor\n"
        "def run():\n    from lich_core.runtime import build_tool_runtime\n"
    )
    assert plugins_do_not_load_executor(scan(sources)) == []
