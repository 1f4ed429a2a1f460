"""A fake of the `time` module's monotonic clock, for code that measures a budget or waits
with `time.monotonic()` and `time.sleep()`: put in place of the module's `time`
(`monkeypatch.setattr(module, "time", FakeMonotonic())`), it never waits, and a test
reads how long the code waited, and how many times, instead of timing it on the wall clock.
Thread-safe: a fake vendor called from several threads moves it on under `lock`."""

from __future__ import annotations

import threading


class FakeMonotonic:
    def __init__(self, start: float = 1_000.0) -> None:
        self.start = self.now = start
        self.sleeps: list[float] = []  # every wait asked for, in order
        self.lock = threading.RLock()

    def monotonic(self) -> float:
        with self.lock:
            return self.now

    def sleep(self, seconds: float) -> None:
        with self.lock:
            self.sleeps.append(seconds)
            self.now += max(0.0, seconds)

    @property
    def elapsed(self) -> float:
        """How far the clock moved on since it started."""
        return self.now - self.start
