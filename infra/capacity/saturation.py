"""What can saturate, and where: a component's use at the traffic's rate against its limit,
and the rate (messages a second) at which they meet. The components themselves:
infra/capacity/components.py (AWS and our settings), vendors.py (Twilio, OpenAI),
shared_items.py (DynamoDB items many conversations write)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from infra.capacity import quotas
from infra.capacity.traffic import Assumptions, Rates


@dataclass(frozen=True)
class Component:
    """One thing that can saturate: an AWS quota, a setting of ours, a vendor's limit, or a
    shared item."""

    name: str
    kind: str  # "AWS quota", "our setting", "vendor limit", "shared item"
    use: float  # at the given rate, in `unit`
    limit: float
    unit: str
    saturates_at: float  # messages/s (math.inf: never)
    raise_by: str  # the Service Quotas request, or the setting to change
    raisable_on_request: bool  # AWS raises it when asked (or it is ours to change)
    note: str = ""

    @property
    def share(self) -> float:
        return self.use / self.limit if self.limit else math.inf


@dataclass(frozen=True)
class Traffic:
    """The model's inputs at one rate: the assumptions, our settings, what they make a second."""

    assumptions: Assumptions
    values: dict[str, Any]
    rates: Rates


def component(
    t: Traffic,
    name: str,
    kind: str,
    use: float,
    limit: float,
    unit: str,
    raise_by: str,
    raisable: bool,
    note: str = "",
) -> Component:
    """A component that saturates where its use, linear in the rate, meets its limit."""
    if limit <= 0:  # 0: a setting turned off
        return Component(name, kind, use, 0, unit, math.inf, raise_by, raisable, note or "off")
    saturates = t.assumptions.messages_per_second * limit / use if use else math.inf
    return Component(name, kind, use, limit, unit, saturates, raise_by, raisable, note)


def quota(t: Traffic, q: quotas.Quota, use: float, name: str, note: str = "") -> Component:
    return component(t, name, "AWS quota", use, q.value, q.unit, q.request(), q.raisable, note or q.note)


def setting(
    t: Traffic, name: str, use: float, limit: float, unit: str, raise_by: str, note: str = ""
) -> Component:
    return component(t, name, "our setting", use, limit, unit, raise_by, True, note)
