"""A sender's turns, held to one contract for the in-memory fake and the DynamoDB layer
(functions/delivery/sender_budget.py; the `store` fixture runs each test on both): a turn is now
when none is booked ahead, else the next free one, one gap (1/mps s) after the last; one
that begins after the latest time asked for is not booked. Expected values are the tests'
own arithmetic on the rate."""

from __future__ import annotations

from functions.delivery import sender_budget

SENDER = "whatsapp:+15550000001"
T0 = 1_800_000_000 * 1_000_000  # epoch microseconds
SECOND = 1_000_000
FAR = T0 + 3600 * SECOND


def test_a_turn_is_now_when_none_is_booked_and_the_next_free_one_otherwise(store):
    turns = [sender_budget.take_turn(SENDER, 4, T0, FAR) for _ in range(3)]
    assert turns == [T0, T0 + SECOND // 4, T0 + SECOND // 2]

    later = T0 + 2 * SECOND  # the booked turns have passed: the sender is idle again
    assert sender_budget.take_turn(SENDER, 4, later, FAR) == later
    sender_budget.forget()  # another Lambda instance, which has seen nothing
    assert sender_budget.take_turn(SENDER, 4, later, FAR) == later + SECOND // 4
    # A sender's turns are its own.
    assert sender_budget.take_turn("whatsapp:+15550000002", 4, later, FAR) == later


def test_a_turn_past_the_latest_time_asked_for_is_not_booked(store):
    for _ in range(4):
        sender_budget.take_turn(SENDER, 2, T0, FAR)  # booked until T0 + 2 s

    assert sender_budget.take_turn(SENDER, 2, T0, T0 + SECOND) is None
    assert sender_budget.take_turn(SENDER, 2, T0, T0 + 2 * SECOND) == T0 + 2 * SECOND  # not taken before
    sender_budget.forget()
    assert sender_budget.take_turn(SENDER, 2, T0, T0 + SECOND) is None


def test_a_fast_sender_spreads_its_turns_over_shards_each_at_its_share_of_the_rate(store):
    mps = 400
    shards = sender_budget.shards_for(mps)
    assert shards == 4 and sender_budget.gap_us(mps) == shards * SECOND // mps  # 10 ms a shard

    on_home = [sender_budget.take_turn(SENDER, mps, T0, FAR, home=1) for _ in range(3)]
    on_another = sender_budget.take_turn(SENDER, mps, T0, FAR, home=2)

    assert on_home == [T0, T0 + 10_000, T0 + 20_000]
    assert on_another == T0  # another shard's turns are free
    # Home booked past the latest time: the next shard's turn.
    assert sender_budget.take_turn(SENDER, mps, T0, T0 + 25_000, home=1) == T0 + 10_000
