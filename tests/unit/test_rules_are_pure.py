"""The rules (functions/logic/rules) are pure: they read and write nothing, so they can be
read and tested without any I/O. Importing every one of them loads no AWS SDK, no vendor
SDK, no integration and no data access besides the item models (plain data)."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
RULES = sorted(p.stem for p in (ROOT / "functions" / "logic" / "rules").glob("*.py") if p.stem != "__init__")
IO = ("boto3", "botocore", "openai", "twilio", "requests", "functions.integrations", "functions.dal.")
ALLOWED = ("functions.dal.models",)


def test_importing_the_rules_loads_no_io():
    script = (
        "import importlib, sys\n"
        f"for name in {RULES!r}: importlib.import_module('functions.logic.rules.' + name)\n"
        f"print(sorted(m for m in sys.modules if m.startswith({IO!r}) and m not in {ALLOWED!r}))\n"
    )
    result = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"
    assert len(RULES) >= 7
