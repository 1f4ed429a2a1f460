"""One definition of each thing: DynamoDB expressions live in functions/storage/expressions.py,
turn ids are built by functions/storage/tables.py, and the public base URL is split from its
connection overrides by functions/public_url.py only."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
SOURCES = sorted(p for folder in ("functions", "infra") for p in (ROOT / folder).rglob("*.py"))
TESTS = sorted((ROOT / "tests").rglob("*.py"))


def _where(paths: list[Path], pattern: str, allowed: set[str]) -> list[str]:
    found = re.compile(pattern)
    return [
        f"{path.relative_to(ROOT)}:{n}"
        for path in paths
        if str(path.relative_to(ROOT)) not in allowed
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if found.search(line)
    ]


def _literal(node: ast.expr) -> bool:
    """A string written at the call: a constant, an f-string, or one joined from them."""
    if isinstance(node, ast.Constant | ast.JoinedStr):
        return isinstance(node, ast.JoinedStr) or isinstance(node.value, str)
    return isinstance(node, ast.BinOp) and _literal(node.left) and _literal(node.right)


def test_every_fixed_dynamodb_expression_is_one_of_expressions_py():
    written = []
    for path in SOURCES:
        if path.name == "expressions.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            pairs: list[tuple[str | None, ast.expr]] = []
            if isinstance(node, ast.Call):
                pairs = [(k.arg, k.value) for k in node.keywords]
            elif isinstance(node, ast.Dict):
                pairs = [
                    (k.value if isinstance(k, ast.Constant) else None, v)
                    for k, v in zip(node.keys, node.values, strict=True)
                ]
            written += [
                f"{path.relative_to(ROOT)}:{value.lineno} {name}"
                for name, value in pairs
                if isinstance(name, str) and name.endswith("Expression") and _literal(value)
            ]
    assert written == []


def test_turn_ids_are_built_in_one_place():
    assert _where(SOURCES + TESTS, r"[12]-(user|assistant)\b", {"functions/storage/tables.py"}) == []


def test_the_base_url_is_split_from_its_overrides_in_one_place():
    # The Twilio stand-in reads a URL's fragment as Twilio does: the receiving side.
    allowed = {"functions/public_url.py", "infra/local/connection_overrides.py"}
    assert _where(SOURCES, r"""partition\(["']#["']\)|split\(["']#["']""", allowed) == []
