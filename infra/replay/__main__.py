"""Tune the batching rules on your own traffic: replay recorded arrival times through the
production rule code under several policies and compare them.

    python -m infra.replay --csv arrivals.csv [--policies fixed:10,quiet:3,adaptive,rules]
    python -m infra.replay --since 7d [--stack BurstReply]   # the deployed Turns table (or STACK_NAME)
    AWS_ENDPOINT_URL=http://127.0.0.1:PORT python -m infra.replay --since 1d   # the local stack

Per policy: AI calls per burst (batches / bursts), user-visible replies per burst (with
`on_newer: merge`: a fragment within --generation-seconds after a batch closes joins that
batch's reply), bursts split over more than one batch, and the delay from a burst's last
fragment to the close of its batch (median, p90). Bursts are the CSV's `burst` labels when
it has them; otherwise a conversation's burst ends where the next fragment is more than
--burst-gap seconds later.

Policies: `fixed:W`; `quiet:Q`, optionally `:typing=GAP/QUIET` and `:cap=S` (max wait; no
typing rule unless given; the cap is 60 s, or W or Q when longer);
`adaptive` (the configured rules in adaptive mode); `rules` (the configured rules: the
BATCH_MODE, QUIET_SECONDS... environment variables, their defaults where unset).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from functions.batching.rules.debounce import BatchingRules
from infra.replay.simulate import Fragment, label_bursts, replay
from infra.replay.sources import SourceError, from_csv, from_turns, since_ms


def configured_rules() -> dict[str, Any]:
    """The global batching rules as the functions read them from their environment."""
    from functions.batching.settings import BatchingSettings

    return BatchingSettings.read(os.environ).batching_defaults()


def parse_policy(text: str, configured: dict[str, Any]) -> BatchingRules:
    """One policy of --policies as batching rules."""
    name, _, rest = text.strip().partition(":")
    parts = [p for p in rest.split(":") if p]
    try:
        if name == "rules" and not parts:
            return BatchingRules.parse(configured)
        if name == "adaptive" and not parts:
            return BatchingRules.parse({**configured, "mode": "adaptive"})
        if name == "fixed" and len(parts) == 1:
            wait = float(parts[0])
            return BatchingRules.parse(
                {**configured, "mode": "fixed", "window_seconds": wait, "max_wait_seconds": max(wait, 60)}
            )
        if name == "quiet" and parts:
            overrides: dict[str, Any] = {
                "mode": "quiet",
                "quiet_seconds": float(parts[0]),
                "typing_gap_seconds": 0,
            }
            for option in parts[1:]:
                key, _, value = option.partition("=")
                if key == "typing":
                    gap, _, quiet = value.partition("/")
                    overrides.update(typing_gap_seconds=float(gap), typing_quiet_seconds=float(quiet))
                elif key == "cap":
                    overrides["max_wait_seconds"] = float(value)
                else:
                    raise ValueError(f"unknown option {key!r}")
            overrides.setdefault("max_wait_seconds", max(60.0, overrides["quiet_seconds"]))
            return BatchingRules.parse({**configured, **overrides})
    except ValueError as error:
        raise SourceError(f"policy {text!r}: {error}") from error
    raise SourceError(f"policy {text!r}: use fixed:W, quiet:Q[:typing=GAP/QUIET][:cap=S], adaptive or rules")


def _turns_table(stack: str | None) -> Any:
    """The Turns table: TURNS_TABLE, else the local stack's (AWS_ENDPOINT_URL set), else the
    stack's output (`--stack`, else STACK_NAME, else BurstReply; infra/stack_lookup.py)."""
    import boto3

    from infra import stack_lookup

    try:
        stack_lookup.use_stack(stack_lookup.chosen_stack(stack), ("TURNS_TABLE",))
    except stack_lookup.LookupFailed as error:
        raise SourceError(str(error)) from None
    return boto3.resource("dynamodb").Table(os.environ["TURNS_TABLE"])


def fragments_of(args: argparse.Namespace) -> list[Fragment]:
    if args.csv:
        fragments, labelled = from_csv(Path(args.csv))
    else:
        since = since_ms(args.since, int(time.time() * 1000))
        fragments, labelled = from_turns(_turns_table(args.stack), since), False
    if args.conversation:
        fragments = [f for f in fragments if f.conversation == args.conversation]
    if not fragments:
        raise SourceError("no fragments to replay")
    return fragments if labelled else label_bursts(fragments, args.burst_gap)


def table(rows: list[dict[str, Any]]) -> str:
    header = ("policy", "AI calls/burst", "replies/burst", "split", "delay median", "p90")
    lines = ["{:<28} {:>14} {:>13} {:>6} {:>12} {:>7}".format(*header)]
    lines += [
        f"{r['policy']:<28} {r['ai_calls_per_burst']:>14.2f} {r['replies_per_burst']:>13.2f} "
        f"{r['split_bursts']:>6} {r['delay_median_s']:>11.1f}s {r['delay_p90_s']:>6.1f}s"
        for r in rows
    ]
    lines.append(f"(bursts: {rows[0]['bursts']})" if rows else "")
    return "\n".join(lines)


def plot(rows: list[dict[str, Any]], path: Path, title: str = "Batching policies replayed") -> None:
    """AI calls per burst against the median delay, one point per policy."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(7, 4.5))
    families: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        families.setdefault(row["policy"].split(":")[0], []).append(row)
    for family, points in families.items():
        points = sorted(points, key=lambda r: r["delay_median_s"])
        axes.plot(
            [r["delay_median_s"] for r in points],
            [r["ai_calls_per_burst"] for r in points],
            marker="*" if family == "adaptive" else "o",
            markersize=12 if family == "adaptive" else 5,
            label=family,
        )
        for r in points:
            axes.annotate(r["policy"], (r["delay_median_s"], r["ai_calls_per_burst"]), fontsize=7)
    axes.set_xlabel("median delay after the last fragment (s)")
    axes.set_ylabel("AI calls per burst")
    axes.set_title(title)
    axes.grid(True, alpha=0.3)
    axes.legend()
    figure.tight_layout()
    figure.savefig(path, dpi=120)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m infra.replay", description=__doc__.split("\n\n")[0])
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--csv", help="arrival times: conversation,received_at[,burst]")
    source.add_argument("--since", help="the Turns table's user turns this recent: 7d, 12h, 30m")
    parser.add_argument(
        "--stack", help="the stack whose Turns table to read (default: STACK_NAME, or BurstReply)"
    )
    parser.add_argument("--conversation", help="replay this conversation only")
    parser.add_argument("--policies", default="fixed:10,quiet:3,adaptive,rules")
    parser.add_argument("--generation-seconds", type=float, default=3.0)
    parser.add_argument("--burst-gap", type=float, default=30.0, help="seconds that end an unlabelled burst")
    parser.add_argument("--json", action="store_true", help="a JSON list instead of the table")
    parser.add_argument("--plot", help="draw the frontier to this PNG file")
    args = parser.parse_args(argv)
    try:
        configured = configured_rules()
        policies = [(p.strip(), parse_policy(p, configured)) for p in args.policies.split(",") if p.strip()]
        fragments = fragments_of(args)
    except SourceError as error:
        print(f"infra.replay: {error}", file=sys.stderr)
        return 2
    rows = [replay(name, rules, fragments, args.generation_seconds) for name, rules in policies]
    print(json.dumps(rows, indent=2) if args.json else table(rows))
    if args.plot:
        plot(rows, Path(args.plot))
    return 0


if __name__ == "__main__":
    sys.exit(main())
