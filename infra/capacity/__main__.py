"""python -m infra.capacity --messages-per-second N [--json]: each component's use at N
messages a second, the rate at which it saturates, the first bottleneck, and a month's cost
(docs/capacity.md)."""

from __future__ import annotations

import argparse
import json
import math
import sys
from typing import Any

from infra.capacity import model, quotas


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m infra.capacity", description=__doc__)
    parser.add_argument("--messages-per-second", type=float, required=True)
    parser.add_argument("--fragments-per-burst", type=float, default=3)
    parser.add_argument("--reply-parts", type=float, default=1)
    parser.add_argument("--callbacks-per-part", type=float, default=3, help="3 on WhatsApp, 2 on SMS")
    parser.add_argument("--tenants", type=int, default=1, help="the traffic shared evenly among them")
    parser.add_argument("--bursts-per-conversation", type=float, default=10)
    parser.add_argument("--openai-seconds", type=float, default=3.0)
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a setting other than its default (MAX_AI_CALLS_PER_HOUR=50000, api_rate_limit=2000)",
    )
    parser.add_argument("--json", action="store_true", help="the whole model as JSON")
    args = parser.parse_args(argv)
    if args.messages_per_second <= 0 or args.fragments_per_burst <= 0 or args.tenants < 1:
        parser.error("the rate and the fragments per burst must be above 0, the tenants at least 1")
    overrides = dict(item.split("=", 1) for item in args.set)
    unknown = [name for name in overrides if name.lower() not in model.settings({})]
    if unknown:
        parser.error(f"no such setting: {', '.join(unknown)}")
    assumptions = model.Assumptions(
        messages_per_second=args.messages_per_second,
        fragments_per_burst=args.fragments_per_burst,
        reply_parts=args.reply_parts,
        callbacks_per_part=args.callbacks_per_part,
        tenants=args.tenants,
        bursts_per_conversation=args.bursts_per_conversation,
        openai_seconds=args.openai_seconds,
        overrides=overrides,
    )
    data = model.report(assumptions)
    print(json.dumps(data, indent=1) if args.json else text(data))
    return 0


def _number(value: float | None) -> str:
    if value is None or math.isinf(value):
        return "never"
    return f"{value:,.0f}" if value >= 100 else f"{value:,.2f}"


def text(data: dict[str, Any]) -> str:
    a = data["assumptions"]
    lines = [
        f"At {a['messages_per_second']:g} messages/s ({a['fragments_per_burst']:g} fragments a burst: "
        f"{data['bursts_per_second']:,.2f} bursts/s; {a['reply_parts']:g} reply part(s) with "
        f"{a['callbacks_per_part']:g} status callbacks each; {a['tenants']} tenant(s)). "
        f"Quotas as checked on {data['quotas_checked_on']} (infra/capacity/quotas.py).",
        "",
        "| Component | Kind | Use | Limit | Unit | Saturates at (messages/s) | To raise it |",
        "|---|---|---|---|---|---|---|",
    ]
    for c in data["components"]:
        flag = " **over**" if c["saturated"] else ""
        limit = _number(c["limit"]) if c["limit"] else "off"
        lines.append(
            f"| {c['name']}{flag} | {c['kind']} | {_number(c['use'])} | {limit} | {c['unit']} "
            f"| {_number(c['saturates_at'])} | {c['raise_by']} |"
        )
    first = data["first_bottleneck"]
    lines += [
        "",
        f"First bottleneck: {first['name']} ({first['kind']}) at "
        f"{_number(first['saturates_at'])} messages/s; to raise it: {first['raise_by']}.",
        "",
    ]
    cost = data["monthly_cost_usd"]
    lines += ["| A month (30 days) at this rate | USD |", "|---|---|"]
    lines += [f"| {name} | {value:,.2f} |" for name, value in cost["aws"].items()]
    lines.append(
        f"| **AWS total** (Step Functions {cost['step_functions_share']:.0%} of it) "
        f"| **{cost['aws_total']:,.2f}** |"
    )
    lines += [f"| {name} (not AWS) | {value:,.2f} |" for name, value in cost["vendors"].items()]
    lines.append(
        f"\nPrices as of {cost['prices_as_of']} (infra/prices.py; logs: ${quotas.CLOUDWATCH_LOGS_PER_GB}/GB)."
    )
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
