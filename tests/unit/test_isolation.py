"""Unit tests stay fast and independent: importing them loads no emulator."""

import subprocess
import sys
from pathlib import Path

UNIT = Path(__file__).parent


def test_unit_tests_import_no_emulator():
    modules = [f"tests.unit.{p.stem}" for p in sorted(UNIT.glob("test_*.py")) if p.stem != "test_isolation"]
    script = (
        "import importlib, sys\n"
        "import tests.conftest, tests.unit.conftest\n"
        f"for name in {modules!r}: importlib.import_module(name)\n"
        "loaded = sorted(m for m in sys.modules if m.startswith(('moto', 'werkzeug', 'infra.local')))\n"
        "print(loaded)\n"
        "sys.exit(1 if loaded else 0)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script], cwd=UNIT.parent.parent, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stdout + result.stderr
