"""What no input can do: make a run's history outgrow AWS's limit, a batch outgrow an
item, or a transaction conflict pass for a lost lock."""

import boto3
import pytest
from botocore.stub import Stubber

from functions.answer import turns
from functions.batching.rules.burst import MAX_WAIT_LIMIT_SECONDS, BatchingRules
from functions.batching.rules.debounce import resolve_rules
from functions.batching.rules.merge import within_bytes
from functions.errors import TransactionConflict
from functions.intake.inbound import Channel
from functions.storage import dynamo
from functions.storage.models import StagedMessage
from functions.storage.tables import assistant_turn_id, user_turn_id


def test_rules_are_clamped_so_that_a_run_history_stays_far_below_25000_events():
    rules = resolve_rules(
        {"mode": "quiet", "max_wait_seconds": 60},
        Channel.SMS,
        {"max_wait_seconds": 86_400, "quiet_seconds": 7200},
    )
    assert rules.max_wait_seconds == MAX_WAIT_LIMIT_SECONDS and rules.quiet_seconds == MAX_WAIT_LIMIT_SECONDS
    # at most one extension per second of waiting, about 15 history events each
    assert MAX_WAIT_LIMIT_SECONDS * 15 < 25_000 / 2
    assert BatchingRules(max_wait_seconds=30, window_seconds=10).window_seconds == 10  # within limits: kept


def _message(sid: str, chars: int) -> StagedMessage:
    return StagedMessage(conversation_id="c", message_sid=sid, received_at="t", body="é" * chars)


def test_a_batch_takes_messages_in_order_up_to_the_byte_cap_and_always_one():
    messages = [_message("a", 1000), _message("b", 1000), _message("c", 10)]  # 2,000 bytes each, then 20
    assert within_bytes(messages, ["a", "b", "c"], 4_010) == ["a", "b"]  # c would pass the cap
    assert within_bytes(messages, ["a", "b", "c"], 100) == ["a"]  # one, however large
    assert within_bytes(messages, ["c", "a"], 10_000) == ["c", "a"]


def test_a_transaction_that_conflicted_is_retried_not_taken_for_a_lost_lock(monkeypatch):
    client = boto3.resource("dynamodb", region_name="us-east-1").meta.client  # takes plain values
    monkeypatch.setattr(dynamo, "client", lambda: client)
    with Stubber(client) as stubber:
        stubber.add_client_error(
            "transact_write_items",
            service_error_code="TransactionCanceledException",
            response_meta={},
            modeled_fields={"CancellationReasons": [{"Code": "None"}, {"Code": "TransactionConflict"}]},
        )
        with pytest.raises(TransactionConflict):
            _record(stubber)
        stubber.add_client_error(
            "transact_write_items",
            service_error_code="TransactionCanceledException",
            modeled_fields={"CancellationReasons": [{"Code": "None"}, {"Code": "ConditionalCheckFailed"}]},
        )
        assert _record(stubber) is False  # the lock is someone else's


def _record(stubber: Stubber) -> bool:
    return turns.record_answered_batch(
        conversation_id="c",
        owner="run",
        user_turn_id=user_turn_id("w"),
        assistant_turn_id=assistant_turn_id("w"),
        answered_at="now",
        processing_time_ms=1,
        tokens={},
        last_message_sid=None,
    )
