"""The attempts to send a reply's parts, as the assistant turn records them: when the first
attempt began (`sending_since`), when the latest began (`last_attempt_at`), and the part
whose create Twilio refused (answered 4xx, so it created nothing) in that latest attempt
(`refused_part`, `refused_by`): the next attempt need not wait for that part's delivery
receipt (functions/delivery/send_once.py); and the parts sent again after Twilio
reported them failed with 63018 (`resends`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from boto3.dynamodb.conditions import Attr

from functions.storage import dynamo, expressions
from functions.storage.models import Resend, from_dynamo
from functions.storage.settings import TableSettings


@dataclass(frozen=True)
class SendingAttempt:
    since: str  # when the first attempt began: this one's time if it is the first
    refused_part: int | None = None  # the previous attempt's last create, refused: not in doubt


def _table() -> Any:
    return dynamo.table(TableSettings.get().turns_table)


def begin_sending(conversation_id: str, turn_id: str, now: str) -> SendingAttempt:
    """Record that an attempt to send the turn began at `now` (and, if it is the first,
    that sending began then); when sending began, and the part the previous attempt was
    refused, if that was its last create."""
    old = (
        _table()
        .update_item(
            Key={"conversation_id": conversation_id, "turn_id": turn_id},
            UpdateExpression=expressions.BEGIN_SENDING,
            ConditionExpression=Attr("turn_id").exists(),
            ExpressionAttributeValues={":now": now, ":none": {}},
            ReturnValues="ALL_OLD",
        )
        .get("Attributes", {})
    )
    refused = old.get("refused_part")
    previous = old.get("last_attempt_at")
    cleared = refused is not None and previous is not None and old.get("refused_by") == previous
    return SendingAttempt(str(old.get("sending_since") or now), int(refused) if cleared else None)


def refuse_part(conversation_id: str, turn_id: str, part_index: int, attempt: str) -> None:
    """Record that Twilio refused the create of part `part_index` by the attempt that
    began at `attempt`."""
    _table().update_item(
        Key={"conversation_id": conversation_id, "turn_id": turn_id},
        UpdateExpression=expressions.REFUSE_PART,
        ExpressionAttributeValues={":part": part_index, ":attempt": attempt},
    )


def claim_resend(conversation_id: str, turn_id: str, part_index: int, owner: str, now: str) -> Resend:
    """Claim sending part `part_index` again for `owner`, unless someone claimed it
    before; the claim recorded (its owner says who sends it)."""
    key = {"conversation_id": conversation_id, "turn_id": turn_id}
    exists = Attr("turn_id").exists()
    table = _table()
    table.update_item(
        Key=key,
        UpdateExpression=expressions.RESENDS,
        ConditionExpression=exists,
        ExpressionAttributeValues={":none": {}},
    )
    updated = table.update_item(
        Key=key,
        UpdateExpression=expressions.CLAIM_RESEND,
        ExpressionAttributeNames={"#part": str(part_index)},
        ExpressionAttributeValues={":claim": {"owner": owner, "since": now}},
        ReturnValues="ALL_NEW",
    )
    return Resend.model_validate(from_dynamo(updated["Attributes"]["resends"][str(part_index)]))


def record_resend(conversation_id: str, turn_id: str, part_index: int, message_sid: str) -> None:
    _table().update_item(
        Key={"conversation_id": conversation_id, "turn_id": turn_id},
        UpdateExpression=expressions.RECORD_RESEND,
        ExpressionAttributeNames={"#part": str(part_index)},
        ExpressionAttributeValues={":sid": message_sid},
    )
