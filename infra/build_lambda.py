"""Builds the Lambda assets into build/lambda: `code/functions` (our package) and
`dependencies/python` (the runtime dependencies for arm64 and the Lambda runtime's
Python, installed by pip from wheels: no Docker needed)."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BUILD = ROOT / "build" / "lambda"
LAMBDA_PYTHON = "3.14"
PLATFORM = "manylinux2014_aarch64"


def runtime_requirements() -> list[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    # boto3 ships with the Lambda runtime; leaving it out keeps the layer small.
    return [r for r in project["dependencies"] if not r.startswith("boto3")]


def build() -> None:
    code = BUILD / "code"
    shutil.rmtree(code, ignore_errors=True)
    shutil.copytree(
        ROOT / "functions", code / "functions", ignore=shutil.ignore_patterns("__pycache__", "*.pyc")
    )
    dependencies = BUILD / "dependencies" / "python"
    stamp = BUILD / "dependencies" / ".requirements"
    wanted = "\n".join(runtime_requirements())
    if stamp.exists() and stamp.read_text() == wanted:
        return
    shutil.rmtree(dependencies, ignore_errors=True)
    subprocess.run(
        [
            sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
            "--platform", PLATFORM, "--implementation", "cp", "--python-version", LAMBDA_PYTHON,
            "--only-binary=:all:", "--target", str(dependencies), *runtime_requirements(),
        ],
        check=True,
    )  # fmt: skip
    for provided in ("boto3", "botocore", "s3transfer"):  # in the Lambda runtime already
        for path in dependencies.glob(f"{provided}*"):
            shutil.rmtree(path)
    stamp.write_text(wanted)


if __name__ == "__main__":
    build()
