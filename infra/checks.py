"""Checks of a built Lambda asset (build/lambda: `code/`, and the layer in
`dependencies/python/`). Each returns the problems it found, as sentences; none is an
empty list."""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys
from pathlib import Path

from functions.storage.tables import ALL_TABLES

# The Python of the Lambda runtime (RUNTIME in infra/constructs/functions.py), which the
# tests run on too (the Makefile finds it).
LAMBDA_PYTHON = "3.13"
# The first bytes of a .pyc that Python 3.13 writes and reads (importlib.util.MAGIC_NUMBER
# under 3.13); it ignores bytecode with any other, and compiles the source again.
LAMBDA_MAGIC = b"\xf3\r\r\n"
# The name it gives the bytecode of `<module>.py`: `__pycache__/<module>.cpython-313.pyc`
# (sys.implementation.cache_tag under 3.13). Lambda sets no PYTHONPYCACHEPREFIX.
LAMBDA_CACHE_TAG = "cpython-" + LAMBDA_PYTHON.replace(".", "")
# The flags of a .pyc (PEP 552, its bytes 4 to 8): 0b01 is hash-based and unchecked,
# loaded without reading the source; 0b11 hashes the source at every import, 0 compares
# its modification time.
UNCHECKED_HASH = 0b01
# Code and layers together, unzipped: "Unzipped size must be smaller than 262144000 bytes"
# (https://docs.aws.amazon.com/lambda/latest/dg/gettingstarted-limits.html: 250 MB).
LAMBDA_UNZIPPED_LIMIT = 262_144_000
MB = 1024 * 1024
ELF_MAGIC = b"\x7fELF"
ELF_AARCH64 = 183  # e_machine of arm64 (Lambda's Architecture.ARM_64)
# The settings the stack gives every function, enough for every handler to import.
DEPLOYED_SETTINGS = {
    "AWS_DEFAULT_REGION": "us-east-1",
    "EVENT_BUS_NAME": "bus",
    **{t.env_var: t.logical_id for t in ALL_TABLES},
}
_EXTENSION_TAG = re.compile(r"\.cpython-(\d+)")
_PIN = re.compile(r"^([A-Za-z0-9._-]+)==([^\s;\\]+)", re.MULTILINE)


def _normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def bytecode_problems(root: Path) -> list[str]:
    """Every module under `root` that Lambda's Python would compile at each cold start (its
    code and layer directories are read-only): one without its unchecked-hash .pyc for
    Lambda's Python in its `__pycache__`, or whose .pyc is of another source; and every
    .pyc that Lambda's Python would not use."""
    problems, missing = [], []
    for source in sorted(root.rglob("*.py")):
        pyc = source.parent / "__pycache__" / f"{source.stem}.{LAMBDA_CACHE_TAG}.pyc"
        if not pyc.is_file():
            missing.append(str(source.relative_to(root)))
            continue
        with pyc.open("rb") as file:
            header = file.read(16)
        flags, module = int.from_bytes(header[4:8], "little"), source.relative_to(root)
        if header[:4] == LAMBDA_MAGIC and flags != UNCHECKED_HASH:
            problems.append(f"{module}: its bytecode is not unchecked-hash (flags {flags:#04b})")
        elif header[:4] == LAMBDA_MAGIC and header[8:16] != importlib.util.source_hash(source.read_bytes()):
            problems.append(f"{module}: its bytecode is stale (of another source)")
    if missing:
        examples = ", ".join(missing[:3]) + (", ..." if len(missing) > 3 else "")
        problems.append(
            f"{len(missing)} modules with no bytecode for {LAMBDA_CACHE_TAG}, "
            f"compiled at every cold start: {examples}"
        )
    for pyc in sorted(root.rglob("*.pyc")):
        with pyc.open("rb") as file:
            magic = file.read(4)
        if magic != LAMBDA_MAGIC or not pyc.name.endswith(f".{LAMBDA_CACHE_TAG}.pyc"):
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
    """Bytecode, native code and size of the whole asset (code and layer)."""
    return (
        bytecode_problems(root / "code")
        + bytecode_problems(root / "dependencies")
        + native_problems(root / "dependencies")
        + size_problems(root)
    )


def unzipped_size(root: Path, parts: tuple[str, ...] = ("code", "dependencies")) -> int:
    """The bytes of the asset's code and layer (`parts`), as Lambda counts them: unzipped."""
    return sum(p.stat().st_size for part in parts for p in (root / part).rglob("*") if p.is_file())


def describe_size(root: Path) -> str:
    code, layer = (unzipped_size(root, (part,)) for part in ("code", "dependencies"))
    return (
        f"code {code / MB:.1f} MB + layer {layer / MB:.1f} MB = {(code + layer) / MB:.1f} MB unzipped, "
        f"of Lambda's {LAMBDA_UNZIPPED_LIMIT // MB} MB"
    )


def size_problems(root: Path) -> list[str]:
    """The asset if its code and layer, unzipped, are not smaller than Lambda's limit."""
    size = unzipped_size(root)
    if size < LAMBDA_UNZIPPED_LIMIT:
        return []
    limit = LAMBDA_UNZIPPED_LIMIT // MB
    return [f"code and layer take {size / MB:.1f} MB unzipped, not under Lambda's {limit} MB"]


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
    result = subprocess.run(
        [python, "-I", "-S", "-X", f"pycache_prefix={pycache}", "-c", script],
        cwd=code,
        env=DEPLOYED_SETTINGS,
        capture_output=True,
        text=True,
    )
    if result.returncode != 0:
        return [f"the import of the handlers failed: {result.stderr.strip()[-2000:]}"]
    report = json.loads(result.stdout)
    if str(Path(__file__).resolve().parent.parent) in report["path"]:
        return ["the project directory was on sys.path: the import proves nothing"]
    return [f"{handler} does not import: {error}" for handler, error in report["failures"].items()]
