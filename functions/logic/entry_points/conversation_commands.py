"""A helpdesk's commands, as events on the service's EventBridge bus: `conversation.pause`,
`conversation.resume` and `conversation.reply` (a person's reply), delivered by a rule on
the bus to this function (infra/constructs/conversation_commands.py): the helpdesk needs
PutEvents on the bus, an IAM permission, and no endpoint of its own.

The event's `detail`:
    {"AccountSid": "AC...",            the tenant whose conversation it is
     "conversation": "c..." | "whatsapp:+15551234567",   its id, or the person's address
     "for_seconds": 7200,              conversation.pause: resume by itself then (optional)
     "body": "..."}                    conversation.reply: the person's text

A command naming a conversation its AccountSid does not own is refused as one naming no
conversation (a tenant must not learn who writes to another), logged and counted
(`ConversationCommandsRefused`), never retried. A reply goes out once however often the
event is delivered: the event's id names its turn (person_reply.py). A transient failure
(Twilio, OpenAI) raises, so that Lambda's asynchronous retries deliver it again."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from functions.contract import ReplySummary, SendInput
from functions.dal.models import Conversation
from functions.errors import TwilioPermanentError
from functions.logic.rules.handoff import BY_HELPDESK, MAX_PAUSE
from functions.logic.shared import handoff
from functions.observability import count, logger
from functions.registry import CONVERSATION_COMMANDS

PAUSE, RESUME, REPLY = DETAIL_TYPES = CONVERSATION_COMMANDS.detail_types
MAX_REPLY_CHARS = 16_000  # ten parts of Twilio's 1,600 characters


class Command(BaseModel):
    model_config = ConfigDict(
        extra="ignore", populate_by_name=True, hide_input_in_errors=True, defer_build=True
    )

    account_sid: Annotated[str, Field(alias="AccountSid", pattern=r"^AC[0-9a-fA-F]{32}$")]
    conversation: Annotated[str, Field(min_length=1, max_length=200)]
    for_seconds: Annotated[float | None, Field(gt=0, le=MAX_PAUSE.total_seconds())] = None
    body: Annotated[str, Field(max_length=MAX_REPLY_CHARS)] = ""


class CommandEvent(BaseModel):
    """EventBridge's event, as a rule delivers it to a Lambda function."""

    model_config = ConfigDict(
        extra="ignore", populate_by_name=True, hide_input_in_errors=True, defer_build=True
    )

    id: Annotated[str, Field(min_length=1)]
    detail_type: Annotated[str, Field(alias="detail-type")]
    time: datetime
    detail: Command


class Outcome(StrEnum):
    PAUSED = "paused"
    RESUMED = "resumed"
    SENT = "sent"
    NOT_SENT = "not_sent"  # Twilio refused it for good (recorded on the conversation)
    MALFORMED = "malformed"
    REFUSED = "refused"  # no such conversation of this tenant's


def run_command(event: dict[str, Any]) -> dict[str, Any]:
    """Carry out the event's command; what became of it."""
    try:
        command = CommandEvent.model_validate(event)
        if command.detail_type not in DETAIL_TYPES:
            raise ValueError(command.detail_type)
        if command.detail_type == REPLY and not command.detail.body.strip():
            raise ValueError("a reply without a body")
    except (ValidationError, ValueError):
        logger.warning(
            "Conversation command malformed, dropped", extra={"detail_type": event.get("detail-type")}
        )
        count("ConversationCommandsRefused")
        return {"outcome": Outcome.MALFORMED.value}
    logger.append_keys(account_sid=command.detail.account_sid, detail_type=command.detail_type)
    found = handoff.find_conversations(command.detail.conversation, command.detail.account_sid)
    if len(found) != 1:
        logger.warning("Conversation command refused", extra={"matches": len(found)})
        count("ConversationCommandsRefused")
        return {"outcome": Outcome.REFUSED.value}
    conversation = found[0]
    logger.append_keys(conversation_id=conversation.conversation_id)
    return {"conversation_id": conversation.conversation_id, **_carry_out(command, conversation)}


def _carry_out(command: CommandEvent, conversation: Conversation) -> dict[str, Any]:
    if command.detail_type == PAUSE:
        until = handoff.pause(conversation.conversation_id, BY_HELPDESK, command.detail.for_seconds)
        return {"outcome": Outcome.PAUSED.value, "until": until}
    if command.detail_type == RESUME:
        handoff.resume(conversation.conversation_id, BY_HELPDESK)
        return {"outcome": Outcome.RESUMED.value}
    return _send_persons_reply(command, conversation)


def _send_persons_reply(command: CommandEvent, conversation: Conversation) -> dict[str, Any]:
    """Out through the conversation's number once, then into its OpenAI conversation. (The
    Twilio and OpenAI SDKs are loaded here, not at a cold start that may only pause.)"""
    from functions.logic.shared import person_reply
    from functions.logic.states.send_reply import send_reply

    ref = person_reply.reply_ref(conversation.conversation_id, command.id, command.time)
    turn = person_reply.record_turn(ref, command.detail.body.strip())
    reply = ReplySummary(
        answered_by="person", reply_chars=len(turn.body), prompt_tokens=0, completion_tokens=0, total_tokens=0
    )
    try:
        sent = send_reply(SendInput(**ref.model_dump(), reply=reply))
    except TwilioPermanentError as error:
        logger.warning("Person's reply refused by Twilio", extra={"error_code": error.code})
        count("PersonRepliesNotSent")
        return {"outcome": Outcome.NOT_SENT.value, "error_code": error.code}
    item_id = person_reply.after_sent(conversation, ref)
    return {
        "outcome": Outcome.SENT.value,
        "turn_id": ref.assistant_turn_id,
        "message_sids": sent.message_sids,
        "in_openai_conversation": item_id is not None,
    }
