"""Forgetting a person, in our tables (functions/personal_data/forgetting.py decides what;
functions/personal_data/rules/person_data.py what each item keeps): a forget begins only while no
run holds the conversation, then every item of the conversation that holds what the person
wrote or was answered is replaced by its figures, and the conversation's record, last, by
the forget's own record, without the person's address."""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from boto3.dynamodb.conditions import Attr, Key
from botocore.exceptions import ClientError

from functions.delivery.due_resends import PREFIX as RESEND_PREFIX
from functions.storage import dynamo, expressions
from functions.storage.models import StagedMessage
from functions.storage.settings import TableSettings

# What a turn keeps once forgotten: its keys, role, statuses, times and counts, and the ids of
# what was sent and asked for it at the vendors (the Twilio SIDs and OpenAI response of a forget
# cut short are found again there). Every other attribute goes: the body, media, transcripts,
# the opt-out keyword, a failure's cause, and any attribute this list does not know.
TURN_FIGURES = frozenset(
    {
        "conversation_id",
        "turn_id",
        "role",
        "status",
        "window_id",
        "execution_name",
        "created_at",
        "message_sids",
        "message_count",
        "first_message_sid",
        "first_received_at",
        "last_received_at",
        "arrival_offsets_ms",
        "answered_at",
        "burst_ended_by",
        "failed_at",
        "error",
        "dead_letter_reason",
        "fallback_message_sid",
        "fallback_since",
        "typing_shown_at",
        "typing_refreshed_at",
        "sending_since",
        "last_attempt_at",
        "refused_part",
        "refused_by",
        "resends",
        "deliveries",
        "template_owner",
        "template_since",
        "template_sid",
        "response_id",
        "response_ids",
        "item_ids",
        "model",
        "prompt_tokens",
        "completion_tokens",
        "total_tokens",
        "sent_at",
        "first_part_at",
        "processing_time_ms",
        "limited",
        "written_by",
        "profile_key",
        "profile_version",
        "tools_called",
        "forgotten_at",
        "texts_expired_at",  # cut by the retention (functions/personal_data/retention_store.py)
    }
)
# What a staged message keeps once forgotten: the duplicate ledger's tombstone (its MessageSid
# stays a duplicate until `expires_at`), and the OpenAI response its batch asked, if any.
TOMBSTONE = frozenset(
    {
        "conversation_id",
        "message_sid",
        "answered_in",
        "failed_in",
        "expires_at",
        "forgotten_at",
        "ai_response_id",
    }
)
FORGOTTEN_IN = "forgotten"  # `answered_in` of a message forgotten before it was answered
# What a forgotten conversation's record keeps: who it belonged to (the tenant, our number),
# when, its totals, and the forget's own record (times, runs, counts).
CONVERSATION_FIGURES = frozenset(
    {
        "conversation_id",
        "channel",
        "our_address",
        "created_at",
        "tenant_account_sid",
        "generation",
        "project_id",
        "updated_at",
        "prompt_tokens",
        "completion_tokens",
        "total_tokens",
        "turn_count",
        "delivery_failures",
        "forget_started_at",
        "forget_runs",
        "forget_last_run_at",
        "forget_counts",
    }
)


class Busy(StrEnum):
    """Why a forget cannot begin now: a run holds the conversation."""

    LOCK = "a run holds it (its processing lock)"
    WINDOW = "a run holds it (its batch window is open)"


def begin(conversation_id: str, now: str, now_epoch: int) -> Busy | None:
    """Mark the conversation as being forgotten (from the first run's time; each run counted),
    in one transaction with the check that no run holds it: no processing lock held, no batch
    window open. None when it is marked; otherwise what holds it (nothing written)."""
    settings = TableSettings.get()
    try:
        dynamo.client().transact_write_items(
            TransactItems=[
                {
                    "Update": {
                        "TableName": settings.conversations_table,
                        "Key": {"conversation_id": conversation_id},
                        "UpdateExpression": expressions.BEGIN_FORGET,
                        "ConditionExpression": expressions.NO_RUN_HOLDS_IT,
                        "ExpressionAttributeValues": {
                            ":now": now,
                            ":done": True,
                            ":one": 1,
                            ":now_epoch": now_epoch,
                        },
                    }
                },
                {
                    "ConditionCheck": {
                        "TableName": settings.batch_windows_table,
                        "Key": {"conversation_id": conversation_id},
                        "ConditionExpression": expressions.NO_OPEN_WINDOW,
                    }
                },
            ]
        )
    except ClientError as error:
        if error.response["Error"]["Code"] != "TransactionCanceledException":
            raise
        reasons = [r.get("Code") for r in error.response.get("CancellationReasons", [])]
        if reasons[:1] == ["ConditionalCheckFailed"]:
            return Busy.LOCK
        if reasons[1:2] == ["ConditionalCheckFailed"]:
            return Busy.WINDOW
        raise
    return None


def busy(conversation_id: str, now_epoch: int) -> Busy | None:
    """What holds the conversation now, if anything (a run that began during a forget)."""
    settings = TableSettings.get()
    record = _get(settings.conversations_table, {"conversation_id": conversation_id})
    if record.get("lock_owner") and int(record.get("lock_expires_at", 0)) >= now_epoch:
        return Busy.LOCK
    if _get(settings.batch_windows_table, {"conversation_id": conversation_id}):
        return Busy.WINDOW
    return None


def staged_messages(conversation_id: str) -> list[StagedMessage]:
    """Every staged message of the conversation: pending, set aside, tombstones."""
    items = _partition(TableSettings.get().staged_messages_table, conversation_id)
    return [StagedMessage.from_item(i) for i in items]


def erase_staged(conversation_id: str, forgotten_at: str, expires_at: int) -> int:
    """Replace each staged message that holds more than a tombstone by its tombstone: a message
    not answered yet becomes one too, answered in no window (`FORGOTTEN_IN`), out of the
    pending index, so that no run nor the reconciler takes it up again; the OpenAI response its
    batch asked is kept (`ai_response_id`), for a forget cut short. How many were replaced."""
    table = TableSettings.get().staged_messages_table
    replaced = []
    for item in _partition(table, conversation_id):
        if set(item) <= TOMBSTONE:
            continue
        kept = {k: v for k, v in item.items() if k in TOMBSTONE}
        request = item.get("ai_request") or {}
        if request.get("response_id"):
            kept["ai_response_id"] = request["response_id"]
        if not kept.get("answered_in") and not kept.get("failed_in"):
            kept["answered_in"] = FORGOTTEN_IN
        replaced.append({"expires_at": expires_at, **kept, "forgotten_at": forgotten_at})
    _replace(table, replaced)
    return len(replaced)


def erase_turns(conversation_id: str, forgotten_at: str) -> int:
    """Replace each turn that holds more than its figures (TURN_FIGURES) by them. How many."""
    table = TableSettings.get().turns_table
    replaced = [
        {**{k: v for k, v in item.items() if k in TURN_FIGURES}, "forgotten_at": forgotten_at}
        for item in _partition(table, conversation_id)
        if texts_of(item)
    ]
    _replace(table, replaced)
    return len(replaced)


def held_texts(conversation_id: str) -> int:
    """How many turns and staged messages of the conversation hold more than their figures
    (a run that wrote to it while it was being forgotten)."""
    settings = TableSettings.get()
    turns = _partition(settings.turns_table, conversation_id)
    staged = _partition(settings.staged_messages_table, conversation_id)
    return sum(bool(texts_of(i)) for i in turns) + sum(not set(i) <= TOMBSTONE for i in staged)


def texts_of(turn: dict[str, Any]) -> list[str]:
    """The attributes of a turn item beyond its figures (TURN_FIGURES): what a forget, or the
    retention (functions/personal_data/retention_store.py), takes from it."""
    return sorted(set(turn) - TURN_FIGURES)


def delete_tool_calls(conversation_id: str) -> int:
    """Delete every tool call of the conversation (its arguments' key, its output). How many."""
    table = TableSettings.get().tool_calls_table
    keys = _partition(table, conversation_id, expressions.TOOL_CALL_KEYS)
    _delete(table, keys)
    return len(keys)


def delete_by_address(tenant_account_sid: str, user_address: str, counter_keys: list[str]) -> None:
    """Delete what is kept under the person's address rather than a conversation: the
    configured answer's record (staged_messages.claim_answer) and the sender's usage counters
    (`counter_keys`: functions/guards/limits.py); both expire by their TTL, but TTL
    deletes an expired item only within days."""
    settings = TableSettings.get()
    answer = {"conversation_id": f"answer#{tenant_account_sid}#{user_address}", "message_sid": "answer"}
    _delete(settings.staged_messages_table, [answer])
    _delete(settings.usage_counters_table, [{"counter_key": key} for key in counter_keys])


def delete_due_resends(conversation_id: str) -> int:
    """Delete the conversation's reply parts due to be sent again
    (functions/delivery/due_resends.py): items of the BatchWindows table, which holds only open
    windows and these. How many."""
    table = TableSettings.get().batch_windows_table
    keys = [
        {"conversation_id": i["conversation_id"]}
        for i in dynamo.all_items(
            dynamo.table(table).scan,
            FilterExpression=Attr("conversation_id").begins_with(f"{RESEND_PREFIX}{conversation_id}#"),
            ProjectionExpression=expressions.WINDOW_KEY,
        )
    ]
    _delete(table, keys)
    return len(keys)


def record_counts(conversation_id: str, started: str, counts: dict[str, int]) -> None:
    """Keep what the forget has done so far (counts only), if it is still this forget."""
    dynamo.table(TableSettings.get().conversations_table).update_item(
        Key={"conversation_id": conversation_id},
        UpdateExpression=expressions.RECORD_FORGET,
        ConditionExpression=expressions.STILL_FORGETTING,
        ExpressionAttributeValues={":counts": counts, ":started": started},
    )


def finish(conversation_id: str, started: str, forgotten_at: str) -> None:
    """Replace the conversation's record by its figures (CONVERSATION_FIGURES), without the
    person's address nor its OpenAI conversation, done (`task_complete`: no webhook finds it,
    a new message from the person opens a new one), if it is still the forget that began at
    `started`."""
    table = TableSettings.get().conversations_table
    item = _get(table, {"conversation_id": conversation_id})
    figures = {k: v for k, v in item.items() if k in CONVERSATION_FIGURES}
    stub = {**figures, "user_address": "", "task_complete": True, "conversation_status": "forgotten"}
    dynamo.table(table).put_item(
        Item=dynamo.to_dynamo({**stub, "forgotten_at": forgotten_at}),
        ConditionExpression=expressions.STILL_FORGETTING,
        ExpressionAttributeValues={":started": started},
    )


def _get(table: str, key: dict[str, Any]) -> dict[str, Any]:
    item = dynamo.table(table).get_item(Key=key, ConsistentRead=True).get("Item") or {}
    return dynamo.from_dynamo(item)  # type: ignore[no-any-return]


def _replace(table: str, items: list[dict[str, Any]]) -> None:
    """Write each item whole, in place of the one under its key."""
    with dynamo.table(table).batch_writer() as batch:
        for item in items:
            batch.put_item(Item=dynamo.to_dynamo(item))


def _delete(table: str, keys: list[dict[str, Any]]) -> None:
    with dynamo.table(table).batch_writer() as batch:
        for key in keys:
            batch.delete_item(Key=key)


def _partition(table: str, conversation_id: str, projection: str | None = None) -> list[dict[str, Any]]:
    """Every item under the conversation's id, as plain values."""
    request: dict[str, Any] = {
        "KeyConditionExpression": Key("conversation_id").eq(conversation_id),
        "ConsistentRead": True,
    }
    if projection:
        request["ProjectionExpression"] = projection
    return [dynamo.from_dynamo(i) for i in dynamo.all_items(dynamo.table(table).query, **request)]
