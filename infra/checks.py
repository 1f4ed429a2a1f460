"""Checks of a built Lambda asset (build/lambda: `code/`, and the layer in
`dependencies/python/`). Each returns the problems it found, as sentences; none is an
empty list."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

from functions.dal.tables import ALL_TABLES

# The Python of the Lambda runtime (RUNTIME in infra/constructs/functions.py), which the
# tests run on too (the Makefile finds it).
LAMBDA_PYTHON = "3.13"
# The first bytes of a .pyc that Python 3.13 writes and reads (importlib.util.MAGIC_NUMBER
# under 3.13); it ignores bytecode with any other, and compiles the source again.
LAMBDA_MAGIC = b"\xf3\r\r\n"
ELF_MAGIC = b"\x7fELF"
ELF_AARCH64 = 183  # e_machine of arm64 (Lambda's Architecture.ARM_64)
_EXTENSION_TAG = re.compile(r"\.cpython-(\d+)")
_PIN = re.compile(r"^([A-Za-z0-9._-]+)==([^\s;\\]+)", re.MULTILINE)


def _normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def bytecode_problems(root: Path) -> list[str]:
    """Every .pyc under `root` that Lambda's Python would not use."""
    problems = []
    for pyc in sorted(root.rglob("*.pyc")):
        with pyc.open("rb") as file:
            magic = file.read(4)
        if magic != LAMBDA_MAGIC:
            problems.append(
                f"{pyc.relative_to(root)}: bytecode for another Python (magic {magic!r}), "
                f"which Python {LAMBDA_PYTHON} ignores"
            )
    return problems


def native_problems(root: Path) -> list[str]:
    """Every native library under `root` built for another machine than arm64, and every
    extension module built for another Python than Lambda's."""
    wanted_tag = LAMBDA_PYTHON.replace(".", "")
    problems = []
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        with path.open("rb") as file:
            header = file.read(20)
        if not header.startswith(ELF_MAGIC):
            continue
        machine = int.from_bytes(header[18:20], "big" if header[5] == 2 else "little")
        if machine != ELF_AARCH64:
            problems.append(f"{path.relative_to(root)}: native code for another machine ({machine})")
        tag = _EXTENSION_TAG.search(path.name)
        if tag and tag.group(1) != wanted_tag:
            problems.append(f"{path.relative_to(root)}: an extension module for Python {tag.group(1)}")
    return problems


def asset_problems(root: Path) -> list[str]:
    """Bytecode and native code of the whole asset (code and layer)."""
    return bytecode_problems(root) + native_problems(root / "dependencies")


def distributions(directory: Path) -> dict[str, str]:
    """The distributions installed in `directory` (a --target install): name to version."""
    found = {}
    for info in directory.glob("*.dist-info"):
        name, _, version = info.name.removesuffix(".dist-info").rpartition("-")
        found[_normalized(name)] = version
    return found


def missing_distributions(directory: Path, requirements: str) -> list[str]:
    """Every `name==version` of `requirements` (as uv export writes them) for Linux that
    `directory` does not hold at that version."""
    installed = distributions(directory)
    problems = []
    for line in requirements.splitlines():
        pin = _PIN.match(line)
        if not pin or "sys_platform == 'emscripten'" in line or "sys_platform == 'win32'" in line:
            continue
        name, version = _normalized(pin.group(1)), pin.group(2)
        if installed.get(name) != version:
            problems.append(f"the layer lacks {name}=={version} (holds {installed.get(name)})")
    return problems


_IMPORT_EVERY_HANDLER = """
import json, sys
from functions.registry import ALL_FUNCTIONS
failures = {}
for definition in ALL_FUNCTIONS:
    try:
        definition.load()
    except Exception as error:
        failures[definition.handler] = f"{type(error).__name__}: {error}"
print(json.dumps({"failures": failures, "path": sys.path}))
"""


def import_problems(code: Path, layers: list[Path], pycache: Path, python: str = sys.executable) -> list[str]:
    """Every handler of the registry in `code` that does not import with only `code` and
    `layers` (and the standard library) on sys.path: in a fresh `python`, isolated (-I -S:
    no site-packages, no PYTHONPATH, no working directory; it runs in `code`), with the
    settings the stack gives every function. Its bytecode goes to `pycache`, not into the
    asset."""
    entries = [str(code.resolve()), *(str(layer.resolve()) for layer in layers)]
    script = f"import sys; sys.path[:0] = {entries!r}\n{_IMPORT_EVERY_HANDLER}"
    settings = {t.env_var: t.logical_id for t in ALL_TABLES}
    result = subprocess.run(
        [python, "-I", "-S", "-X", f"pycache_prefix={pycache}", "-c", script],
        cwd=code,
        env={"AWS_DEFAULT_REGION": "us-east-1", "EVENT_BUS_NAME": "bus", **settings},
        capture_output=True,
        text=True,
    )
    if result.returncode != 0:
        return [f"the import of the handlers failed: {result.stderr.strip()[-2000:]}"]
    report = json.loads(result.stdout)
    if str(Path(__file__).resolve().parent.parent) in report["path"]:
        return ["the project directory was on sys.path: the import proves nothing"]
    return [f"{handler} does not import: {error}" for handler, error in report["failures"].items()]
