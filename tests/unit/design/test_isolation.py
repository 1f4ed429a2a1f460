"""What importing the tests loads: the unit tests no emulator, and no test module the CDK or
cfn-lint (every pytest-xdist worker collects every module; only the worker that runs the
synthesized group needs those, and they take seconds to import)."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).parents[2]
EMULATOR = ("moto", "werkzeug", "infra.local")
CDK = ("aws_cdk", "jsii", "cdk_nag", "cfnlint")

_SCRIPT = """
import importlib, json, sys
def loaded(prefixes):
    return sorted(m for m in sys.modules if m.split(".")[0] in prefixes or m.startswith(prefixes))
import tests.conftest, tests.unit.conftest
for name in {unit!r}: importlib.import_module(name)
after_unit = loaded({emulator!r})
for name in {others!r}: importlib.import_module(name)
print(json.dumps({{"unit": after_unit, "all": loaded({cdk!r})}}))
"""


def _module(path: Path) -> str:
    return ".".join(path.relative_to(TESTS.parent).with_suffix("").parts)


@pytest.fixture(scope="module")
def loaded() -> dict[str, list[str]]:
    """What a fresh interpreter holds after importing the unit tests, then every test."""
    unit = [_module(p) for p in sorted((TESTS / "unit").rglob("test_*.py"))]
    collected = sorted([*TESTS.glob("*/**/test_*.py"), *TESTS.glob("*/**/conftest.py")])
    others = [_module(p) for p in collected if _module(p) not in unit]
    script = _SCRIPT.format(unit=unit, others=others, emulator=EMULATOR, cdk=CDK)
    result = subprocess.run([sys.executable, "-c", script], cwd=TESTS.parent, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_unit_tests_import_no_emulator(loaded):
    assert loaded["unit"] == []


def test_collecting_the_tests_imports_neither_the_cdk_nor_cfn_lint(loaded):
    assert loaded["all"] == []
