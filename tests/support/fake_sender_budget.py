"""The senders' turns and the numbers' own rates, for the in-memory store
(tests/support/fakes.py): what functions/delivery/sender_budget.py books on DynamoDB items (each
shard's next turn), with the same rules; held to them by
tests/contract/test_sender_budget_contract.py."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

from functions.delivery.sender_budget import gap_us, shard_key, shards_for


@dataclass
class InMemorySenderTurns:
    next_turns: dict[str, int] = field(default_factory=dict)  # shard key → its next turn (epoch µs)
    sender_rates: dict[str, float] = field(default_factory=dict)  # number → its own rate
    turns_taken: list[tuple[str, int]] = field(default_factory=list)  # (sender, turn), in order
    _turns_lock: threading.Lock = field(default_factory=threading.Lock)

    def take_turn(self, sender: str, mps: float, now_us: int, latest_us: int, home: int = 0) -> int | None:
        shards, gap = shards_for(mps), gap_us(mps)
        with self._turns_lock:
            for n in range(shards):
                key = shard_key(sender, (home + n) % shards)
                booked = self.next_turns.get(key)
                turn = now_us if booked is None or booked < now_us else booked
                if turn <= latest_us:
                    self.next_turns[key] = turn + gap
                    self.turns_taken.append((sender, turn))
                    return turn
        return None

    def sender_mps(self, address: str) -> float | None:
        return self.sender_rates.get(address)
