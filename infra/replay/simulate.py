"""Replaying arrival times through the batching rules: the production rule code
(functions/batching/rules/debounce.py, adaptive.py), only the clock is the recorded one.

A window opens at a fragment that finds none open; its run waits whole seconds, as Step
Functions does (`seconds_until_due`), and at each check the burst is over if its due time
has passed (`due_ms`), or at once when `max_messages` fragments are in. Fragments that
arrive before the check join the window; a later one opens the next. In `adaptive` mode
each conversation learns as the webhook and the lock's write do (`for_new_window`,
`after_burst`). Processing time is not modelled, nor flush keywords (there are no bodies).

`on_newer: merge` is modelled from arrival times alone: a batch's reply goes out
`generation_seconds` after its window closes, and a fragment arriving before that joins
the reply (the next batch's reply replaces it, so the person sees one reply, not two).
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from dataclasses import dataclass

from functions.batching.rules.adaptive import Learned, after_burst, for_new_window
from functions.batching.rules.debounce import BatchingRules, due_ms


@dataclass(frozen=True)
class Fragment:
    conversation: str
    at_ms: int
    burst: str  # the burst it belongs to, within its conversation


@dataclass(frozen=True)
class Batch:
    first: int  # index of its first fragment in the conversation's list
    last: int  # index of its last
    closed_ms: int


def batches_of(rules: BatchingRules, times: list[int]) -> list[Batch]:
    """One conversation's fragments (arrival times, sorted) in the batches the rules make."""
    batches: list[Batch] = []
    learned = Learned()
    i = 0
    while i < len(times):
        first = i
        window_rules = for_new_window(rules, learned, times[i])
        opened = last = check = times[i]
        previous: int | None = None
        i += 1
        while True:
            if _full(rules, i - first):
                check = last  # the fragment that fills the window wakes its run
                break
            due = due_ms(window_rules, opened, last, previous)
            check += max(1000, -(-(due - check) // 1000) * 1000)  # whole seconds, at least one
            while i < len(times) and times[i] < check and not _full(rules, i - first):
                previous, last = last, times[i]
                i += 1
            if not _full(rules, i - first) and due_ms(window_rules, opened, last, previous) <= check:
                break
        batches.append(Batch(first, i - 1, check))
        if rules.mode == "adaptive":
            learned = after_burst(window_rules, opened, last, i - first, check)
    return batches


def _full(rules: BatchingRules, count: int) -> bool:
    return bool(rules.max_messages) and count >= rules.max_messages


def _quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else 0.0


def replay(
    policy: str, rules: BatchingRules, fragments: list[Fragment], generation_seconds: float = 3
) -> dict[str, object]:
    """The policy's figures on the fragments (see infra/replay/__main__.py for each)."""
    by_conversation: dict[str, list[Fragment]] = defaultdict(list)
    for fragment in fragments:
        by_conversation[fragment.conversation].append(fragment)
    batches = replies = split = 0
    delays: list[float] = []
    bursts: set[tuple[str, str]] = set()
    for conversation, frags in by_conversation.items():
        frags.sort(key=lambda f: f.at_ms)
        times = [f.at_ms for f in frags]
        made = batches_of(rules, times)
        batch_of = [0] * len(times)
        for n, batch in enumerate(made):
            batch_of[batch.first : batch.last + 1] = [n] * (batch.last - batch.first + 1)
        batches += len(made)
        replies += len(made) - sum(
            made[n + 1].first < len(times)
            and times[made[n + 1].first] < made[n].closed_ms + generation_seconds * 1000
            for n in range(len(made) - 1)
        )
        members: dict[str, list[int]] = defaultdict(list)
        for index, fragment in enumerate(frags):
            members[fragment.burst].append(index)
        for burst, indices in members.items():
            bursts.add((conversation, burst))
            split += len({batch_of[i] for i in indices}) > 1
            end = indices[-1]
            delays.append((made[batch_of[end]].closed_ms - times[end]) / 1000)
    count = max(1, len(bursts))
    return {
        "policy": policy,
        "ai_calls_per_burst": round(batches / count, 4),
        "replies_per_burst": round(replies / count, 4),
        "split_bursts": split,
        "delay_median_s": round(statistics.median(delays), 3) if delays else 0.0,
        "delay_p90_s": round(_quantile(delays, 0.9), 3),
        "batches": batches,
        "bursts": len(bursts),
    }


def label_bursts(fragments: list[Fragment], burst_gap_seconds: float) -> list[Fragment]:
    """The fragments labelled with their bursts when the source has none: a conversation's
    burst ends where the next fragment is more than `burst_gap_seconds` later."""
    by_conversation: dict[str, list[Fragment]] = defaultdict(list)
    for fragment in fragments:
        by_conversation[fragment.conversation].append(fragment)
    labelled = []
    for conversation, frags in by_conversation.items():
        frags.sort(key=lambda f: f.at_ms)
        number, previous = 0, None
        for fragment in frags:
            if previous is not None and fragment.at_ms - previous > burst_gap_seconds * 1000:
                number += 1
            labelled.append(Fragment(conversation, fragment.at_ms, f"gap-{number}"))
            previous = fragment.at_ms
    return labelled
