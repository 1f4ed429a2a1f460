"""Builds the Lambda assets into build/lambda: `code/functions` (our package) and
`dependencies/python` (the layer: the runtime dependencies exactly as uv.lock pins them,
the AWS SDK too, installed by uv from wheels for arm64 and the Lambda runtime's Python; no
Docker), every module compiled for that Python. Then checks them (infra/checks.py):
`python -m infra.build_lambda` fails on any problem, and prints the asset's size."""

from __future__ import annotations

import os
import py_compile
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from uv import find_uv_bin

from infra import checks
from infra.checks import LAMBDA_CACHE_TAG, LAMBDA_PYTHON

ROOT = Path(__file__).resolve().parent.parent
BUILD = ROOT / "build" / "lambda"
# Lambda's Python runs on Amazon Linux 2023 (glibc 2.34): manylinux_2_28 wheels and older
# ones (manylinux2014 is manylinux_2_17) install; a wheel for a newer glibc does not.
LAMBDA_PLATFORM = "aarch64-manylinux_2_28"
# Lambda's code and layer directories are read-only: the bytecode is shipped, compiled so
# that the runtime loads it without reading the sources
# (docs/adr/0089-the-asset-ships-unchecked-hash-bytecode.md).
BYTECODE = py_compile.PycInvalidationMode.UNCHECKED_HASH


def _uv(*args: str) -> str:
    """Runs uv on the project with this interpreter, never a Python it would download."""
    result = subprocess.run(
        [os.fsdecode(find_uv_bin()), *args],
        cwd=ROOT,
        env={**os.environ, "UV_PYTHON_DOWNLOADS": "never"},
        stdout=subprocess.PIPE,
        text=True,
        check=True,
    )
    return result.stdout


def runtime_requirements() -> str:
    """The runtime dependencies as uv.lock pins them, with their hashes (requirements
    format), the AWS SDK (boto3, botocore, s3transfer) too: the Lambda runtime bundles its
    own, of another version, which the layer's comes before on sys.path. Fails if uv.lock
    does not match pyproject.toml (run `make lock`)."""
    return _uv(
        "export", "--locked", "--no-dev", "--no-emit-project", "--no-header", "--quiet",
        "--format", "requirements-txt",
    )  # fmt: skip


def install(requirements: str, target: Path, *, for_lambda: bool = True) -> None:
    """Installs `requirements` into `target` from wheels only, hashes checked, then compiles
    them (compile_bytecode): for Lambda's platform and Python, or (`for_lambda=False`) for
    this machine's."""
    shutil.rmtree(target, ignore_errors=True)
    platform = ["--python-platform", LAMBDA_PLATFORM, "--python-version", LAMBDA_PYTHON] if for_lambda else []
    with tempfile.TemporaryDirectory() as scratch:
        pinned = Path(scratch) / "requirements.txt"
        pinned.write_text(requirements)
        _uv(
            "pip", "install", "--quiet", "--python", sys.executable, "--target", str(target), *platform,
            "--only-binary", ":all:", "--no-deps", "--require-hashes", "--no-compile-bytecode",
            "-r", str(pinned),
        )  # fmt: skip
    compile_bytecode(target, deployed_as="/opt/python")


def compile_bytecode(directory: Path, deployed_as: str) -> None:
    """Compiles every module under `directory` with this Python (Lambda's: checks.py ties
    them) into its `__pycache__/<module>.cpython-313.pyc`, where Lambda's Python looks for
    it, whatever PYTHONPYCACHEPREFIX this build runs with (the Makefile sets one), as
    unchecked-hash bytecode (PEP 552): loaded without reading the source or its time, which
    zipping and unzipping do not keep. `deployed_as`: the directory's path on Lambda, which
    the bytecode names as its sources' (not this machine's)."""
    if sys.implementation.cache_tag != LAMBDA_CACHE_TAG:
        raise RuntimeError(f"bytecode for Lambda is compiled by Python {LAMBDA_PYTHON}, not {sys.version}")
    for source in sorted(directory.rglob("*.py")):
        py_compile.compile(
            str(source),
            cfile=str(source.parent / "__pycache__" / f"{source.stem}.{LAMBDA_CACHE_TAG}.pyc"),
            dfile=f"{deployed_as}/{source.relative_to(directory).as_posix()}",
            doraise=True,
            invalidation_mode=BYTECODE,
        )


def build(root: Path = BUILD) -> None:
    """The code and the layer into `root`, compiled. The layer is rebuilt only when the
    lock's runtime dependencies (or the target, or how it is compiled) changed since the
    last build."""
    code = root / "code"
    shutil.rmtree(code, ignore_errors=True)
    shutil.copytree(
        ROOT / "functions", code / "functions", ignore=shutil.ignore_patterns("__pycache__", "*.pyc")
    )
    compile_bytecode(code, deployed_as="/var/task")
    stamp = root / ".dependencies"  # beside the layer, not in it
    wanted = f"{LAMBDA_PLATFORM} {LAMBDA_PYTHON} {BYTECODE.name}\n{runtime_requirements()}"
    layer = root / "dependencies" / "python"
    if layer.is_dir() and stamp.exists() and stamp.read_text() == wanted:
        return
    stamp.unlink(missing_ok=True)
    install(wanted.partition("\n")[2], layer)
    stamp.write_text(wanted)


def host_layer(root: Path = BUILD) -> Path:
    """The layer's twin for this machine, in `root`/host/python: the same lock installed
    and compiled the same way, but for this machine (the layer's native code, for arm64,
    may not load here). Installed again only when the lock changed."""
    host = root / "host" / "python"
    wanted = f"{BYTECODE.name}\n{runtime_requirements()}"
    stamp = root / "host" / ".requirements"
    if not (host.is_dir() and stamp.exists() and stamp.read_text() == wanted):
        stamp.unlink(missing_ok=True)
        install(wanted.partition("\n")[2], host, for_lambda=False)
        stamp.write_text(wanted)
    return host


def verify(root: Path = BUILD) -> list[str]:
    """The problems of the asset in `root` (empty when there are none): every module
    compiled for Lambda's Python as it loads it and no bytecode for another, native code for
    Lambda's Python and machine, code and layer within Lambda's size limit, the layer
    holding every runtime dependency of the lock, and every handler importing from the code
    and the layer alone. For that import, the layer's twin for this machine (host_layer)."""
    layer = root / "dependencies" / "python"
    problems = checks.asset_problems(root)
    problems += checks.missing_distributions(layer, runtime_requirements())
    if problems:
        return problems
    host = host_layer(root)
    if checks.distributions(layer) != checks.distributions(host):
        problems.append("the layer and its twin for this machine hold different distributions")
    return problems + checks.import_problems(root / "code", [host], pycache=root / "host" / "pycache")


def main() -> int:
    build()
    problems = verify()
    print(f"build/lambda: {checks.describe_size(BUILD)}")
    for problem in problems:
        print(f"build/lambda: {problem}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
