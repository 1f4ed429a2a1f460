"""python -m infra.capacity --messages-per-second N [--json]: each component's use at N
messages a second, the rate at which it saturates, the first bottleneck, and a month's cost
(docs/capacity.md)."""

from __future__ import annotations

import argparse
import json
import math
import sys
from typing import Any

from infra import prices
from infra.capacity import model, quotas


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if args.messages_per_second <= 0 or args.fragments_per_burst <= 0 or args.tenants < 1 or args.senders < 1:
        parser.error(
            "the rate and the fragments per burst must be above 0, the tenants and senders at least 1"
        )
    if min(args.extensions_per_burst, args.tool_rounds, args.transaction_ms) < 0:
        parser.error("the extensions, tool rounds and transaction time cannot be below 0")
    if args.openai_rpm <= 0 or args.openai_tpm <= 0:
        parser.error("OpenAI's limits must be above 0")
    overrides = dict(item.split("=", 1) for item in args.set)
    unknown = [name for name in overrides if name.lower() not in model.settings({})]
    if unknown:
        parser.error(f"no such setting: {', '.join(unknown)}")
    data = model.report(_assumptions(args, overrides))
    print(json.dumps(data, indent=1) if args.json else text(data))
    return 0


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m infra.capacity", description=__doc__)
    parser.add_argument("--messages-per-second", type=float, required=True)
    parser.add_argument("--fragments-per-burst", type=float, default=3)
    parser.add_argument("--reply-parts", type=float, default=1)
    parser.add_argument("--callbacks-per-part", type=float, default=3, help="3 on WhatsApp, 2 on SMS")
    parser.add_argument("--tenants", type=int, default=1, help="the traffic shared evenly among them")
    parser.add_argument("--bursts-per-conversation", type=float, default=10)
    parser.add_argument("--openai-seconds", type=float, default=3.0)
    extensions = "quiet and adaptive modes: how often a burst's window is extended (3 state transitions each)"
    parser.add_argument("--extensions-per-burst", type=float, default=0, help=extensions)
    rounds = "a reply's tool rounds, one call each (Call Tools, Generate Reply again)"
    parser.add_argument("--tool-rounds", type=float, default=0, help=rounds)
    senders = "the WhatsApp senders (numbers) the replies leave from, evenly"
    parser.add_argument("--senders", type=int, default=1, help=senders)
    tier = quotas.OPENAI_TIER
    for flag, default, what in (
        ("--openai-rpm", tier.requests_per_minute, "requests"),
        ("--openai-tpm", tier.tokens_per_minute, "tokens"),
    ):
        help_text = f"the organisation's {what} a minute for the model (default: the {tier.name} tier's)"
        parser.add_argument(flag, type=float, default=default, help=help_text)
    window = "how long a DynamoDB transaction holds its items (the conflict window; assumed)"
    parser.add_argument("--transaction-ms", type=float, default=10, help=window)
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a setting other than its default (MAX_AI_CALLS_PER_HOUR=50000, api_rate_limit=2000)",
    )
    parser.add_argument("--json", action="store_true", help="the whole model as JSON")
    return parser


def _assumptions(args: argparse.Namespace, overrides: dict[str, str]) -> model.Assumptions:
    return model.Assumptions(
        messages_per_second=args.messages_per_second,
        fragments_per_burst=args.fragments_per_burst,
        reply_parts=args.reply_parts,
        callbacks_per_part=args.callbacks_per_part,
        tenants=args.tenants,
        bursts_per_conversation=args.bursts_per_conversation,
        openai_seconds=args.openai_seconds,
        extensions_per_burst=args.extensions_per_burst,
        tool_rounds=args.tool_rounds,
        senders=args.senders,
        openai_rpm=args.openai_rpm,
        openai_tpm=args.openai_tpm,
        transaction_seconds=args.transaction_ms / 1000,
        overrides=overrides,
    )


def _number(value: float | None) -> str:
    if value is None or math.isinf(value):
        return "never"
    if value >= 100:
        return f"{value:,.0f}"
    return f"{value:,.2f}" if value >= 1 else f"{value:.3g}"


def text(data: dict[str, Any]) -> str:
    a = data["assumptions"]
    lines = [
        f"At {a['messages_per_second']:g} messages/s ({a['fragments_per_burst']:g} fragments a burst: "
        f"{data['bursts_per_second']:,.2f} bursts/s; {a['reply_parts']:g} reply part(s) with "
        f"{a['callbacks_per_part']:g} status callbacks each; {a['tenants']} tenant(s); "
        f"{a['extensions_per_burst']:g} window extension(s) and {a['tool_rounds']:g} tool round(s) a burst; "
        f"{a['senders']} sender(s); OpenAI {a['openai_rpm']:,.0f} requests and {a['openai_tpm']:,.0f} "
        f"tokens a minute). Quotas as checked on {data['quotas_checked_on']} (infra/capacity/quotas.py).",
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
        f"{_number(first['saturates_at'])} messages/s; to raise it: {first['raise_by']}."
        + (f" ({first['note']})" if first["note"] else ""),
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
    first_tier, flat = prices.LAMBDA_LOGS_TIERS[0][1], quotas.CLOUDWATCH_LOGS_PER_GB
    lines.append(
        f"\nPrices as of {cost['prices_as_of']} (infra/prices.py; Lambda's logs in tiers from "
        f"${first_tier:.2f}/GB, the state machine's ${flat:.2f}/GB)."
    )
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
