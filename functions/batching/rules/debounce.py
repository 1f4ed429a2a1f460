"""Batching rules: when a burst is over. Pure functions, times in epoch milliseconds.

- `fixed`: the window closes `window_seconds` after its first fragment (the seeds' W).
- `quiet`: the window closes once the conversation has been quiet for `quiet_seconds`,
  or `typing_quiet_seconds` when the last two fragments came closer together than
  `typing_gap_seconds` (the user is still typing).
- `adaptive`: like `quiet`, with a quiet period learned per conversation from the
  person's own gaps between fragments, between `quiet_min_seconds` and
  `quiet_max_seconds`, starting from `quiet_seconds` (functions/batching/rules/adaptive.py
  puts the learned period in `quiet_seconds`).
- Either way never later than `max_wait_seconds` after the first fragment, and at once
  when `max_messages` fragments are in or a fragment matches a flush keyword.
- `on_newer`: what a fragment that arrives while the reply is being generated does.
  `merge` (the default): the reply is discarded and the batch, with the newer fragments,
  is answered again, at most `max_regenerations` times and not after `max_wait_seconds`
  from the first fragment; `next`: it waits for the next window.
"""

import re
from collections.abc import Mapping
from typing import Any

from functions.batching.rules.burst import BatchingRules, BurstEnd
from functions.intake.inbound import Channel
from functions.storage.models import BatchWindow

# Step Functions waits in whole seconds; a function holds what is left of the last one, so
# that a burst is answered at its due time, not up to a second after it.
HOLD_MS = 1000


def resolve_rules(
    defaults: Mapping[str, Any], channel: Channel, *layers: Mapping[str, Any] | None
) -> BatchingRules:
    """The global defaults, overridden by each layer in turn (the project's rules, then
    the conversation's); a layer's `channels.<channel>` overrides the rest of that layer."""
    merged = dict(defaults)
    for layer in layers:
        if not layer:
            continue
        merged.update({k: v for k, v in layer.items() if k != "channels"})
        merged.update((layer.get("channels") or {}).get(channel.value) or {})
    return BatchingRules.parse(merged)


def due_ms(rules: BatchingRules, opened_ms: int, last_ms: int, previous_ms: int | None) -> int:
    """When the window's burst is over."""
    return min(_mode_due_ms(rules, opened_ms, last_ms, previous_ms), _cap_ms(rules, opened_ms))


def _cap_ms(rules: BatchingRules, opened_ms: int) -> int:
    return opened_ms + int(rules.max_wait_seconds * 1000)


def _mode_due_ms(rules: BatchingRules, opened_ms: int, last_ms: int, previous_ms: int | None) -> int:
    """When the mode says the burst is over, before the cap."""
    if rules.mode == "fixed":
        return opened_ms + int(rules.window_seconds * 1000)
    if rules.mode == "adaptive":
        return last_ms + int(rules.quiet_seconds * 1000)
    typing = previous_ms is not None and last_ms - previous_ms < rules.typing_gap_seconds * 1000
    quiet = rules.typing_quiet_seconds if typing else rules.quiet_seconds
    return last_ms + int(quiet * 1000)


def is_flush_keyword(rules: BatchingRules, body: str) -> bool:
    return any(
        re.search(rf"(?<!\w){re.escape(k)}(?!\w)", body, re.IGNORECASE) for k in rules.flush_keywords if k
    )


def window_due_ms(rules: BatchingRules, window: BatchWindow) -> int:
    return due_ms(rules, window.opened_ms, window.last_message_ms, window.previous_message_ms)


def burst_end_reason(rules: BatchingRules, window: BatchWindow, now_ms: int) -> BurstEnd | None:
    """Why the burst of `window` is over now (None: it is not): a flush keyword, enough
    fragments, the cap on the wait (`max_wait_seconds`), or the mode's own due time: the
    fixed window, or a quiet period."""
    if window.flush_requested:
        return "flush"
    if rules.max_messages and window.message_count >= rules.max_messages:
        return "max_messages"
    mode_due = _mode_due_ms(rules, window.opened_ms, window.last_message_ms, window.previous_message_ms)
    cap = _cap_ms(rules, window.opened_ms)
    if min(mode_due, cap) > now_ms:
        return None
    if cap < mode_due:
        return "cap"
    return "fixed" if rules.mode == "fixed" else "quiet"  # any mode that waits for a quiet period


def is_due_now(rules: BatchingRules, window: BatchWindow, now_ms: int) -> bool:
    """Whether the run waiting on `window` should answer now."""
    return burst_end_reason(rules, window, now_ms) is not None


def splits_a_burst(last_reply_at_ms: int | None, received_ms: int, split_seconds: float) -> bool:
    """Whether a fragment that begins a new burst came so soon after the last reply that
    the person was most likely still writing the burst it answered (SplitBursts)."""
    if last_reply_at_ms is None:
        return False
    return 0 <= received_ms - last_reply_at_ms < split_seconds * 1000


def seconds_until_due(rules: BatchingRules, window: BatchWindow, now_ms: int) -> int:
    """Whole seconds to wait (a waitForTaskToken timeout is whole seconds, at least 1),
    ending before the burst's due time rather than after it: the last fraction of a second
    is held by the function that runs when the wait ends (`hold_ms`)."""
    return max(1, (window_due_ms(rules, window) - now_ms - 1) // 1000)


def hold_ms(rules: BatchingRules, window: BatchWindow, now_ms: int) -> int:
    """How long to hold on before the burst is due, when it is due within HOLD_MS (a
    whole-second wait would end up to a second late); 0 when due now or further off."""
    if is_due_now(rules, window, now_ms):
        return 0
    left = window_due_ms(rules, window) - now_ms
    return left if left <= HOLD_MS else 0


def may_answer_again(rules: BatchingRules, regenerations: int, batch_size: int, batch_limit: int) -> bool:
    """Whether this batch's reply may still be discarded for newer fragments: `on_newer:
    merge`, regenerations left, and room in the batch for them (a full batch leaves them to
    the next window anyway)."""
    return rules.on_newer == "merge" and regenerations < rules.max_regenerations and batch_size < batch_limit


def newer_fragments_arrived(rules: BatchingRules, window: BatchWindow, merged_ms: int, now_ms: int) -> bool:
    """Whether the window counted a fragment after its batch was merged, while the burst
    may still be answered as one (before `max_wait_seconds` from its first fragment)."""
    cap = window.opened_ms + int(rules.max_wait_seconds * 1000)
    return window.last_message_ms > merged_ms and now_ms < cap
