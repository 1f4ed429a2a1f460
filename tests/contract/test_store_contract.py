"""One contract for the in-memory fakes and the DynamoDB layer: each test runs on both
(the `store` fixture), so a fake cannot behave otherwise than the table it stands for."""

from __future__ import annotations

import pytest
from botocore.exceptions import ClientError

from functions.answer import turns
from functions.batching import batch_windows
from functions.errors import ConversationNotFound
from functions.intake.inbound import Channel
from functions.storage.models import BatchWindow, Conversation, Turn
from functions.tenancy import conversations

NOW, LEASE = 1_800_000_000, 60
CONVERSATION = Conversation(
    conversation_id="c1",
    channel=Channel.WHATSAPP,
    user_address="whatsapp:+15550001111",
    our_address="whatsapp:+15550000001",
    created_at="2026-11-26T00:00:00+00:00",
)


def window(window_id: str = "w1") -> BatchWindow:
    return BatchWindow(
        conversation_id="c1",
        window_id=window_id,
        opened_at="2026-11-26T00:00:00+00:00",
        opened_ms=1_000,
        last_message_ms=1_000,
        execution_name=f"c1-{window_id}",
    )


# --- the processing lock ------------------------------------------------------------------


def test_a_free_lock_is_taken_and_held_against_others_until_released(store):
    store.add_conversation(CONVERSATION)

    assert conversations.acquire_lock("c1", "run-a", NOW, LEASE, "t")
    assert conversations.acquire_lock("c1", "run-a", NOW + 1, LEASE, "t")  # ours already
    assert not conversations.acquire_lock("c1", "run-b", NOW + 1, LEASE, "t")
    assert not conversations.release_lock("c1", "run-b")
    assert conversations.release_lock("c1", "run-a")
    assert conversations.acquire_lock("c1", "run-b", NOW + 2, LEASE, "t")


def test_what_adaptive_batching_learned_is_kept_with_the_lock_and_read_with_the_conversation(store):
    store.add_conversation(CONVERSATION)
    learned = {"learned_quiet_ms": 4_200, "last_burst_ms": 1_000, "burst_closed_ms": 5_000}

    assert not conversations.acquire_lock("nobody", "run-a", NOW, LEASE, "t", learned=learned)
    assert conversations.acquire_lock("c1", "run-a", NOW, LEASE, "t", learned=learned)

    kept = conversations.require("c1")
    assert (kept.learned_quiet_ms, kept.last_burst_ms, kept.burst_closed_ms) == (4_200, 1_000, 5_000)
    assert not conversations.acquire_lock("c1", "run-b", NOW + 1, LEASE, "t", learned={"learned_quiet_ms": 1})
    assert conversations.require("c1").learned_quiet_ms == 4_200  # not by a run without the lock


def test_a_lock_whose_lease_expired_is_taken_over(store):
    store.add_conversation(CONVERSATION)
    assert conversations.acquire_lock("c1", "run-a", NOW, LEASE, "t")

    assert not conversations.acquire_lock("c1", "run-b", NOW + LEASE, LEASE, "t")
    assert conversations.acquire_lock("c1", "run-b", NOW + LEASE + 1, LEASE, "t")
    assert not conversations.release_lock("c1", "run-a")


def test_the_lock_of_a_missing_conversation_is_not_taken(store):
    assert not conversations.acquire_lock("nobody", "run-a", NOW, LEASE, "t")
    with pytest.raises(ConversationNotFound):
        conversations.require("nobody")


# --- batch windows ------------------------------------------------------------------------


def test_one_window_opens_and_a_second_open_gets_the_open_one(store):
    assert batch_windows.open(window("w1")) is None
    assert batch_windows.open(window("w2")).window_id == "w1"
    assert batch_windows.get("c1").window_id == "w1"


def test_a_task_token_is_parked_on_its_own_window_and_never_replaced_by_an_older_wait(store):
    batch_windows.open(window("w1"))

    assert batch_windows.park_task_token("c1", "w2", "other-window", 10) is None
    assert batch_windows.park_task_token("c1", "w1", "first", 10).task_token == "first"
    assert batch_windows.park_task_token("c1", "w1", "late", 5) is None
    assert batch_windows.park_task_token("c1", "w1", "second", 20).task_token == "second"
    assert batch_windows.get("c1").task_token == "second"


def test_a_window_is_closed_once_and_only_by_its_own_run(store):
    batch_windows.open(window("w1"))

    assert batch_windows.close("c1", "w0") is None
    assert batch_windows.close("c1", "w1").window_id == "w1"
    assert batch_windows.close("c1", "w1") is None
    assert batch_windows.get("c1") is None
    assert batch_windows.park_task_token("c1", "w1", "token", 30) is None


# --- turns --------------------------------------------------------------------------------


def begin_sending(now: str) -> turns.Held:
    """An attempt to send the reply of turn a1 begins: its claim, made with its first part."""
    return turns.claim_once("c1", "a1", turns.REPLY_PARTS, 0, None, now)


def test_reply_parts_are_recorded_in_order_once_and_sending_begins_once(store):
    turns.put(Turn(conversation_id="c1", turn_id="a1", role="assistant", body="hello"))

    assert begin_sending("t1").since == "t1"
    assert begin_sending("t2").since == "t1"  # a second call keeps the first time
    assert turns.require("c1", "a1").sending_since == "t1"
    with pytest.raises(ClientError):
        turns.append_sent_part("c1", "a1", 1, "SM-out-of-order", "t3")
    turns.append_sent_part("c1", "a1", 0, "SM0", "t4")
    with pytest.raises(ClientError):
        turns.append_sent_part("c1", "a1", 0, "SM0-again", "t5")
    turns.record_once("c1", "a1", turns.REPLY_PARTS, 1, "SM1", "t6")
    assert turns.require("c1", "a1").message_sids == ["SM0", "SM1"]
    assert turns.require("c1", "a1").first_part_at == "t4"  # when the first part was accepted
    held = turns.claim_once("c1", "a1", turns.REPLY_PARTS, 1, None, "t7")
    assert (held.sid, held.part_sids, held.owner) == ("SM1", ("SM0", "SM1"), None)


def test_a_part_refused_in_the_previous_attempt_is_not_in_doubt_in_the_next_only(store):
    turns.put(Turn(conversation_id="c1", turn_id="a1", role="assistant", body="hello"))

    assert begin_sending("t1").refused_part is None
    turns.refuse_part("c1", "a1", 0, "t1")  # attempt t1's create of part 0: refused
    assert begin_sending("t2").refused_part == 0
    # Attempt t2 made a create of part 0 whose answer was lost: in doubt again.
    assert begin_sending("t3").refused_part is None


def test_the_template_is_claimed_by_the_first_owner(store):
    turns.put(Turn(conversation_id="c1", turn_id="a1", role="assistant", body="hello"))

    assert turns.claim_once("c1", "a1", turns.TEMPLATE, 0, "run-a", "t1").owner == "run-a"
    claimed = turns.claim_once("c1", "a1", turns.TEMPLATE, 0, "callback", "t2")
    assert (claimed.owner, claimed.since, claimed.sid) == ("run-a", "t1", None)
    turns.record_once("c1", "a1", turns.TEMPLATE, 0, "SMtemplate", "t3")
    assert turns.require("c1", "a1").template_sid == "SMtemplate"
    assert turns.claim_once("c1", "a1", turns.TEMPLATE, 0, "callback", "t4").sid == "SMtemplate"
    with pytest.raises(ClientError):  # no such turn: nothing to claim
        turns.claim_once("c1", "a9", turns.TEMPLATE, 0, "run-a", "t1")


def test_a_parts_resend_is_claimed_by_the_first_owner_for_that_part_only(store):
    turns.put(Turn(conversation_id="c1", turn_id="a1", role="assistant", body="hello", message_sids=["SM0"]))

    first = turns.claim_once("c1", "a1", turns.RESEND, 1, "SMfailed1", "t1")
    assert (first.owner, first.since, first.sid, first.part_sids) == ("SMfailed1", "t1", None, ("SM0",))
    again = turns.claim_once("c1", "a1", turns.RESEND, 1, "SMother", "t2")
    assert (again.owner, again.since) == ("SMfailed1", "t1")
    assert turns.claim_once("c1", "a1", turns.RESEND, 0, "SMfailed0", "t3").owner == "SMfailed0"
    turns.record_once("c1", "a1", turns.RESEND, 1, "SMresent", "t4")
    kept = turns.require("c1", "a1").resends
    assert (kept["1"].owner, kept["1"].since, kept["1"].sid, kept["0"].sid) == (
        "SMfailed1",
        "t1",
        "SMresent",
        None,
    )
    assert turns.claim_once("c1", "a1", turns.RESEND, 1, "SMother", "t5").sid == "SMresent"


def test_the_fallback_is_claimed_once_on_its_user_turn_made_if_missing(store):
    held = turns.claim_once("c1", "u1", turns.FALLBACK, 0, None, "t1")
    assert (held.since, held.sid, held.owner) == ("t1", None, None)
    assert turns.claim_once("c1", "u1", turns.FALLBACK, 0, None, "t2").since == "t1"
    turns.record_once("c1", "u1", turns.FALLBACK, 0, "SMfallback", "t3")
    turns.mark_failed("c1", "u1", {"role": "user", "status": "failed"})
    kept = turns.require("c1", "u1")
    assert (kept.fallback_since, kept.fallback_message_sid) == ("t1", "SMfallback")
    assert turns.claim_once("c1", "u1", turns.FALLBACK, 0, None, "t4").sid == "SMfallback"


def test_a_message_counted_in_no_window_opens_one_and_a_later_one_moves_it(store):
    opened = batch_windows.count_message(window("w1"), 2_000, flush=False)
    assert (opened.window_id, opened.message_count, opened.last_message_ms) == ("w1", 1, 2_000)
    assert opened.previous_message_ms is None and not opened.flush_requested

    later = batch_windows.count_message(window("w2"), 3_000, flush=True)
    assert (later.window_id, later.message_count, later.opened_ms) == ("w1", 2, 1_000)
    assert (later.previous_message_ms, later.last_message_ms, later.flush_requested) == (2_000, 3_000, True)
    assert batch_windows.count_message(window("w3"), 4_000, flush=False).flush_requested  # a flush stays


def test_the_scan_lists_the_open_windows(store):
    batch_windows.open(window("w1"))
    other = window("w9").model_copy(update={"conversation_id": "c2", "execution_name": "c2-w9"})
    batch_windows.open(other)

    assert sorted((w.conversation_id, w.window_id) for w in batch_windows.scan()) == [
        ("c1", "w1"),
        ("c2", "w9"),
    ]


# --- conversations --------------------------------------------------------------------------


def test_a_created_conversation_is_found_by_its_tenant_and_addresses_only(store):
    user, us, tenant = CONVERSATION.user_address, CONVERSATION.our_address, "AC" + "1" * 32

    created = conversations.create(Channel.WHATSAPP, user, us, "2026-11-26T00:00:00+00:00", tenant)

    assert conversations.create(Channel.WHATSAPP, user, us, "later", tenant) == created
    assert conversations.find(Channel.WHATSAPP, user, us, tenant) == created
    assert conversations.get(created.conversation_id) == created
    assert conversations.find(Channel.WHATSAPP, user, us, "AC" + "2" * 32) is None
    assert conversations.find(Channel.SMS, user, us, tenant) is None
    assert conversations.get("nobody") is None
