"""The built Lambda asset imported as Lambda imports it, for the asset's tests and `make
bench`: copied into a read-only directory (Lambda's /var/task and /opt are read-only), each
handler imported by a fresh interpreter with only the code and the layer on sys.path, that
writes no bytecode (`PYTHONDONTWRITEBYTECODE=1`, which also holds where the permission bits
do not, as for root) and reads none from elsewhere (no PYTHONPYCACHEPREFIX)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from infra import build_lambda, checks

# Counts the modules of the asset compiled from source during the import (the loader's
# `source_to_code`, which it calls only when no usable .pyc is found), and times the import.
_IMPORT = """
import json, sys, time
from importlib.machinery import SourceFileLoader
compiled = []
_source_to_code = SourceFileLoader.source_to_code
def counted(self, data, path, *args, **kwargs):
    compiled.append(path)
    return _source_to_code(self, data, path, *args, **kwargs)
SourceFileLoader.source_to_code = counted
sys.path[:0] = {entries!r}
start, cpu_start = time.perf_counter(), time.process_time()
import {modules}
seconds, cpu_seconds = time.perf_counter() - start, time.process_time() - cpu_start
asset = {asset!r}
print(json.dumps({{
    "seconds": seconds, "cpu_seconds": cpu_seconds, "compiled": [p for p in compiled if p.startswith(asset)]
}}))
"""


@dataclass(frozen=True)
class ColdImport:
    seconds: float  # wall-clock time
    cpu_seconds: float  # this process's CPU time: steadier on a busy machine
    compiled: list[str]  # the asset's modules compiled from source by this import


def _link(source: str, destination: str) -> None:
    """A copy that shares the file's data (a hard link), or a copy where it cannot."""
    try:
        os.link(source, destination)
    except OSError:
        shutil.copy2(source, destination)


def _directories_writable(directory: Path, writable: bool) -> None:
    """`chmod u+w` or `chmod a-w` on `directory` and every directory under it: nothing can be
    created in them, no `__pycache__` and no .pyc (a file's own bits, shared with the
    asset's by the link, do not matter to that)."""
    for path in [directory, *(p for p in directory.rglob("*") if p.is_dir())]:
        mode = path.stat().st_mode
        path.chmod(mode | 0o200 if writable else mode & ~0o222)


@contextmanager
def read_only_asset(root: Path = build_lambda.BUILD, *, bytecode: bool = True) -> Iterator[tuple[Path, Path]]:
    """(code, layer): the asset built in `root` copied into a temporary read-only directory
    (beside it, so that its files are links, not copies), without its .pyc unless
    `bytecode`. The layer is its twin for this machine (build_lambda.host_layer: the same
    lock, compiled the same way), since the layer's native code is for arm64."""
    layer = build_lambda.host_layer(root)
    leave_out = shutil.ignore_patterns("__pycache__") if not bytecode else None
    with tempfile.TemporaryDirectory(prefix="read-only-", dir=root) as scratch:
        task = Path(scratch) / "task"
        shutil.copytree(root / "code", task, ignore=leave_out, copy_function=_link)
        opt = shutil.copytree(layer, Path(scratch) / "opt" / "python", ignore=leave_out, copy_function=_link)
        _directories_writable(Path(scratch), False)
        try:
            yield task, opt
        finally:
            _directories_writable(Path(scratch), True)  # so that it can be deleted


def cold_import(code: Path, layer: Path, *modules: str) -> ColdImport:
    """`modules` imported in a fresh interpreter as Lambda imports a handler: in `code` (its
    working directory, /var/task on Lambda), with only `code` and `layer` on sys.path (no
    site-packages: -S), the settings the stack gives every function, no bytecode written and
    no cache prefix."""
    entries = [str(code), str(layer)]
    script = _IMPORT.format(entries=entries, modules=", ".join(modules), asset=str(code.parent))
    result = subprocess.run(
        [sys.executable, "-S", "-c", script],
        cwd=code,
        env={"PYTHONDONTWRITEBYTECODE": "1", **checks.DEPLOYED_SETTINGS},
        capture_output=True,
        text=True,
        check=True,
    )
    report = json.loads(result.stdout)
    return ColdImport(report["seconds"], report["cpu_seconds"], report["compiled"])


def handler_modules() -> list[str]:
    from functions.registry import ALL_FUNCTIONS

    return sorted({f.handler.rpartition(".")[0] for f in ALL_FUNCTIONS})
