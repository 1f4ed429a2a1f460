"""Builds the Lambda assets into build/lambda: `code/functions` (our package) and
`dependencies/python` (the layer: the runtime dependencies exactly as uv.lock pins them,
installed by uv from wheels for arm64 and the Lambda runtime's Python; no Docker, and no
bytecode: the runtime compiles what it imports). Then checks them (infra/checks.py):
`python -m infra.build_lambda` fails on any problem."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from uv import find_uv_bin

from infra import checks
from infra.checks import LAMBDA_PYTHON

ROOT = Path(__file__).resolve().parent.parent
BUILD = ROOT / "build" / "lambda"
# Lambda's Python runs on Amazon Linux 2023 (glibc 2.34): manylinux_2_28 wheels and older
# ones (manylinux2014 is manylinux_2_17) install; a wheel for a newer glibc does not.
LAMBDA_PLATFORM = "aarch64-manylinux_2_28"
PROVIDED = ("boto3", "botocore", "s3transfer")  # in the Lambda runtime already


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


def runtime_requirements(*, with_provided: bool = False) -> str:
    """The runtime dependencies as uv.lock pins them, with their hashes (requirements
    format); without the packages the Lambda runtime provides, unless `with_provided`.
    Fails if uv.lock does not match pyproject.toml (run `make lock`)."""
    leave_out = [] if with_provided else [a for name in PROVIDED for a in ("--no-emit-package", name)]
    return _uv(
        "export", "--locked", "--no-dev", "--no-emit-project", "--no-header", "--quiet",
        "--format", "requirements-txt", *leave_out,
    )  # fmt: skip


def install(requirements: str, target: Path, *, for_lambda: bool = True) -> None:
    """Installs `requirements` into `target` from wheels only, hashes checked, without
    bytecode: for Lambda's platform and Python, or (`for_lambda=False`) for this machine's."""
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


def build(root: Path = BUILD) -> None:
    """The code and the layer into `root`. The layer is rebuilt only when the lock's
    runtime dependencies (or the target) changed since the last build."""
    code = root / "code"
    shutil.rmtree(code, ignore_errors=True)
    shutil.copytree(
        ROOT / "functions", code / "functions", ignore=shutil.ignore_patterns("__pycache__", "*.pyc")
    )
    stamp = root / ".dependencies"  # beside the layer, not in it
    wanted = f"{LAMBDA_PLATFORM} {LAMBDA_PYTHON}\n{runtime_requirements()}"
    layer = root / "dependencies" / "python"
    if layer.is_dir() and stamp.exists() and stamp.read_text() == wanted:
        return
    stamp.unlink(missing_ok=True)
    install(wanted.partition("\n")[2], layer)
    stamp.write_text(wanted)


def verify(root: Path = BUILD) -> list[str]:
    """The problems of the asset in `root` (empty when there are none): its bytecode and
    native code are for Lambda's Python and machine, its layer holds every runtime
    dependency of the lock, and every handler imports from the code and the layer alone.
    For that import, the same lock is installed for this machine (Lambda's wheels may not
    load here) with the packages the runtime provides, into `root`/host."""
    layer = root / "dependencies" / "python"
    problems = checks.asset_problems(root)
    problems += checks.missing_distributions(layer, runtime_requirements())
    if problems:
        return problems
    host = root / "host" / "python"
    wanted = runtime_requirements(with_provided=True)
    stamp = root / "host" / ".requirements"
    if not (host.is_dir() and stamp.exists() and stamp.read_text() == wanted):
        install(wanted, host, for_lambda=False)
        stamp.write_text(wanted)
    host_distributions = checks.distributions(host)
    for name in PROVIDED:
        host_distributions.pop(name, None)
    if checks.distributions(layer) != host_distributions:
        problems.append("the layer and its twin for this machine hold different distributions")
    return problems + checks.import_problems(root / "code", [host], pycache=root / "host" / "pycache")


def main() -> int:
    build()
    problems = verify()
    for problem in problems:
        print(f"build/lambda: {problem}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
