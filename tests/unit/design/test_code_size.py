"""The code stays readable in pieces: no function in functions/ or infra/ over 50 lines
(from its `def` to its last line, docstring included) and no file there over 500: a
concept (a table's access, a protocol) is kept whole in one file rather than cut to a count."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
SOURCES = sorted(p for folder in ("functions", "infra") for p in (ROOT / folder).rglob("*.py"))
MAX_FUNCTION_LINES, MAX_FILE_LINES = 50, 500


def test_the_sources_are_found():
    assert {p.relative_to(ROOT).parts[0] for p in SOURCES} == {"functions", "infra"}


def test_no_function_is_over_50_lines():
    long = [
        f"{path.relative_to(ROOT)}:{node.lineno} {node.name} ({node.end_lineno - node.lineno + 1} lines)"
        for path in SOURCES
        for node in ast.walk(ast.parse(path.read_text(), str(path)))
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and (node.end_lineno or node.lineno) - node.lineno + 1 > MAX_FUNCTION_LINES
    ]
    assert long == []


def test_no_file_is_over_500_lines():
    long = [
        f"{path.relative_to(ROOT)} ({count} lines)"
        for path in SOURCES
        if (count := len(path.read_text().splitlines())) > MAX_FILE_LINES
    ]
    assert long == []
