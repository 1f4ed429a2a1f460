"""Reply parts due to be sent again later: a part that Twilio reported `failed` or
`undelivered` with 63018 (the account's or the WhatsApp sender's rate or tier limit,
https://www.twilio.com/docs/api/errors/63018) is not sent again at once, when the same
limit would refuse it, but by the reconciler once it is due
(functions/delivery/part_resend.py).

Each is a small item of the BatchWindows table under a key of its own
(`resend#<conversation>#<window>#<part>`, never a conversation id): the reconciler scans
that table every minute already, and it holds only the open windows and these, so finding
the due resends costs no read of the Turns table and no index. The table's TTL removes an
item the reconciler never took, a day after it was due: by then WhatsApp's 24-hour window
has closed and the resend would be refused (63016)."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from botocore.exceptions import ClientError

from functions import clock
from functions.storage import dynamo, expressions
from functions.storage.models import TableItem
from functions.storage.settings import TableSettings

PREFIX = "resend#"
KEPT_FOR = timedelta(hours=24)  # WhatsApp's window: a resend later than this is refused


class DueResend(TableItem):
    """Part `part` of the reply of window `window_id`, to send again at `due_at`; `owner`:
    the MessageSid whose callback said 63018 (the resend's claim is made in its name)."""

    conversation_id: str  # the item's key: `resend#...`
    resend_of: str  # the conversation
    window_id: str
    part: int
    owner: str
    due_at: str
    attempts: int = 0  # creates that failed for a transient reason so far
    expires_at: int = 0

    def due(self, now: datetime) -> bool:
        return clock.parse(self.due_at) <= now

    def expired(self, now: datetime) -> bool:
        return now.timestamp() >= self.expires_at


def is_due_resend(item: dict[str, Any]) -> bool:
    return str(item.get("conversation_id", "")).startswith(PREFIX)


def _table() -> Any:
    return dynamo.table(TableSettings.get().batch_windows_table)


def schedule(conversation_id: str, window_id: str, part: int, owner: str, due_at: datetime) -> bool:
    """Keep part `part` due for a resend at `due_at`, unless it is kept already (a repeated
    callback changes nothing). Whether this call kept it."""
    resend = DueResend(
        conversation_id=f"{PREFIX}{conversation_id}#{window_id}#{part}",
        resend_of=conversation_id,
        window_id=window_id,
        part=part,
        owner=owner,
        due_at=clock.iso(due_at),
        expires_at=int((due_at + KEPT_FOR).timestamp()),
    )
    try:
        _table().put_item(Item=resend.to_item(), ConditionExpression=expressions.NEW_DUE_RESEND)
    except ClientError as error:
        if dynamo.condition_failed(error):
            return False
        raise
    return True


def postpone(resend: DueResend, due_at: datetime) -> None:
    """Keep the resend due again at `due_at`, one more attempt counted."""
    later = resend.model_copy(update={"due_at": clock.iso(due_at), "attempts": resend.attempts + 1})
    _table().put_item(Item=later.to_item())


def done(resend: DueResend) -> None:
    _table().delete_item(Key={"conversation_id": resend.conversation_id})
