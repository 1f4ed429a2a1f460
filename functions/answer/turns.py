"""The Turns table, all its access: a user turn and an assistant turn per answered batch, one
item each, so that a long conversation never meets DynamoDB's 400 KB item limit.

- A batch's turns: written by its run (Turn.user, Turn.assistant), a failed batch's user
  turn recorded (`mark_failed`), an answered batch's turns, totals and lock in one
  transaction (`record_answered_batch`).
- The messages sent once for a turn (functions/delivery/send_once.py): where the turn keeps
  each one's claim and SID (a `Slot`: a reply's parts, the WhatsApp template, a part sent
  again after 63018, the fallback reply), claimed (`claim_once`) and recorded
  (`record_once`); what Twilio reported of each (`record_delivery`).
- A person's reply (functions/handoff/person_reply.py): an assistant turn `written_by:
  person`, written once per helpdesk event (`put_once`: a redelivery finds it), marked sent
  once its parts are out, and its assistant message in the OpenAI conversation: when the
  first attempt to add it began (`item_since`) and its item id once added (`item_ids`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from boto3.dynamodb.conditions import Attr, Key
from botocore.exceptions import ClientError

from functions.errors import TransactionConflict
from functions.storage import dynamo, expressions
from functions.storage.models import Delivery, Turn, from_dynamo, without_none
from functions.storage.settings import TableSettings
from functions.tenancy import conversations


def _table() -> Any:
    return dynamo.table(TableSettings.get().turns_table)


def _key(conversation_id: str, turn_id: str) -> dict[str, str]:
    return {"conversation_id": conversation_id, "turn_id": turn_id}


# --- reading and writing turns ---------------------------------------------------------------


def put(turn: Turn) -> None:
    _table().put_item(Item=dynamo.to_dynamo(turn.to_item()))


def put_once(turn: Turn) -> Turn:
    """Write the turn unless it is written already (a person's reply, redelivered); the turn
    as the table holds it."""
    try:
        _table().put_item(
            Item=dynamo.to_dynamo(turn.to_item()),
            ConditionExpression=expressions.NEW_TURN,
            ReturnValuesOnConditionCheckFailure="ALL_OLD",
        )
    except ClientError as error:
        if not dynamo.condition_failed(error):
            raise
        return Turn.from_item(dynamo.old_item(error))
    return turn


def get(conversation_id: str, turn_id: str) -> Turn | None:
    item = _table().get_item(Key=_key(conversation_id, turn_id), ConsistentRead=True).get("Item")
    return Turn.from_item(item) if item else None


def require(conversation_id: str, turn_id: str) -> Turn:
    """A turn an earlier state of the run stored; an error if it is missing."""
    if (turn := get(conversation_id, turn_id)) is None:
        raise ValueError(f"turn {turn_id} of {conversation_id} is missing")
    return turn


def list_of(conversation_id: str) -> list[Turn]:
    items = dynamo.all_items(
        _table().query, KeyConditionExpression=Key("conversation_id").eq(conversation_id)
    )
    return [Turn.from_item(i) for i in items]


def last_reply(conversation_id: str) -> Turn | None:
    """The newest assistant turn that was sent (turn ids sort by window, oldest first)."""
    request: dict[str, Any] = {
        "KeyConditionExpression": Key("conversation_id").eq(conversation_id),
        "FilterExpression": Attr("role").eq("assistant") & Attr("status").eq("sent"),
        "ScanIndexForward": False,
        "Limit": 20,
    }
    while True:
        response = _table().query(**request)
        if response["Items"]:
            return Turn.from_item(response["Items"][0])
        if "LastEvaluatedKey" not in response:
            return None
        request["ExclusiveStartKey"] = response["LastEvaluatedKey"]


def recent(conversation_id: str, limit: int) -> list[Turn]:
    """The conversation's last `limit` turns, newest first (turn ids sort by window)."""
    items = _table().query(
        KeyConditionExpression=Key("conversation_id").eq(conversation_id), ScanIndexForward=False, Limit=limit
    )["Items"]
    return [Turn.from_item(i) for i in items]


# --- a batch's user turn ---------------------------------------------------------------------


def record_transcripts(conversation_id: str, turn_id: str, transcripts: dict[str, str]) -> None:
    """Keep the voice notes' transcripts with the user turn (a retry reuses them)."""
    _table().update_item(
        Key=_key(conversation_id, turn_id),
        UpdateExpression=expressions.SET_TRANSCRIPTS,
        ConditionExpression=expressions.IS_A_TURN,
        ExpressionAttributeValues={":t": transcripts},
    )


def pin_profile(conversation_id: str, turn_id: str, key: str, version: int) -> Turn:
    """Pin the assistant profile version (key "" and 0: none) the batch is asked with, unless
    an earlier attempt pinned one; the user turn with the version it holds."""
    try:
        updated = _table().update_item(
            Key=_key(conversation_id, turn_id),
            UpdateExpression=expressions.PIN_PROFILE,
            ConditionExpression=expressions.PROFILE_NOT_PINNED,
            ExpressionAttributeValues={":key": key, ":version": version},
            ReturnValues="ALL_NEW",
        )
    except ClientError as error:
        if dynamo.condition_failed(error):
            return require(conversation_id, turn_id)
        raise
    return Turn.from_item(updated["Attributes"])


def mark_failed(conversation_id: str, turn_id: str, fields: dict[str, Any]) -> None:
    """Record a batch as failed on its user turn, creating the turn if the run failed
    before merging."""
    values = {f":{k}": v for k, v in dynamo.to_dynamo(fields).items()}
    _table().update_item(
        Key=_key(conversation_id, turn_id),
        UpdateExpression="SET " + ", ".join(f"#{k} = :{k}" for k in fields),
        ExpressionAttributeNames={f"#{k}": k for k in fields},
        ExpressionAttributeValues=values,
    )


# --- the messages sent once for a turn (functions/delivery/send_once.py) ---------------------


@dataclass(frozen=True)
class Slot:
    """Where a turn keeps the claim and the SID of a message sent once: the attribute of when
    its first attempt began, of who claimed it (None: whoever asks sends it), of its SID.
    `within`: a map of the turn holding them under the message's part (a resend's, in
    `resends`). `in_order`: SIDs appended in part order to the list `sid` (a reply's parts),
    under one claim per attempt (`last_attempt_at`) that also keeps the part whose create
    Twilio refused (refuse_part). `creates_turn`: the claim writes the turn if it is missing
    (a fallback's user turn, for a run that failed before merging)."""

    since: str
    sid: str
    owner: str | None = None
    within: str | None = None
    in_order: bool = False
    creates_turn: bool = False


# A reply's parts (`message_sids`, in order; functions/delivery/reply.py).
REPLY_PARTS = Slot(since="sending_since", sid="message_sids", in_order=True)
# The WhatsApp template sent instead of a reply (functions/delivery/template.py).
TEMPLATE = Slot(since="template_since", sid="template_sid", owner="template_owner")
# A part sent again after a 63018, by part (functions/delivery/part_resend.py).
RESEND = Slot(since="since", sid="sid", owner="owner", within="resends")
# The fallback reply of a batch set aside, on its user turn (functions/delivery/fallback.py).
FALLBACK = Slot(since="fallback_since", sid="fallback_message_sid", creates_turn=True)


@dataclass(frozen=True)
class Held:
    """What the turn held of a message once an attempt claimed it."""

    since: str  # when the first attempt began (this one's time if it is the first)
    owner: str | None = None  # who sends it (None: the slot has no owner)
    sid: str | None = None  # its SID, recorded by an earlier attempt
    refused_part: int | None = None  # in order: the previous attempt's last create, refused
    part_sids: tuple[str, ...] = ()  # the turn's reply parts' SIDs (`message_sids`)
    reported: tuple[str, ...] = ()  # the SIDs the turn keeps a delivery receipt of


def claim_once(
    conversation_id: str, turn_id: str, slot: Slot, part: int, owner: str | None, now: str
) -> Held:
    """Record that an attempt to send the message (part `part`, for a slot with parts)
    began at `now` for `owner`, unless one did before; what the turn held then. In order:
    the attempt's time is kept too, and the part the previous attempt's last create was
    refused is said."""
    key = _key(conversation_id, turn_id)
    if slot.within is not None:
        old = _claim_within(key, slot.within, str(part), owner, now)
        own = from_dynamo((old.get(slot.within) or {}).get(str(part)) or {})
    else:
        old = own = _claim_fields(key, slot, owner, now)
    parts = tuple(str(sid) for sid in old.get("message_sids") or [])
    return Held(
        since=str(own.get(slot.since) or now),
        owner=(own.get(slot.owner) or owner) if slot.owner else None,
        sid=(parts[part] if part < len(parts) else None) if slot.in_order else own.get(slot.sid),
        refused_part=_refused_last(old) if slot.in_order else None,
        part_sids=parts,
        reported=tuple(old.get("deliveries") or {}),
    )


def _claim_fields(key: dict[str, str], slot: Slot, owner: str | None, now: str) -> dict[str, Any]:
    """The claim of a message kept in fields of the turn; the turn as it was before."""
    names = {"#since": slot.since}
    values: dict[str, Any] = {":now": now} | ({":none": {}} if slot.in_order else {})
    expression = expressions.CLAIM_ONCE
    if slot.owner:
        names["#owner"], values[":owner"] = slot.owner, owner or ""
        expression = expressions.CLAIM_OWNED
    if slot.in_order:
        expression = expressions.BEGIN_SENDING
    exists = {} if slot.creates_turn else {"ConditionExpression": expressions.IS_A_TURN}
    return dict(
        _table()
        .update_item(
            Key=key,
            UpdateExpression=expression,
            ExpressionAttributeNames=names,
            ExpressionAttributeValues=values,
            ReturnValues="ALL_OLD",
            **exists,
        )
        .get("Attributes", {})
    )


def _claim_within(key: dict[str, str], within: str, part: str, owner: str | None, now: str) -> dict[str, Any]:
    """The claim of a message kept in the turn's map `within` under `part`: the map made if
    missing, then the part's claim if it has none; the turn as it was before the claim."""
    table = _table()
    table.update_item(
        Key=key,
        UpdateExpression=expressions.MAKE_MAP,
        ConditionExpression=expressions.IS_A_TURN,
        ExpressionAttributeNames={"#map": within},
        ExpressionAttributeValues={":none": {}},
    )
    return dict(
        table.update_item(
            Key=key,
            UpdateExpression=expressions.CLAIM_IN_MAP,
            ExpressionAttributeNames={"#map": within, "#part": part},
            ExpressionAttributeValues={":claim": {"owner": owner, "since": now}},
            ReturnValues="ALL_OLD",
        ).get("Attributes", {})
    )


def _refused_last(old: dict[str, Any]) -> int | None:
    """The part whose create Twilio refused in the previous attempt, if it was that
    attempt's last create (so it is not in doubt)."""
    refused, previous = old.get("refused_part"), old.get("last_attempt_at")
    if refused is None or previous is None or old.get("refused_by") != previous:
        return None
    return int(refused)


def record_once(conversation_id: str, turn_id: str, slot: Slot, part: int, sid: str, now: str) -> None:
    """Keep the SID of the message (part `part`, for a slot with parts), which Twilio
    accepted by `now`."""
    if slot.in_order:
        append_sent_part(conversation_id, turn_id, part, sid, now)
        return
    path = {"#map": slot.within, "#part": str(part)} if slot.within is not None else {}
    _table().update_item(
        Key=_key(conversation_id, turn_id),
        UpdateExpression=expressions.RECORD_IN_MAP if slot.within is not None else expressions.RECORD_ONCE,
        ExpressionAttributeNames={**path, "#sid": slot.sid},
        ExpressionAttributeValues={":sid": sid},
    )


def append_sent_part(
    conversation_id: str, turn_id: str, part_index: int, message_sid: str, accepted_at: str
) -> None:
    """Record that reply part `part_index` was sent (Twilio accepted it at `accepted_at`),
    exactly once per part; the turn keeps when its first part was."""
    _table().update_item(
        Key=_key(conversation_id, turn_id),
        UpdateExpression=expressions.APPEND_MESSAGE_SID,
        ConditionExpression=Attr("message_sids").size().eq(part_index)
        if part_index
        else Attr("turn_id").exists()
        & (Attr("message_sids").not_exists() | Attr("message_sids").size().eq(0)),
        ExpressionAttributeValues={":sid": [message_sid], ":empty": [], ":at": accepted_at},
    )


def refuse_part(conversation_id: str, turn_id: str, part_index: int, attempt: str) -> None:
    """Record that Twilio refused the create of reply part `part_index` by the attempt that
    began at `attempt` (the next attempt need not wait for its receipt)."""
    _table().update_item(
        Key=_key(conversation_id, turn_id),
        UpdateExpression=expressions.REFUSE_PART,
        ExpressionAttributeValues={":part": part_index, ":attempt": attempt},
    )


def record_delivery(conversation_id: str, turn_id: str, message_sid: str, delivery: Delivery) -> bool:
    """Keep what Twilio reported of a message of the turn, unless a status of the same or
    a later rank is kept already (a repeated or late callback). False when nothing
    changed (or there is no such turn)."""
    key = {"conversation_id": conversation_id, "turn_id": turn_id}
    value = without_none(delivery.model_dump(mode="json"))
    for _ in range(2):
        try:
            _table().update_item(
                Key=key,
                UpdateExpression=expressions.RECORD_DELIVERY,
                ConditionExpression=expressions.LATER_DELIVERY,
                ExpressionAttributeNames={"#sid": message_sid, "#rank": "rank"},
                ExpressionAttributeValues={":delivery": value, ":rank": delivery.rank},
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
            return True
        except ClientError as error:
            if not dynamo.condition_failed(error):
                raise
            old = dynamo.old_item(error)
            if not old or "deliveries" in old:
                return False  # no such turn, or a status as late is kept
        try:  # the turn's first delivery (a fallback reply's, on the user turn)
            _table().update_item(
                Key=key,
                UpdateExpression=expressions.FIRST_DELIVERY,
                ConditionExpression=expressions.NO_DELIVERIES_YET,
                ExpressionAttributeValues={":deliveries": {message_sid: value}},
            )
            return True
        except ClientError as error:
            if not dynamo.condition_failed(error):
                raise
    return False


def claim_typing(conversation_id: str, turn_id: str, field: str, now: str) -> bool:
    """Claim showing the user turn's typing indicator (`typing_shown_at`) or its refresh
    (`typing_refreshed_at`): True for the one caller that set it."""
    try:
        _table().update_item(
            Key=_key(conversation_id, turn_id),
            UpdateExpression=expressions.CLAIM_TYPING,
            ConditionExpression=expressions.UNCLAIMED_TYPING,
            ExpressionAttributeNames={"#f": field},
            ExpressionAttributeValues={":now": now},
        )
    except ClientError as error:
        if dynamo.condition_failed(error):
            return False
        raise
    return True


# --- a person's reply (functions/handoff/person_reply.py) ------------------------------------


def record_person_reply_sent(conversation_id: str, turn_id: str, sent_at: str) -> None:
    """Mark a person's reply sent (at `sent_at`, unless an earlier call did)."""
    _table().update_item(
        Key=_key(conversation_id, turn_id),
        UpdateExpression=expressions.PERSON_REPLY_SENT,
        ConditionExpression=expressions.IS_A_TURN,
        ExpressionAttributeNames={"#status": "status"},
        ExpressionAttributeValues={":sent": "sent", ":at": sent_at},
    )


def claim_openai_item(conversation_id: str, turn_id: str, now: str) -> tuple[list[str], str]:
    """Record that an attempt to add a person's reply to the OpenAI conversation began at
    `now`, unless one did before: the item ids recorded, and when the first attempt began."""
    updated = _table().update_item(
        Key=_key(conversation_id, turn_id),
        UpdateExpression=expressions.CLAIM_ITEM,
        ConditionExpression=expressions.IS_A_TURN,
        ExpressionAttributeValues={":now": now},
        ReturnValues="ALL_NEW",
    )["Attributes"]
    return list(from_dynamo(updated.get("item_ids") or [])), str(updated["item_since"])


def record_openai_item(conversation_id: str, turn_id: str, item_id: str) -> None:
    _table().update_item(
        Key=_key(conversation_id, turn_id),
        UpdateExpression=expressions.RECORD_ITEM,
        ExpressionAttributeValues={":ids": [item_id]},
    )


# --- an answered batch ---------------------------------------------------------------------


def record_answered_batch(
    *,
    conversation_id: str,
    owner: str,
    user_turn_id: str,
    assistant_turn_id: str | None,
    answered_at: str,
    processing_time_ms: int,
    tokens: dict[str, int],
    last_message_sid: str | None,
    limited: bool = False,
    ended_by: str | None = None,
) -> bool:
    """In one transaction: mark the user turn answered (or handed off to a person, when
    there is no assistant turn, or limited, when a cost limit stopped the AI call) with
    why its burst ended, the assistant turn sent (or limited), update the conversation's
    totals (and when it last got a reply, if a message went out) and release the
    processing lock, on condition that this run still holds it. False if the lock is no
    longer ours. (The resource's client takes plain Python values.)"""
    handed_off = assistant_turn_id is None
    answered, sent = ("limited", "limited") if limited else ("answered", "sent")
    user_status = "handed_off" if handed_off else answered
    status = "awaiting_agent" if handed_off else ("limited" if limited else "reply_sent")
    ended = {":status": user_status, ":ended": ended_by}
    items = [_turn_update(conversation_id, user_turn_id, expressions.ANSWER_USER_TURN, ended, answered_at)]
    if assistant_turn_id is not None:
        values = {":sent": sent, ":ms": processing_time_ms}
        items.append(
            _turn_update(
                conversation_id, assistant_turn_id, expressions.SEND_ASSISTANT_TURN, values, answered_at
            )
        )
    turn_count = 1 if handed_off else 2
    items.append(
        conversations.answered_update(
            conversation_id, owner, status, answered_at, tokens, last_message_sid, turn_count
        )
    )
    return _transact(items, conversation_id)


def _turn_update(
    conversation_id: str, turn_id: str, expression: str, values: dict[str, Any], at: str
) -> dict[str, Any]:
    return {
        "Update": {
            "TableName": TableSettings.get().turns_table,
            "Key": {"conversation_id": conversation_id, "turn_id": turn_id},
            "UpdateExpression": expression,
            "ExpressionAttributeNames": {"#s": "status"},
            "ExpressionAttributeValues": {**values, ":at": at},
        }
    }


def _transact(items: list[dict[str, Any]], conversation_id: str) -> bool:
    """Write `items` in one transaction; False if a condition failed (the lock is not
    ours), TransactionConflict if another write to one of them got in the way."""
    try:
        dynamo.client().transact_write_items(TransactItems=items)
    except ClientError as error:
        if error.response["Error"]["Code"] != "TransactionCanceledException":
            raise
        reasons = {r.get("Code") for r in error.response.get("CancellationReasons", [])}
        if "TransactionConflict" in reasons:  # another write to one of the items: try again
            raise TransactionConflict(f"recording the batch of {conversation_id} conflicted") from error
        return False
    return True
