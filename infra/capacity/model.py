"""The capacity model: at N messages a second, each component's use, the rate at which it
saturates, the first bottleneck, and what a month at that rate costs.

Everything scales with the burst rate B = N / K (K fragments a burst): the calls of one
burst (infra/capacity/burst.py, held to a recorded run) times B (infra/capacity/traffic.py).
Lambda concurrency is each function's invocations a second times its duration (Little's law);
a duration is assumed (the local handlers' times are not AWS's): a base, plus each AWS call,
plus the vendors' time (OpenAI for Generate Reply; Twilio, and the pause between parts, for
Send Reply). Our own settings are read from the code's defaults (the functions' settings
models, functions/registry.py ALL_SETTINGS; infra/stack_settings.py StackSettings), so the
model follows them as they change;
`overrides` sets others (a deployment's). What can saturate: infra/capacity/components.py;
what a month costs: infra/capacity/costs.py, at infra/prices.py."""

from __future__ import annotations

import math
from dataclasses import asdict
from typing import Any

from infra.capacity import quotas
from infra.capacity.components import Component, components
from infra.capacity.costs import monthly_cost
from infra.capacity.traffic import SECONDS_PER_MONTH, Assumptions, settings

__all__ = [
    "SECONDS_PER_MONTH",
    "Assumptions",
    "Component",
    "components",
    "first_bottleneck",
    "monthly_cost",
    "report",
    "settings",
]


def first_bottleneck(found: list[Component]) -> Component:
    return min(found, key=lambda c: c.saturates_at)


def report(a: Assumptions) -> dict[str, Any]:
    """The whole model at the given rate, as data (the --json output)."""
    found = components(a)
    first = first_bottleneck(found)
    return {
        "assumptions": asdict(a),
        "bursts_per_second": a.bursts_per_second,
        "quotas_checked_on": quotas.CHECKED_ON,
        "components": [_component_data(c) for c in sorted(found, key=lambda c: c.saturates_at)],
        "first_bottleneck": _component_data(first),
        "monthly_cost_usd": monthly_cost(a),
    }


def _component_data(c: Component) -> dict[str, Any]:
    data = asdict(c)
    data["saturates_at"] = None if math.isinf(c.saturates_at) else round(c.saturates_at, 1)
    data["use"] = float(f"{c.use:.4g}")  # 4 significant digits: a shard's transactions at once are small
    data["share_of_limit"] = None if not c.limit else round(c.share, 4)
    data["saturated"] = c.saturates_at <= 0 or (c.limit > 0 and c.use > c.limit)
    return data
