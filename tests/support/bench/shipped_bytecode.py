"""`make bench`, cold starts as Lambda has them: each function's handler imported from the
built asset in a read-only directory, as Lambda's /var/task and /opt are
(tests/support/read_only_asset.py), with the bytecode the asset ships and from a copy
without it, which compiles every module it imports, at every cold start. In CPU time: the
import is CPU-bound, and this machine, shared, stretches wall-clock times by a third or
more from one second to the next."""

from __future__ import annotations

import statistics

from functions.registry import ALL_FUNCTIONS
from infra import build_lambda
from tests.support.read_only_asset import cold_import, handler_modules, read_only_asset


def measure(repeat: int = 3) -> dict[str, dict[str, float]]:
    """Each handler module: the median of its cold imports' CPU time (ms) with the shipped
    bytecode and without it, and of the difference between the two, measured side by side."""
    build_lambda.build()
    modules = handler_modules()
    runs: dict[str, list[tuple[float, float]]] = {module: [] for module in modules}
    with read_only_asset() as shipped, read_only_asset(bytecode=False) as bare:
        for _ in range(repeat):
            for module in modules:
                with_bytecode = cold_import(*shipped, module).cpu_seconds * 1000
                without = cold_import(*bare, module).cpu_seconds * 1000
                runs[module].append((with_bytecode, without))
    return {
        module: {
            "shipped_ms": statistics.median(w for w, _ in pairs),
            "none_ms": statistics.median(n for _, n in pairs),
            "saved_ms": statistics.median(n - w for w, n in pairs),
        }
        for module, pairs in runs.items()
    }


def rows(measured: dict[str, dict[str, float]], slowest: int = 3) -> list[tuple[str, str]]:
    """The `slowest` functions (without bytecode), and the sum over every function."""
    names: dict[str, list[str]] = {module: [] for module in measured}
    for definition in ALL_FUNCTIONS:
        names[definition.handler.rpartition(".")[0]].append(definition.logical_id)
    ranked = sorted(measured, key=lambda module: measured[module]["none_ms"], reverse=True)
    total = {key: sum(m[key] for m in measured.values()) for key in ("shipped_ms", "none_ms", "saved_ms")}
    return [
        *(
            (
                f"Cold import from the read-only asset, {', '.join(names[module])}, CPU: "
                "shipped bytecode / none (saved)",
                _figures(measured[module]),
            )
            for module in ranked[:slowest]
        ),
        (
            f"Cold imports from the read-only asset, every function ({len(measured)}) summed, CPU: "
            "shipped bytecode / none (saved)",
            _figures(total),
        ),
    ]


def _figures(m: dict[str, float]) -> str:
    return f"{m['shipped_ms']:.0f} ms / {m['none_ms']:.0f} ms ({m['saved_ms']:.0f} ms)"
