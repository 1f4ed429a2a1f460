"""The layers of functions/ and infra/, read from the source (ast, nothing imported): every
import runs from the handlers towards the leaves, features never reach up to the operations
that compose them, no operation imports another, and no modules import each other in a
loop. An import anywhere in a module counts, inside a function or under TYPE_CHECKING too:
a lazy import is still a dependency, and a loop hidden in one is still a knot."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
PACKAGES = ("functions", "infra")

# The features: each a package under functions/ holding its logic, its rules (rules/, pure)
# and its tables' access. Features import the leaves, storage and each other (no loop).
FEATURES = (
    "tenancy",
    "intake",
    "batching",
    "answer",
    "assistant",
    "delivery",
    "guards",
    "handoff",
    "personal_data",
)
# The operations: one module per task state or entry point, each composing features.
ORCHESTRATORS = ("functions.states", "functions.entry_points")

# The layers, highest first; the most specific prefix decides. A module imports from its own
# layer or a lower one, never from a higher one.
#   5 infra: the stack, the local stack and the operator's commands
#   4 handlers: the entry points Lambda calls
#   3 states, entry_points: the operations
#   2 the features, with the run contract and the registry of functions they name
#   1 storage: the DynamoDB plumbing, the tables' definitions and items
#   0 the leaves: the top-level modules (clock, config, errors, observability...)
LAYERS: dict[str, int] = {
    "infra": 5,
    "functions.handlers": 4,
    **dict.fromkeys(ORCHESTRATORS, 3),
    **{f"functions.{feature}": 2 for feature in FEATURES},
    "functions.contract": 2,
    "functions.registry": 2,
    "functions.storage": 1,
    "functions.intake.inbound": 1,  # what Twilio sends: plain data, which the stored items hold
    "functions": 0,
}


def modules(root: Path) -> dict[str, Path]:
    """Every module under functions/ and infra/ by its dotted name (a package by its own name)."""
    found = {}
    for path in sorted(p for package in PACKAGES for p in (root / package).rglob("*.py")):
        parts = path.relative_to(root).with_suffix("").parts
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def imports(root: Path) -> dict[str, set[str]]:
    """Each module → the modules of functions/ and infra/ it imports (`from functions.answer import
    turns` imports functions.answer.turns)."""
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


def sideways_imports(graph: dict[str, set[str]]) -> list[str]:
    """An operation that imports another: what they share belongs to a feature."""

    def operation(module: str) -> bool:
        return module.startswith(tuple(f"{o}." for o in ORCHESTRATORS))

    return sorted(
        f"{module} imports {target}"
        for module, targets in graph.items()
        for target in targets
        if operation(module) and operation(target)
    )


def test_every_package_of_functions_is_a_feature_or_a_layer():
    """A new folder under functions/ is declared: a feature, or one of the layers."""
    folders = {p.parent.name for p in (ROOT / "functions").glob("*/__init__.py")}
    assert folders == {*FEATURES, "states", "entry_points", "handlers", "storage"}
    assert len(modules(ROOT)) > 100  # the walk found both trees


def test_no_import_runs_from_a_lower_layer_to_a_higher_one():
    assert upward_imports(imports(ROOT)) == []


def test_no_operation_imports_another():
    assert sideways_imports(imports(ROOT)) == []


def test_no_modules_import_each_other():
    assert cycles(imports(ROOT)) == []


def test_the_checks_see_a_loop_an_upward_and_a_sideways_import():
    """The checks themselves, on a made-up graph."""
    graph = {
        "functions.batching.a": {"functions.entry_points.b"},
        "functions.entry_points.b": {"functions.batching.a", "functions.config", "functions.states.c"},
        "functions.config": set(),
        "functions.states.c": set(),
    }
    assert cycles(graph) == [["functions.batching.a", "functions.entry_points.b"]]
    assert upward_imports(graph) == [
        "functions.batching.a (layer 2) imports functions.entry_points.b (layer 3)"
    ]
    assert sideways_imports(graph) == ["functions.entry_points.b imports functions.states.c"]
