"""`make bench`, batching by person: synthetic populations whose people type each in their
own way, replayed with `python -m infra.replay`'s code (infra/replay) under fixed, quiet
and adaptive policies; tests/unit/batching/test_adaptive_population.py checks `adaptive`'s targets on
every one of them.

Each person is one kind of typist, and has a typical gap between fragments, gaps that vary
around it (log-normal), and thinking pauses now and then (2-5 times their gap); their bursts
have 1-8 fragments and are minutes apart. The kinds: steady (a typical gap log-uniform from
0.4 s to 5 s), fast (0.3 s to 1.2 s), slow (2.5 s to 6 s), and bimodal (quick runs, 0.3 s
to 1 s, broken by long stops, 3 s to 7 s, a fifth to a half of their gaps). A population
is a mix of kinds, drawn from its own seed: 200 people, 25 bursts each. Replayed as
`python -m infra.replay` does (whole-second waits; replies with `on_newer: merge` and 3 s
of generation); the bursts are labelled, so a burst over two batches is split whatever its
gaps. `adaptive` starts every person at `quiet_seconds` (3 s), between `quiet_min_seconds`
and `quiet_max_seconds` (2.5 s and 20 s).
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from functions.batching.rules.debounce import BatchingRules
from infra.replay.__main__ import parse_policy, plot
from infra.replay.simulate import Fragment, replay

SEED = 20261125  # the bench's seed, for every synthetic corpus it replays
PEOPLE, BURSTS_EACH = 200, 25
FIXED = (3, 5, 10, 15)
QUIET = (1, 2, 3, 4, 5, 6, 8, 10)
# The targets for `adaptive` (docs/adr/0127-adaptive-batchings-defaults-chosen-across-six.md):
# at most this many AI calls per burst on every population, and a median delay at most this
# long where the typists allow it.
TARGET_AI_CALLS, TARGET_DELAY_S = 1.32, 4.2

Gaps = Callable[[], float]


def _typical(rng: random.Random, low: float, high: float) -> Gaps:
    """A person whose gaps vary around one typical gap, log-uniform from `low` to `high`."""
    typical = math.exp(rng.uniform(math.log(low), math.log(high)))
    return lambda: typical * rng.lognormvariate(0, 0.45)


def _bimodal(rng: random.Random) -> Gaps:
    """A person who types quick runs and stops now and then to think."""
    quick = math.exp(rng.uniform(math.log(0.3), math.log(1)))
    stop = math.exp(rng.uniform(math.log(3), math.log(7)))
    stops = rng.uniform(0.2, 0.5)
    return lambda: (stop if rng.random() < stops else quick) * rng.lognormvariate(0, 0.45)


KINDS: dict[str, Callable[[random.Random], Gaps]] = {
    "steady": lambda rng: _typical(rng, 0.4, 5),
    "fast": lambda rng: _typical(rng, 0.3, 1.2),
    "slow": lambda rng: _typical(rng, 2.5, 6),
    "bimodal": _bimodal,
}


@dataclass(frozen=True)
class Population:
    name: str
    seed: int
    mix: dict[str, float]  # kind of typist → share of the people
    # Whether TARGET_DELAY_S is a target here: on a population where slow or bimodal
    # typists weigh, no setting tried meets it at TARGET_AI_CALLS
    # (docs/adr/0127-adaptive-batchings-defaults-chosen-across-six.md).
    delay_target: bool = True

    def describe(self) -> str:
        return ", ".join(f"{share:.0%} {kind}" for kind, share in self.mix.items())


POPULATIONS = (
    Population("steady", SEED, {"steady": 1}),  # the bench's population since 2026-11-25
    Population("steady, seed 2", 2, {"steady": 1}),
    Population("mostly fast", 3, {"fast": 0.7, "steady": 0.2, "slow": 0.1}),
    Population("mostly slow", 4, {"fast": 0.2, "steady": 0.2, "slow": 0.6}, delay_target=False),
    Population("mostly bimodal", 5, {"bimodal": 0.6, "fast": 0.2, "slow": 0.2}, delay_target=False),
    Population("thirds", 6, {"fast": 1 / 3, "slow": 1 / 3, "bimodal": 1 / 3}, delay_target=False),
)


def fragments(population: Population, people: int = PEOPLE, bursts_each: int = BURSTS_EACH) -> list[Fragment]:
    """The population's fragments: its people in the order of its mix, each drawn from its
    seed (a population of steady typists draws as the bench's first population did)."""
    rng = random.Random(population.seed)
    kinds = [kind for kind, share in population.mix.items() for _ in range(round(share * people))]
    drawn = []
    for person, kind in enumerate(kinds):
        gap = KINDS[kind](rng)
        pause_share = rng.uniform(0.02, 0.12)
        at = rng.uniform(0, 3600)
        for burst in range(bursts_each):
            size = rng.choices(range(1, 9), weights=[22, 20, 17, 13, 10, 8, 6, 4])[0]
            for n in range(size):
                if n:
                    g = gap()
                    at += g * rng.uniform(2, 5) if rng.random() < pause_share else g
                drawn.append(Fragment(f"person-{person}", int(at * 1000), str(burst)))
            at += rng.uniform(120, 7200)
    return drawn


def description() -> str:
    """The populations, for docs/benchmarks.md (this module's docstring, after its first paragraph)."""
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


def measure(population: Population) -> list[dict[str, Any]]:
    drawn = fragments(population)
    return [replay(name, rules, drawn) for name, rules in policies()]


def targets_met(population: Population, adaptive: dict[str, Any]) -> bool:
    calls = adaptive["ai_calls_per_burst"] <= TARGET_AI_CALLS
    return calls and (not population.delay_target or adaptive["delay_median_s"] <= TARGET_DELAY_S)


def section(png: Path) -> tuple[str, str]:
    """The section: the first population's table (markdown), drawn to `png`, then the
    frontier of every population (each policy's AI calls per burst at its median delay) and
    what it concludes for each."""
    measured = [(population, measure(population)) for population in POPULATIONS]
    first, rows = measured[0]
    plot(rows, png, f"{PEOPLE} people, {PEOPLE * BURSTS_EACH:,} bursts, each person typing their own way")
    table = "\n".join(
        [
            f"The {first.name} population ({first.describe()}):\n",
            "| Policy | AI calls per burst | Replies per burst (merge) | Bursts split "
            "| Delay after last fragment, median / p90 |",
            "|---|---|---|---|---|",
            *(
                f"| {r['policy']} | {r['ai_calls_per_burst']:.2f} | {r['replies_per_burst']:.2f} "
                f"| {r['split_bursts'] / r['bursts']:.0%} "
                f"| {r['delay_median_s']:.1f} s / {r['delay_p90_s']:.1f} s |"
                for r in rows
            ),
            "",
            "Every population's frontier: AI calls per burst @ median delay.\n",
            "| Policy | " + " | ".join(p.name for p, _ in measured) + " |",
            "|---|" + "---|" * len(measured),
            *(
                f"| {name} | "
                + " | ".join(
                    f"{r['ai_calls_per_burst']:.2f} @ {r['delay_median_s']:.1f} s"
                    for _, rs in measured
                    for r in rs
                    if r["policy"] == name
                )
                + " |"
                for name, _ in policies()
            ),
        ]
    )
    return table, "\n".join(_verdict(population, rows) for population, rows in measured)


def _verdict(population: Population, rows: list[dict[str, Any]]) -> str:
    adaptive = next(r for r in rows if r["policy"] == "adaptive")
    uniform = interpolated_quiet(rows, adaptive["delay_median_s"])
    delay = f" at ≤ {TARGET_DELAY_S} s" if population.delay_target else " (no delay target here)"
    beaten = adaptive["ai_calls_per_burst"] < uniform
    return (
        f"- {population.name} ({population.describe()}; seed {population.seed}): `adaptive` "
        f"{adaptive['ai_calls_per_burst']:.2f} AI calls per burst at a median delay of "
        f"{adaptive['delay_median_s']:.1f} s (p90 {adaptive['delay_p90_s']:.1f} s); targets ≤ "
        f"{TARGET_AI_CALLS}{delay}: {'met' if targets_met(population, adaptive) else 'NOT met'}; "
        f"a uniform quiet period at that delay: {uniform:.2f} ({'adaptive' if beaten else 'NOT adaptive'} "
        "beats it)."
    )
