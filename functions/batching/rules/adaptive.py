"""`adaptive` batching: a quiet period learned per conversation. Pure functions, times in
epoch milliseconds.

The conversation record keeps what was learned (`learned_quiet_ms`), and when the last
answered burst's last fragment came (`last_burst_ms`) and when that burst was declared
over (`burst_closed_ms`); the processing lock's write sets them (Acquire Processing Lock),
the webhook reads them with the conversation it reads already. A window's quiet period is
fixed when it opens and travels in its run's rules (`quiet_seconds`):

- opening: the learned quiet (or `quiet_seconds` before anything is learned); if the
  fragment that opens the window came after the last burst was declared over, and no more
  than `quiet_max_seconds` after that burst's last fragment, we answered too soon (a split
  burst): the quiet is nudged up towards that gap (`after_split`);
- burst over: each gap between the window's fragments pulls the quiet towards
  `QUIET_PER_GAP` times the gap, by `GAP_WEIGHT` a gap (an exponentially weighted average
  of the person's gaps, scaled) (`after_burst`).

Always between `quiet_min_seconds` and `quiet_max_seconds`.
"""

from __future__ import annotations

from dataclasses import dataclass

from functions.batching.rules.burst import BatchingRules

# How far each gap between fragments pulls the quiet period towards QUIET_PER_GAP times it.
GAP_WEIGHT = 0.25
# The quiet period is this many times the person's typical gap: the gaps of one person
# vary around their mean, and waiting for most of them takes more than it (chosen with the
# bounds across the bench's populations: docs/adr/0127-adaptive-batchings-defaults-chosen-across-six.md,
# tests/support/bench/population.py).
QUIET_PER_GAP = 1.75
# A split burst moves the quiet period this far towards SPLIT_MARGIN times the gap that
# split it.
SPLIT_WEIGHT = 0.5
SPLIT_MARGIN = 1.25


@dataclass(frozen=True)
class Learned:
    """What a conversation record keeps for `adaptive` (None: nothing yet)."""

    quiet_ms: int | None = None
    last_burst_ms: int | None = None
    burst_closed_ms: int | None = None


def bounded(rules: BatchingRules, seconds: float) -> float:
    low = min(rules.quiet_min_seconds, rules.quiet_max_seconds)
    return min(max(seconds, low), rules.quiet_max_seconds)


def is_split(rules: BatchingRules, learned: Learned, now_ms: int) -> bool:
    """Whether a fragment at `now_ms` that opens a window belongs to the burst answered
    last: it came after that burst was declared over, within `quiet_max_seconds` of its
    last fragment."""
    if learned.last_burst_ms is None or learned.burst_closed_ms is None:
        return False
    return learned.burst_closed_ms <= now_ms <= learned.last_burst_ms + int(rules.quiet_max_seconds * 1000)


def after_split(rules: BatchingRules, quiet: float, gap_seconds: float) -> float:
    target = max(quiet, gap_seconds * SPLIT_MARGIN)
    return bounded(rules, quiet + SPLIT_WEIGHT * (target - quiet))


def for_new_window(rules: BatchingRules, learned: Learned, now_ms: int) -> BatchingRules:
    """The rules of a window opened at `now_ms`: in `adaptive` mode, with the conversation's
    quiet period (nudged up after a split burst) as `quiet_seconds`; other modes as they are."""
    if rules.mode != "adaptive":
        return rules
    quiet = bounded(rules, learned.quiet_ms / 1000 if learned.quiet_ms else rules.quiet_seconds)
    if is_split(rules, learned, now_ms) and learned.last_burst_ms is not None:
        quiet = after_split(rules, quiet, (now_ms - learned.last_burst_ms) / 1000)
    return rules.model_copy(update={"quiet_seconds": quiet})


def after_burst(rules: BatchingRules, opened_ms: int, last_ms: int, count: int, closed_ms: int) -> Learned:
    """What the conversation learns from a burst declared over at `closed_ms` (its window
    opened at `opened_ms`, its last fragment at `last_ms`, `count` fragments), starting from
    the window's quiet period (`rules.quiet_seconds`)."""
    quiet = rules.quiet_seconds
    gaps = count - 1
    if gaps > 0 and last_ms >= opened_ms:
        mean_gap = (last_ms - opened_ms) / 1000 / gaps
        weight = 1 - (1 - GAP_WEIGHT) ** gaps
        quiet += weight * (QUIET_PER_GAP * mean_gap - quiet)
    return Learned(int(bounded(rules, quiet) * 1000), last_ms, closed_ms)
