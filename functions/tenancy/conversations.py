"""The Conversations table: one item per conversation, with its processing lock."""

from __future__ import annotations

import hashlib
import hmac
from typing import Any

from boto3.dynamodb.conditions import Key
from botocore.exceptions import ClientError

from functions.errors import ConversationNotFound
from functions.intake import staged_messages
from functions.intake.inbound import Channel, address_key
from functions.storage import dynamo, expressions
from functions.storage.models import Conversation
from functions.storage.settings import TableSettings
from functions.tenancy import id_key


def _table() -> Any:
    return dynamo.table(TableSettings.get().conversations_table)


def find(
    channel: Channel, user_address: str, our_address: str, tenant_account_sid: str
) -> Conversation | None:
    """The tenant's open conversation (task not complete) between this user and our
    number. Another tenant's conversation on the same addresses (a number that has moved
    between tenants) is not this tenant's to continue."""
    response = _table().query(
        IndexName="by_address",
        KeyConditionExpression=Key("address_key").eq(address_key(channel, user_address, our_address)),
        ScanIndexForward=False,
        Limit=10,
    )
    for item in response["Items"]:
        if not item.get("task_complete") and item.get("tenant_account_sid") == tenant_account_sid:
            return Conversation.from_item(item)
    return None


def new_conversation_id(tenant_account_sid: str, key: str, generation: int = 0) -> str:
    """The id of the tenant's conversation of an address key: an HMAC under the deployment's
    key (id_key), so that it reveals nothing of the addresses without the key, and is the
    same for every webhook that draws it. Conversations created before the key keep the
    plain hash they were given (docs/adr/0134-conversation-ids-are-keyed-they-give-away-no.md).
    A person who writes again once theirs was forgotten opens the next `generation`, under an
    id of its own (create). Code takes
    any string as a conversation id (URLs, execution names and logs encode it where needed)."""
    message = f"{tenant_account_sid}#{key}" + (f"#{generation}" if generation else "")
    return "c" + hmac.new(id_key.conversation_id_key(), message.encode(), hashlib.sha256).hexdigest()[:24]


# A person forgotten this many times on one number is not answered on it again (a bound on
# the ids create tries, one conditional put each).
MAX_GENERATIONS = 100


def create(
    channel: Channel,
    user_address: str,
    our_address: str,
    now: str,
    tenant_account_sid: str,
    message_sid: str | None = None,
) -> Conversation:
    """Create the tenant's conversation with an unknown sender. Its id derives from the
    tenant and the addresses (under the deployment's key), so two webhooks racing to create
    it agree on one record. A record under that id that is done (`task_complete`: the
    person was forgotten) is not theirs to continue: the next generation's id is tried,
    unless the done one staged `message_sid` (a replay of a message it had): then that one
    is returned, done, and nothing is created."""
    key = address_key(channel, user_address, our_address)
    for generation in range(MAX_GENERATIONS):
        conversation = Conversation(
            conversation_id=new_conversation_id(tenant_account_sid, key, generation)
            if generation
            else new_conversation_id(tenant_account_sid, key),
            channel=channel,
            user_address=user_address,
            our_address=our_address,
            created_at=now,
            tenant_account_sid=tenant_account_sid,
            generation=generation,
        )
        item = {
            **conversation.to_item(),
            "address_key": key,
            "updated_at": now,
            "conversation_status": "open",
        }
        try:
            _table().put_item(Item=item, ConditionExpression=expressions.NEW_CONVERSATION)
        except ClientError as error:
            if not dynamo.condition_failed(error):
                raise
            existing = get(conversation.conversation_id)
            if existing is not None and existing.task_complete:
                if message_sid and staged_messages.staged_in([existing.conversation_id], message_sid):
                    return existing
                continue
            if existing is not None:
                return existing
        return conversation
    raise ValueError(f"{MAX_GENERATIONS} conversations of one person with {our_address} were forgotten")


def of_address(channel: Channel, user_address: str, our_address: str) -> list[Conversation]:
    """Every conversation between this user and our number that holds their address, every
    tenant's, done or not, newest first (a forgotten one holds it no more)."""
    items = dynamo.all_items(
        _table().query,
        IndexName="by_address",
        KeyConditionExpression=Key("address_key").eq(address_key(channel, user_address, our_address)),
        ScanIndexForward=False,
    )
    found = (get(str(item["conversation_id"])) for item in items)
    return [c for c in found if c is not None and c.user_address == user_address]


def get(conversation_id: str) -> Conversation | None:
    item = _table().get_item(Key={"conversation_id": conversation_id}, ConsistentRead=True).get("Item")
    return Conversation.from_item(item) if item else None


def update(conversation_id: str, **fields: Any) -> None:
    """Set fields of a conversation record (an admin's change: rules, tenant secrets...);
    a None value removes the field."""
    to_set = {k: v for k, v in fields.items() if v is not None}
    to_remove = [k for k, v in fields.items() if v is None]
    expression = ""
    if to_set:
        expression += "SET " + ", ".join(f"#{k} = :{k}" for k in to_set)
    if to_remove:
        expression += " REMOVE " + ", ".join(f"#{k}" for k in to_remove)
    values = {f":{k}": dynamo.to_dynamo(v) for k, v in to_set.items()}
    _table().update_item(
        Key={"conversation_id": conversation_id},
        UpdateExpression=expression.strip(),
        ConditionExpression=expressions.IS_A_CONVERSATION,
        ExpressionAttributeNames={f"#{k}": k for k in fields},
        **({"ExpressionAttributeValues": values} if values else {}),
    )


def set_openai_conversation(conversation_id: str, openai_conversation_id: str) -> None:
    _table().update_item(
        Key={"conversation_id": conversation_id},
        UpdateExpression=expressions.SET_OPENAI_CONVERSATION,
        ExpressionAttributeValues={":o": openai_conversation_id},
    )


def set_opted_out(conversation_id: str, opted_out: bool, at: str, by: str) -> None:
    """Record that the user opted out (STOP) or back in (START), by the keyword of the
    user turn `by`."""
    _table().update_item(
        Key={"conversation_id": conversation_id},
        UpdateExpression=expressions.SET_OPTED_OUT,
        ExpressionAttributeValues={":o": opted_out, ":at": at, ":by": by},
    )


def pause(conversation_id: str, at: str, by: str, until: str | None, message: str | None = None) -> bool:
    """Hand the conversation off to a person from `at` (until `until`; None: until resumed).
    A pause by a keyword's `message` holds only if the conversation was not paused already
    (False then); any other pause replaces the one before."""
    optional = {"paused_until": until, "paused_by_message": message}  # absent when None
    sets = "".join(f", {field} = :{field}" for field, value in optional.items() if value)
    removed = [field for field, value in optional.items() if not value]
    given = {":at": at, ":by": by, **{f":{field}": value for field, value in optional.items() if value}}
    try:
        _table().update_item(
            Key={"conversation_id": conversation_id},
            UpdateExpression=expressions.PAUSE + sets + (" REMOVE " + ", ".join(removed) if removed else ""),
            ConditionExpression=expressions.NOT_PAUSED if message else expressions.IS_A_CONVERSATION,
            ExpressionAttributeValues=given,
        )
    except ClientError as error:
        if dynamo.condition_failed(error) and message:
            return False
        raise
    return True


def resume(conversation_id: str) -> None:
    """The assistant answers the conversation again."""
    _table().update_item(
        Key={"conversation_id": conversation_id},
        UpdateExpression=expressions.RESUME,
        ConditionExpression=expressions.IS_A_CONVERSATION,
    )


def claim_limited_notice(conversation_id: str, now: int, every_seconds: int) -> bool:
    """True for the one caller that may tell the person a limit stopped their reply: none
    was told within `every_seconds` before `now` (epoch seconds)."""
    try:
        _table().update_item(
            Key={"conversation_id": conversation_id},
            UpdateExpression=expressions.CLAIM_LIMITED_NOTICE,
            ConditionExpression=expressions.LIMITED_NOTICE_DUE,
            ExpressionAttributeValues={":now": now, ":due": now - every_seconds},
        )
    except ClientError as error:
        if dynamo.condition_failed(error):
            return False
        raise
    return True


def record_delivery_failure(conversation_id: str, code: int | None, at: str) -> None:
    """Remember on the conversation that a reply could not be delivered (and why)."""
    _table().update_item(
        Key={"conversation_id": conversation_id},
        UpdateExpression=expressions.RECORD_DELIVERY_FAILURE,
        ExpressionAttributeValues={":code": code if code is not None else 0, ":at": at, ":one": 1},
    )


# --- the processing lock --------------------------------------------------------------


def acquire_lock(
    conversation_id: str,
    owner: str,
    now_epoch: int,
    lease_seconds: int,
    now: str,
    learned: dict[str, int] | None = None,
) -> bool:
    """Take the conversation's processing lock for `owner` (an execution name), if it is
    free, already ours, or its lease has expired, setting the `learned` attributes in the
    same write (adaptive batching). False when someone else holds it."""
    learned = learned or {}
    try:
        _table().update_item(
            Key={"conversation_id": conversation_id},
            UpdateExpression=expressions.TAKE_LOCK + "".join(f", {k} = :{k}" for k in learned),
            ConditionExpression=expressions.LOCK_IS_FREE_OURS_OR_EXPIRED,
            ExpressionAttributeValues={
                ":me": owner,
                ":exp": now_epoch + lease_seconds,
                ":now": now,
                ":now_epoch": now_epoch,
                **{f":{k}": v for k, v in learned.items()},
            },
        )
    except ClientError as error:
        if dynamo.condition_failed(error):
            return False
        raise
    return True


def require(conversation_id: str) -> Conversation:
    """The conversation a run names; ConversationNotFound if it does not exist."""
    conversation = get(conversation_id)
    if conversation is None:
        raise ConversationNotFound(conversation_id)
    return conversation


def release_lock(conversation_id: str, owner: str) -> bool:
    """Release the processing lock if `owner` holds it. False if it did not."""
    try:
        _table().update_item(
            Key={"conversation_id": conversation_id},
            UpdateExpression=expressions.RELEASE_LOCK,
            ConditionExpression=expressions.HOLDS_LOCK,
            ExpressionAttributeValues={":me": owner},
        )
    except ClientError as error:
        if dynamo.condition_failed(error):
            return False
        raise
    return True


def answered_update(
    conversation_id: str,
    owner: str,
    status: str,
    at: str,
    tokens: dict[str, int],
    last_message_sid: str | None,
    turns: int,
) -> dict[str, Any]:
    """An answered batch's update of its conversation, an item of the transaction that
    records the batch (functions/answer/turns.py record_answered_batch): its totals and
    status, and the processing lock released, if `owner` still holds it."""
    return {
        "Update": {
            "TableName": TableSettings.get().conversations_table,
            "Key": {"conversation_id": conversation_id},
            "UpdateExpression": expressions.RECORD_REPLY_AND_RELEASE_LOCK
            if last_message_sid
            else expressions.RECORD_ANSWER_AND_RELEASE_LOCK,
            "ConditionExpression": expressions.HOLDS_LOCK,
            "ExpressionAttributeValues": {
                ":at": at,
                ":status": status,
                ":sid": last_message_sid or "",
                ":p": tokens.get("prompt_tokens", 0),
                ":c": tokens.get("completion_tokens", 0),
                ":t": tokens.get("total_tokens", 0),
                ":turns": turns,
                ":me": owner,
            },
        }
    }
