"""Time, in one place: ISO 8601 UTC strings with microseconds sort in arrival order.

It reads the wall clock, so it is a leaf of its own, not a rule (the features' rules/ read
nothing: tests/unit/design/test_rules_are_pure.py); a rule is given the time it needs."""

import time
from datetime import UTC, datetime


def now() -> datetime:
    return datetime.now(UTC)


def iso(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat(timespec="microseconds")


def parse(value: str) -> datetime:
    return datetime.fromisoformat(value)


def epoch_ms(moment: datetime) -> int:
    return int(moment.timestamp() * 1000)


def iso_to_ms(value: str) -> int:
    return epoch_ms(parse(value))


def sleep(seconds: float) -> None:
    """Hold on (tests replace it, with `now`, by a fake clock)."""
    if seconds > 0:
        time.sleep(seconds)
