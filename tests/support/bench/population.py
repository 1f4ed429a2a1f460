"""`make bench`, batching by person: a synthetic population whose people type each in
their own way, replayed with `python -m infra.replay`'s code (infra/replay) under fixed,
quiet and adaptive policies.

Each person has a typical gap between fragments (log-uniform from 0.4 s to 5 s), gaps
that vary around it (log-normal), and thinking pauses now and then (2-5 times their gap);
their bursts have 1-8 fragments and are minutes apart. 200 people, 25 bursts each. Replayed
as `python -m infra.replay` does (whole-second waits; replies with `on_newer: merge` and 3 s
of generation); the bursts are labelled, so a burst over two batches is split whatever its
gaps. `adaptive` starts every person at `quiet_seconds` (3 s), between 1 s and 12 s.
"""

from __future__ import annotations

import math
import random
from pathlib import Path
from typing import Any

from functions.logic.rules.debounce import BatchingRules
from infra.replay.__main__ import parse_policy, plot
from infra.replay.simulate import Fragment, replay

SEED = 20261125  # the bench's seed, for every synthetic corpus it replays
PEOPLE, BURSTS_EACH = 200, 25
FIXED = (3, 5, 10, 15)
QUIET = (1, 2, 3, 4, 5, 6, 8, 10)
# The targets for `adaptive` on this population (docs/decisions.md).
TARGET_AI_CALLS, TARGET_DELAY_S = 1.32, 4.2


def population(seed: int, people: int = PEOPLE, bursts_each: int = BURSTS_EACH) -> list[Fragment]:
    rng = random.Random(seed)
    fragments = []
    for person in range(people):
        typical = math.exp(rng.uniform(math.log(0.4), math.log(5)))
        pause_share = rng.uniform(0.02, 0.12)
        at = rng.uniform(0, 3600)
        for burst in range(bursts_each):
            size = rng.choices(range(1, 9), weights=[22, 20, 17, 13, 10, 8, 6, 4])[0]
            for n in range(size):
                if n:
                    gap = typical * rng.lognormvariate(0, 0.45)
                    at += gap * rng.uniform(2, 5) if rng.random() < pause_share else gap
                fragments.append(Fragment(f"person-{person}", int(at * 1000), str(burst)))
            at += rng.uniform(120, 7200)
    return fragments


def description() -> str:
    """The population, for docs/benchmarks.md (this module's docstring, after its first paragraph)."""
    return (__doc__ or "").split("\n\n", 1)[-1].strip()


def policies() -> list[tuple[str, BatchingRules]]:
    configured = BatchingRules().model_dump()
    names = [f"fixed:{w}" for w in FIXED] + [f"quiet:{q}" for q in QUIET] + ["adaptive"]
    return [(name, parse_policy(name, configured)) for name in names]


def interpolated_quiet(rows: list[dict[str, Any]], delay: float) -> float:
    """AI calls per burst of a uniform quiet period at `delay` (linear between the two
    quiet policies around it)."""
    quiet = sorted(
        (r["delay_median_s"], r["ai_calls_per_burst"]) for r in rows if r["policy"].startswith("quiet:")
    )
    for (d0, c0), (d1, c1) in zip(quiet, quiet[1:], strict=False):
        if d0 <= delay <= d1:
            return c0 + (c1 - c0) * (delay - d0) / (d1 - d0) if d1 > d0 else min(c0, c1)
    return math.nan


def measure(seed: int) -> list[dict[str, Any]]:
    fragments = population(seed)
    return [replay(name, rules, fragments) for name, rules in policies()]


def section(seed: int, png: Path) -> tuple[str, str]:
    """The section: its table (markdown) and what it concludes; the frontier drawn to `png`."""
    rows = measure(seed)
    adaptive = next(r for r in rows if r["policy"] == "adaptive")
    uniform = interpolated_quiet(rows, adaptive["delay_median_s"])
    plot(rows, png, f"{PEOPLE} people, {PEOPLE * BURSTS_EACH:,} bursts, each person typing their own way")
    table = "\n".join(
        [
            "| Policy | AI calls per burst | Replies per burst (merge) | Bursts split "
            "| Delay after last fragment, median / p90 |",
            "|---|---|---|---|---|",
            *(
                f"| {r['policy']} | {r['ai_calls_per_burst']:.2f} | {r['replies_per_burst']:.2f} "
                f"| {r['split_bursts'] / r['bursts']:.0%} "
                f"| {r['delay_median_s']:.1f} s / {r['delay_p90_s']:.1f} s |"
                for r in rows
            ),
        ]
    )
    met = adaptive["ai_calls_per_burst"] <= TARGET_AI_CALLS and adaptive["delay_median_s"] <= TARGET_DELAY_S
    beaten = adaptive["ai_calls_per_burst"] < uniform
    verdict = (
        f"`adaptive`: {adaptive['ai_calls_per_burst']:.2f} AI calls per burst at a median delay of "
        f"{adaptive['delay_median_s']:.1f} s (targets ≤ {TARGET_AI_CALLS} at ≤ {TARGET_DELAY_S} s: "
        f"{'met' if met else 'NOT met'}); a uniform quiet period at that delay: {uniform:.2f} "
        f"({'adaptive beats it' if beaten else 'adaptive does NOT beat it'})."
    )
    return table, verdict
