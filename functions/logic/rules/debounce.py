"""Batching rules: when a burst is over. Pure functions, times in epoch milliseconds.

- `fixed`: the window closes `window_seconds` after its first fragment (the seeds' W).
- `quiet`: the window closes once the conversation has been quiet for `quiet_seconds`,
  or `typing_quiet_seconds` when the last two fragments came closer together than
  `typing_gap_seconds` (the user is still typing).
- Either way never later than `max_wait_seconds` after the first fragment, and at once
  when `max_messages` fragments are in or a fragment matches a flush keyword.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Annotated, Any, Literal

import msgspec
from msgspec import Meta

from functions.dal.models import BatchWindow
from functions.models import Channel

# No wait longer than this, whatever a conversation or project asks: each wait that new
# fragments extend adds about 15 events to the run's history, which AWS caps at 25,000,
# and a wait lasts at least a second.
MAX_WAIT_LIMIT_SECONDS = 600


Positive = Annotated[float, Meta(gt=0)]


class BatchingRules(msgspec.Struct, kw_only=True, frozen=True):
    mode: Literal["fixed", "quiet"] = "fixed"
    window_seconds: Positive = 10
    quiet_seconds: Positive = 3
    typing_gap_seconds: Annotated[float, Meta(ge=0)] = 2
    typing_quiet_seconds: Positive = 6
    max_wait_seconds: Positive = 60
    max_messages: Annotated[int, Meta(ge=0)] = 0  # 0: no limit
    flush_keywords: tuple[str, ...] = ()
    answer: Literal["ai", "human"] = "ai"

    def __post_init__(self) -> None:
        """Clamped, not refused: a conversation's rules must never stop its messages."""
        longest = min(self.max_wait_seconds, MAX_WAIT_LIMIT_SECONDS)
        msgspec.structs.force_setattr(self, "max_wait_seconds", longest)
        for bounded in ("window_seconds", "quiet_seconds", "typing_quiet_seconds"):
            msgspec.structs.force_setattr(self, bounded, min(getattr(self, bounded), longest))

    @classmethod
    def parse(cls, rules: Mapping[str, Any]) -> BatchingRules:
        """Rules from a run's input or a record (numbers may be strings there)."""
        return msgspec.convert(rules, cls, strict=False)


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
    cap = opened_ms + int(rules.max_wait_seconds * 1000)
    if rules.mode == "fixed":
        due = opened_ms + int(rules.window_seconds * 1000)
    else:
        typing = previous_ms is not None and last_ms - previous_ms < rules.typing_gap_seconds * 1000
        quiet = rules.typing_quiet_seconds if typing else rules.quiet_seconds
        due = last_ms + int(quiet * 1000)
    return min(due, cap)


def is_flush_keyword(rules: BatchingRules, body: str) -> bool:
    return any(
        re.search(rf"(?<!\w){re.escape(k)}(?!\w)", body, re.IGNORECASE) for k in rules.flush_keywords if k
    )


def window_due_ms(rules: BatchingRules, window: BatchWindow) -> int:
    return due_ms(rules, window.opened_ms, window.last_message_ms, window.previous_message_ms)


def is_due_now(rules: BatchingRules, window: BatchWindow, now_ms: int) -> bool:
    """Whether the run waiting on `window` should answer now."""
    if window.flush_requested:
        return True
    if rules.max_messages and window.message_count >= rules.max_messages:
        return True
    return window_due_ms(rules, window) <= now_ms


def seconds_until_due(rules: BatchingRules, window: BatchWindow, now_ms: int) -> int:
    """Whole seconds to wait (Step Functions timeouts are whole seconds, at least 1)."""
    return max(1, -(-(window_due_ms(rules, window) - now_ms) // 1000))
