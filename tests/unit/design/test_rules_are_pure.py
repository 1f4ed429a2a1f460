"""The rules (each feature's rules/ package: functions/*/rules) are pure: they read and
write nothing, so they can be read and tested without any I/O. Importing every one of them
loads no AWS SDK, no vendor SDK, no integration and no data access besides the item models
(plain data); and no rule reads the world itself: each imports only modules that compute
(no `time`, `os`, `random`...) and calls nothing that reads the clock or the environment
(`now()`, `sleep()`, `os.environ`). The time a rule needs is given to it (functions/clock.py
reads it, outside the rules)."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
RULES_FILES = sorted(p for p in (ROOT / "functions").glob("*/rules/*.py") if p.stem != "__init__")
# Each rule by its dotted name: functions.batching.rules.debounce
RULES = [".".join(p.relative_to(ROOT).with_suffix("").parts) for p in RULES_FILES]
IO = ("boto3", "botocore", "openai", "twilio", "requests")
# What a rule may import: the standard library's modules that compute and read nothing,
# `regex`, the project's own plain models and other rules, and functions/clock.py for its
# conversions (iso, parse, epoch_ms): its `now()` and `sleep()` are refused below.
PURE_MODULES = {
    "__future__",
    "bisect",
    "collections",
    "dataclasses",
    "datetime",  # the types and their arithmetic; `now()` and `today()` are refused below
    "enum",
    "functools",
    "hashlib",  # digests of values given (a tool call's key)
    "itertools",
    "json",  # values to and from text, given
    "math",
    "pydantic",  # models of plain data (the batching rules a run carries)
    "re",
    "regex",
    "statistics",
    "string",
    "typing",
    "unicodedata",
}
PROJECT_MODULES = (
    *RULES,
    "functions.storage.models",
    "functions.intake.inbound",
    "functions.clock",
    "functions.setting_values",  # the kinds of a setting's value (BatchMode), read from text
)
# Calls that read the clock, the environment or chance, whatever module they come from.
READS = {"now", "today", "utcnow", "time", "monotonic", "perf_counter", "sleep", "getenv", "random", "uuid4"}


def test_importing_the_rules_loads_no_io():
    """Besides the packages above them, the rules load only each other and the plain
    modules of PROJECT_MODULES: no table module, no vendor SDK, no integration."""
    script = (
        "import importlib, sys\n"
        f"for name in {RULES!r}: importlib.import_module(name)\n"
        "print(sorted(m for m in sys.modules if m.startswith('functions.') or m.split('.')[0] in "
        f"{IO!r}))\n"
    )
    result = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    loaded = ast.literal_eval(result.stdout)
    packages = {".".join(p.relative_to(ROOT).parent.parts) for p in (ROOT / "functions").rglob("__init__.py")}
    assert [m for m in loaded if m not in packages and not m.startswith(PROJECT_MODULES)] == []
    assert len(RULES) >= 7


def reads_of(source: str) -> list[str]:
    """What a module's source imports that is not pure, and the calls in it that read."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level:
            module = node.module or ""
            names = [module] if _pure(module) else [f"{module}.{alias.name}" for alias in node.names]
        else:
            names = []
        found += [f"imports {name}" for name in names if not _pure(name)]
        if isinstance(node, ast.Call):
            called = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            if called in READS:
                found.append(f"calls {called}()")
        if isinstance(node, ast.Attribute) and node.attr == "environ":
            found.append("reads environ")
    return found


def _pure(module: str) -> bool:
    return module.split(".")[0] in PURE_MODULES or module.startswith(PROJECT_MODULES)


def test_no_rule_reads_the_clock_or_the_environment():
    reads = {rule: reads_of(path.read_text()) for rule, path in zip(RULES, RULES_FILES, strict=True)}

    assert {rule: found for rule, found in reads.items() if found} == {}


def test_the_check_sees_a_rule_that_reads():
    """The check itself, on made-up rules that read the world."""
    source = (
        "import os, time\n"
        "from datetime import UTC, datetime\n"
        "from functions.batching.settings import BatchingSettings\n"
        "from functions import clock\n"
        "def due(): return datetime.now(UTC), time.monotonic(), os.environ['X'], clock.now()\n"
    )
    assert sorted(reads_of(source)) == [
        "calls monotonic()",
        "calls now()",
        "calls now()",
        "imports functions.batching.settings.BatchingSettings",
        "imports os",
        "imports time",
        "reads environ",
    ]
