"""The Lambda asset as `make build` makes it (infra/build_lambda.py), built here where it
builds it (build/lambda; its layer again only when uv.lock's runtime dependencies changed, so
that `make preflight` after the tests finds it built): bytecode and native code for Lambda's Python and arm64
only, every runtime dependency of the lock in the layer, every handler importing from the
code and the layer alone. And the checks themselves find what they look for."""

from __future__ import annotations

import importlib.util
import shutil
import sys
from pathlib import Path

import pytest

from infra import build_lambda, checks

pytestmark = pytest.mark.infra

PYTHON_3_11_MAGIC = b"\xa7\r\r\n"


@pytest.fixture(scope="module")
def asset() -> Path:
    build_lambda.build()
    return build_lambda.BUILD


def _elf(machine: int) -> bytes:
    """The first bytes of a 64-bit little-endian ELF file for `machine`."""
    return checks.ELF_MAGIC + b"\x02\x01\x01" + bytes(9) + b"\x03\x00" + machine.to_bytes(2, "little")


def test_lambda_runs_the_python_the_tests_run_and_the_layer_is_built_for():
    from infra.constructs.functions import RUNTIME  # the CDK: not at collection

    running = f"{sys.version_info.major}.{sys.version_info.minor}"
    assert running == checks.LAMBDA_PYTHON
    assert RUNTIME.name == f"python{running}"
    assert checks.LAMBDA_MAGIC == importlib.util.MAGIC_NUMBER


def test_the_asset_holds_no_bytecode_and_native_code_only_for_arm64_and_python_3_13(asset):
    assert checks.asset_problems(asset) == []
    assert [p for part in ("code", "dependencies") for p in (asset / part).rglob("*.pyc")] == []
    native = [p for p in (asset / "dependencies").rglob("*.so") if p.read_bytes()[:4] == checks.ELF_MAGIC]
    assert native, "the layer should hold native extensions (pydantic-core) to check"


def test_the_layer_holds_every_runtime_dependency_of_the_lock_but_not_what_lambda_provides(asset):
    layer = asset / "dependencies" / "python"
    assert checks.missing_distributions(layer, build_lambda.runtime_requirements()) == []
    held = checks.distributions(layer)
    assert {"aws-lambda-powertools", "pydantic", "openai", "twilio"} <= held.keys()
    assert not held.keys() & set(build_lambda.PROVIDED)


def test_every_handler_imports_from_the_asset_alone(asset):
    assert build_lambda.verify(asset) == []


def test_a_handler_whose_dependency_the_layer_lacks_is_found(asset, tmp_path):
    problems = checks.import_problems(asset / "code", [], pycache=tmp_path)
    assert problems
    assert all("No module named" in p for p in problems), problems


def test_the_bytecode_check_finds_bytecode_for_another_python(tmp_path):
    cache = tmp_path / "dependencies" / "python" / "six" / "__pycache__"
    cache.mkdir(parents=True)
    (cache / "six.cpython-313.pyc").write_bytes(checks.LAMBDA_MAGIC + bytes(12))
    assert checks.bytecode_problems(tmp_path) == []
    (cache / "six.cpython-311.pyc").write_bytes(PYTHON_3_11_MAGIC + bytes(12))
    problems = checks.bytecode_problems(tmp_path)
    assert len(problems) == 1
    assert "six.cpython-311.pyc" in problems[0]


def test_the_native_check_finds_code_for_another_machine_or_python(tmp_path):
    package = tmp_path / "dependencies" / "python" / "fast"
    package.mkdir(parents=True)
    (package / "_core.cpython-313-aarch64-linux-gnu.so").write_bytes(_elf(checks.ELF_AARCH64))
    assert checks.native_problems(tmp_path / "dependencies") == []
    (package / "_core.cpython-313-x86_64-linux-gnu.so").write_bytes(_elf(62))
    (package / "_old.cpython-311-aarch64-linux-gnu.so").write_bytes(_elf(checks.ELF_AARCH64))
    problems = checks.native_problems(tmp_path / "dependencies")
    assert len(problems) == 2
    assert "another machine" in problems[0] and "Python 311" in problems[1]


def test_a_layer_missing_a_locked_distribution_is_found(asset, tmp_path):
    layer = tmp_path / "python"
    shutil.copytree(
        asset / "dependencies" / "python", layer, ignore=shutil.ignore_patterns("pydantic", "pydantic-[0-9]*")
    )
    problems = checks.missing_distributions(layer, build_lambda.runtime_requirements())
    assert len(problems) == 1
    assert problems[0].startswith("the layer lacks pydantic==")
