"""The Lambda asset as `make build` makes it (infra/build_lambda.py), built here where it
builds it (build/lambda; its layer again only when uv.lock's runtime dependencies changed, so
that `make preflight` after the tests finds it built): every module compiled for Lambda's
Python as it loads it (unchecked-hash bytecode), native code for arm64 only, every runtime
dependency of the lock in the layer (the AWS SDK too), within Lambda's size limit, every
handler importing from the code and the layer alone. And the checks themselves find what
they look for."""

from __future__ import annotations

import importlib.util
import py_compile
import shutil
import sys
import tomllib
from pathlib import Path

import pytest

from infra import build_lambda, checks
from tests.support.read_only_asset import cold_import, handler_modules, read_only_asset

pytestmark = pytest.mark.infra

PYTHON_3_11_MAGIC = b"\xa7\r\r\n"
ROOT = Path(__file__).resolve().parents[2]
SDK = ("boto3", "botocore", "s3transfer")  # Lambda's runtime bundles its own copy


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
    assert sys.implementation.cache_tag == checks.LAMBDA_CACHE_TAG


def test_the_asset_holds_native_code_only_for_arm64_and_python_3_13(asset):
    assert checks.asset_problems(asset) == []
    native = [p for p in (asset / "dependencies").rglob("*.so") if p.read_bytes()[:4] == checks.ELF_MAGIC]
    assert native, "the layer should hold native extensions (pydantic-core) to check"


def test_every_module_of_the_asset_ships_its_unchecked_hash_bytecode_for_python_3_13(asset):
    """Lambda's /var/task and /opt are read-only: a module without its .pyc there is compiled
    again at every cold start. Unchecked-hash (PEP 552 flags 0b01): loaded without reading
    the source."""
    sources = [p for part in ("code", "dependencies") for p in sorted((asset / part).rglob("*.py"))]
    assert len(sources) > 1000  # the code and the whole layer, not a part
    without = []
    for source in sources:
        pyc = source.parent / "__pycache__" / f"{source.stem}.{sys.implementation.cache_tag}.pyc"
        header = pyc.read_bytes()[:16] if pyc.exists() else b""
        if header[:4] != importlib.util.MAGIC_NUMBER or int.from_bytes(header[4:8], "little") != 0b01:
            without.append(str(source.relative_to(asset)))
        elif header[8:16] != importlib.util.source_hash(source.read_bytes()):
            without.append(f"{source.relative_to(asset)} (stale)")
    assert without == []
    assert checks.bytecode_problems(asset) == []


def test_importing_every_handler_from_the_read_only_asset_compiles_no_module(asset):
    """As Lambda imports them: the asset copied to a read-only directory, no bytecode written,
    no cache prefix; the asset's twin without its .pyc compiles every module it imports."""
    with read_only_asset(asset) as (code, layer):
        assert cold_import(code, layer, *handler_modules()).compiled == []
    with read_only_asset(asset, bytecode=False) as (code, layer):
        compiled = cold_import(code, layer, "functions.handlers.webhook").compiled
    assert any("/task/functions/" in p for p in compiled)
    assert any("/opt/python/boto3/" in p for p in compiled)


def test_the_layer_holds_the_aws_sdk_at_the_versions_uv_lock_pins(asset):
    """Lambda's runtime bundles its own boto3; the layer's comes first on sys.path (/opt/python
    before the runtime's), so the functions run the SDK the tests ran."""
    locked = {p["name"]: p["version"] for p in tomllib.loads((ROOT / "uv.lock").read_text())["package"]}
    held = checks.distributions(asset / "dependencies" / "python")
    assert {name: held.get(name) for name in SDK} == {name: locked[name] for name in SDK}
    assert (asset / "dependencies" / "python" / "botocore" / "__init__.py").exists()


def test_the_asset_fits_lambdas_unzipped_size_limit(asset):
    files = [p for part in ("code", "dependencies") for p in (asset / part).rglob("*") if p.is_file()]
    assert checks.unzipped_size(asset) == sum(p.stat().st_size for p in files)
    assert checks.size_problems(asset) == []


def test_the_size_check_finds_an_asset_over_lambdas_limit(tmp_path):
    layer = tmp_path / "dependencies" / "python"
    layer.mkdir(parents=True)
    (tmp_path / "code").mkdir()
    with (layer / "model.bin").open("wb") as big:  # sparse: no disk used
        big.truncate(checks.LAMBDA_UNZIPPED_LIMIT - 1)
    assert checks.size_problems(tmp_path) == []
    (tmp_path / "code" / "handler.py").write_text("x = 1\n")
    problems = checks.size_problems(tmp_path)
    assert len(problems) == 1
    assert "250 MB" in problems[0]


def test_the_layer_holds_every_runtime_dependency_of_the_lock(asset):
    layer = asset / "dependencies" / "python"
    assert checks.missing_distributions(layer, build_lambda.runtime_requirements()) == []
    held = checks.distributions(layer)
    assert {"aws-lambda-powertools", "pydantic", "openai", "twilio", *SDK} <= held.keys()


def test_every_handler_imports_from_the_asset_alone(asset):
    assert build_lambda.verify(asset) == []


def test_a_handler_whose_dependency_the_layer_lacks_is_found(asset, tmp_path):
    problems = checks.import_problems(asset / "code", [], pycache=tmp_path)
    assert problems
    assert all("No module named" in p for p in problems), problems


def _module(root: Path, name: str = "six") -> Path:
    """A module in a layer under `root`, compiled as the build compiles it."""
    package = root / "dependencies" / "python"
    package.mkdir(parents=True, exist_ok=True)
    source = package / f"{name}.py"
    source.write_text("VERSION = 1\n")
    build_lambda.compile_bytecode(package, deployed_as="/opt/python")
    return source


def test_the_bytecode_check_finds_bytecode_for_another_python(tmp_path):
    source = _module(tmp_path)
    assert checks.bytecode_problems(tmp_path) == []
    (source.parent / "__pycache__" / "six.cpython-311.pyc").write_bytes(PYTHON_3_11_MAGIC + bytes(12))
    problems = checks.bytecode_problems(tmp_path)
    assert len(problems) == 1
    assert "six.cpython-311.pyc" in problems[0]


def test_the_bytecode_check_finds_a_module_without_its_bytecode(tmp_path):
    source = _module(tmp_path)
    (source.parent / "__pycache__" / f"six.{checks.LAMBDA_CACHE_TAG}.pyc").unlink()
    problems = checks.bytecode_problems(tmp_path)
    assert len(problems) == 1
    assert "six.py" in problems[0] and "no bytecode" in problems[0]


def test_the_bytecode_check_finds_bytecode_that_is_checked_or_stale(tmp_path):
    source = _module(tmp_path)
    (tmp_path / "dependencies" / "python" / "timed.py").write_text("VERSION = 2\n")
    timed = tmp_path / "dependencies" / "python" / "timed.py"
    py_compile.compile(
        str(timed),
        cfile=str(timed.parent / "__pycache__" / f"timed.{checks.LAMBDA_CACHE_TAG}.pyc"),
        invalidation_mode=py_compile.PycInvalidationMode.TIMESTAMP,
    )
    source.write_text("VERSION = 3\n")  # changed after it was compiled
    problems = checks.bytecode_problems(tmp_path)
    assert len(problems) == 2
    assert "six.py" in problems[0] and "stale" in problems[0]
    assert "timed.py" in problems[1] and "not unchecked-hash" in problems[1]


def test_the_build_compiles_bytecode_into_the_asset_whatever_the_cache_prefix(tmp_path, monkeypatch):
    """The Makefile sets PYTHONPYCACHEPREFIX: the asset's bytecode goes beside its sources
    all the same, and names the sources by their path on Lambda."""
    monkeypatch.setattr(sys, "pycache_prefix", str(tmp_path / "elsewhere"))
    source = _module(tmp_path)
    assert list((tmp_path / "elsewhere").rglob("six.*.pyc")) == []
    pyc = source.parent / "__pycache__" / f"six.{checks.LAMBDA_CACHE_TAG}.pyc"
    assert str(tmp_path).encode() not in pyc.read_bytes()
    assert b"/opt/python/six.py" in pyc.read_bytes()


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
    layer = tmp_path / "python"  # its distributions' metadata, but pydantic's
    for info in (asset / "dependencies" / "python").glob("*.dist-info"):
        if not info.name.startswith("pydantic-"):
            shutil.copytree(info, layer / info.name)
    problems = checks.missing_distributions(layer, build_lambda.runtime_requirements())
    assert len(problems) == 1
    assert problems[0].startswith("the layer lacks pydantic==")
