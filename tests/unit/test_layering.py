"""The layers of functions/, read from the source (ast, nothing imported): every import runs
from the handlers towards the leaves, and no modules import each other in a loop. An
import anywhere in a module counts, inside a function or under TYPE_CHECKING too: a lazy
import is still a dependency, and a loop hidden in one is still a knot."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
PACKAGE = "functions"

# The layers, highest first; the most specific prefix decides. A module imports from its own
# layer or a lower one, never from a higher one.
#   5 handlers: the entry points Lambda calls
#   4 logic/states, logic/entry_points: one operation per task state or entry point
#   3 logic/shared: the pieces the operations share, with I/O
#   2 logic/rules: pure rules, no I/O
#   1 dal, integrations: DynamoDB and the vendors' SDKs
#   0 the leaves: the top-level modules (config, contract, errors, registry, models of the
#     run and of OpenAI's items...) and dal's definitions that do no I/O (items, tables,
#     expressions)
LAYERS: dict[str, int] = {
    "functions.handlers": 5,
    "functions.logic.states": 4,
    "functions.logic.entry_points": 4,
    "functions.logic.shared": 3,
    "functions.logic.rules": 2,
    "functions.dal.models": 0,
    "functions.dal.tables": 0,
    "functions.dal.expressions": 0,
    "functions.dal": 1,
    "functions.integrations": 1,
    "functions": 0,
}


def modules(root: Path) -> dict[str, Path]:
    """Every module under functions/ by its dotted name (a package by its own name)."""
    found = {}
    for path in sorted((root / PACKAGE).rglob("*.py")):
        parts = path.relative_to(root).with_suffix("").parts
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def imports(root: Path) -> dict[str, set[str]]:
    """Each module → the modules of functions/ it imports (`from functions.dal import turns`
    imports functions.dal.turns)."""
    known = modules(root)
    graph: dict[str, set[str]] = {}
    for name, path in known.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        imported: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                imported |= {alias.name for alias in node.names}
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:  # relative: from the package, up level - 1
                    anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*anchor, base] if base else anchor)
                imported |= {f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names}
        graph[name] = {m for m in imported if m in known and m != name and not _is_package(known[m])}
    return graph


def _is_package(path: Path) -> bool:
    return path.name == "__init__.py"


def layer(module: str) -> int:
    prefix = max((p for p in LAYERS if module == p or module.startswith(p + ".")), key=len)
    return LAYERS[prefix]


def upward_imports(graph: dict[str, set[str]]) -> list[str]:
    return sorted(
        f"{module} (layer {layer(module)}) imports {target} (layer {layer(target)})"
        for module, targets in graph.items()
        for target in targets
        if layer(target) > layer(module)
    )


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One loop through each group of modules that import each other (Tarjan's strongly
    connected components, each with more than one module)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    groups: list[list[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        for target in sorted(graph.get(module, ())):
            if target not in index:
                visit(target)
                low[module] = min(low[module], low[target])
            elif target in stack:
                low[module] = min(low[module], index[target])
        if low[module] == index[module]:
            group = []
            while True:
                member = stack.pop()
                group.append(member)
                if member == module:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for module in sorted(graph):
        if module not in index:
            visit(module)
    return groups


def test_every_module_of_functions_is_in_a_layer():
    assert all(name.startswith(PACKAGE) for name in modules(ROOT))
    assert len(modules(ROOT)) > 50  # the walk found the tree


def test_no_import_runs_from_a_lower_layer_to_a_higher_one():
    assert upward_imports(imports(ROOT)) == []


def test_no_modules_import_each_other():
    assert cycles(imports(ROOT)) == []


def test_the_checks_see_a_loop_and_an_upward_import():
    """The checks themselves, on a made-up graph."""
    graph = {
        "functions.logic.shared.a": {"functions.logic.entry_points.b"},
        "functions.logic.entry_points.b": {"functions.logic.shared.a", "functions.config"},
        "functions.config": set(),
    }
    assert cycles(graph) == [["functions.logic.entry_points.b", "functions.logic.shared.a"]]
    assert upward_imports(graph) == [
        "functions.logic.shared.a (layer 3) imports functions.logic.entry_points.b (layer 4)"
    ]
