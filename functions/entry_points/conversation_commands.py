"""A helpdesk's commands, as events on the service's EventBridge bus: `conversation.pause`,
`conversation.resume` and `conversation.reply` (a person's reply), delivered by a rule on
the bus to this function (infra/constructs/conversation_commands.py): the helpdesk needs
PutEvents on the bus, an IAM permission, and no endpoint of its own.

The event's `source` is `helpdesk.<AccountSid>`, the tenant's own, and its `detail`:
    {"AccountSid": "AC...",            the tenant whose conversation it is
     "conversation": "c..." | "whatsapp:+15551234567",   its id, or the person's address
     "for_seconds": 7200,              conversation.pause: resume by itself then (optional)
     "body": "...",                    conversation.reply: the person's text
     "template": true}                 conversation.reply: outside WhatsApp's 24 hours, send
                                       the configured template instead (optional; else not sent)

A command counts only from its tenant's own source: any principal allowed PutEvents writes
the `source` and `detail` it likes, so the bus's policy lets a principal put `conversation.*`
only with `source` `helpdesk.${aws:PrincipalTag/tenant}` (infra/constructs/event_bus.py),
and this function checks it again, for whatever invokes it directly. A command from another
source, or naming a conversation its AccountSid does not own, or a closed one, is refused as
one naming no conversation (a tenant must not learn who writes to another), logged and
counted (`ConversationCommandsRefused`), never retried. Commands are limited per hour per
conversation and per tenant (limits.admit_command). A person's reply keeps the rules the
assistant's replies keep: none to a conversation that opted out, none longer than
MAX_REPLY_PARTS_PER_BATCH parts (or, on SMS, MAX_SMS_SEGMENTS_PER_REPLY segments), no
template unless asked; it is timed when its event is first received, never by the event's
`time`, which its sender writes. A reply goes out once however often the event is
delivered: the event's id names its turn (functions/handoff/person_reply.py). A transient
failure (Twilio, OpenAI) raises, so that Lambda's asynchronous retries deliver it again."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from functions.contract import ReplySummary, SendInput
from functions.delivery.rules import sms_segments
from functions.delivery.rules.replies import split_reply
from functions.errors import TwilioPermanentError
from functions.guards import limits
from functions.guards.settings import GuardSettings
from functions.handoff import pausing
from functions.handoff.rules.pause import BY_HELPDESK, MAX_PAUSE
from functions.intake.inbound import Channel
from functions.observability import count, logger
from functions.registry import CONVERSATION_COMMANDS
from functions.storage.models import Conversation

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
    template: bool = False


class CommandEvent(BaseModel):
    """EventBridge's event, as a rule delivers it to a Lambda function."""

    model_config = ConfigDict(
        extra="ignore", populate_by_name=True, hide_input_in_errors=True, defer_build=True
    )

    id: Annotated[str, Field(min_length=1, max_length=200)]
    source: str
    detail_type: Annotated[str, Field(alias="detail-type")]
    detail: Command


class Outcome(StrEnum):
    PAUSED = "paused"
    RESUMED = "resumed"
    SENT = "sent"
    NOT_SENT = "not_sent"  # Twilio refused it for good (recorded on the conversation)
    TEMPLATE_SENT = "template_sent"  # outside WhatsApp's 24 hours, the template, as asked
    MALFORMED = "malformed"
    REFUSED = "refused"  # no such open conversation of this tenant's, or another source
    LIMITED = "limited"  # past a command limit (limits.admit_command)
    OPTED_OUT = "opted_out"  # the person opted out: no message
    TOO_LONG = "too_long"  # more parts or SMS segments than a reply may have


def helpdesk_source(account_sid: str) -> str:
    """The only `source` a tenant's commands count from."""
    return f"helpdesk.{account_sid}"


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
    found = pausing.find_conversations(command.detail.conversation, command.detail.account_sid)
    from_its_tenant = command.source == helpdesk_source(command.detail.account_sid)
    if not from_its_tenant or len(found) != 1 or found[0].task_complete:
        logger.warning(
            "Conversation command refused", extra={"matches": len(found), "from_its_tenant": from_its_tenant}
        )
        count("ConversationCommandsRefused")
        return {"outcome": Outcome.REFUSED.value}
    conversation = found[0]
    logger.append_keys(conversation_id=conversation.conversation_id)
    return {"conversation_id": conversation.conversation_id, **_carry_out(command, conversation)}


def _carry_out(command: CommandEvent, conversation: Conversation) -> dict[str, Any]:
    if command.detail_type == REPLY and (refused := _breaks_a_rule(command.detail.body, conversation)):
        return {"outcome": refused.value}
    admission = limits.admit_command(conversation, command.id)
    if admission.refused_by is not None:
        return {"outcome": Outcome.LIMITED.value, "limit": admission.refused_by.value}
    if command.detail_type == PAUSE:
        until = pausing.pause(conversation.conversation_id, BY_HELPDESK, command.detail.for_seconds)
        return {"outcome": Outcome.PAUSED.value, "until": until}
    if command.detail_type == RESUME:
        pausing.resume(conversation.conversation_id, BY_HELPDESK)
        return {"outcome": Outcome.RESUMED.value}
    return _send_persons_reply(command, conversation, admission.received_at)


def _breaks_a_rule(body: str, conversation: Conversation) -> Outcome | None:
    """What a person's reply may not be sent for, as the assistant's could not: the
    person's opt-out, or more parts (SMS segments) than a reply may have."""
    settings = GuardSettings.get()
    if conversation.opted_out:
        logger.warning("Person's reply refused: the conversation opted out")
        count("PersonRepliesRefused")
        return Outcome.OPTED_OUT
    max_parts, max_segments = settings.max_reply_parts_per_batch, settings.max_sms_segments_per_reply
    too_many_parts = 0 < max_parts < len(split_reply(body.strip()))
    sms = conversation.channel is Channel.SMS
    too_many_segments = sms and 0 < max_segments < sms_segments.reply_segments(body.strip())
    if too_many_parts or too_many_segments:
        logger.warning("Person's reply refused: longer than a reply may be")
        count("PersonRepliesRefused")
        return Outcome.TOO_LONG
    return None


def _send_persons_reply(
    command: CommandEvent, conversation: Conversation, received_at: datetime
) -> dict[str, Any]:
    """Out through the conversation's number once, then into its OpenAI conversation;
    outside WhatsApp's 24 hours, the template instead when the command asks for it. (The
    Twilio and OpenAI SDKs are loaded here, not at a cold start that may only pause.)"""
    from functions.delivery import reply as outbound
    from functions.delivery import template as whatsapp_template
    from functions.delivery import twilio_messages
    from functions.handoff import person_reply

    ref = person_reply.reply_ref(conversation.conversation_id, command.id, received_at)
    turn = person_reply.record_turn(ref, command.detail.body.strip())
    reply = ReplySummary(
        answered_by="person", reply_chars=len(turn.body), prompt_tokens=0, completion_tokens=0, total_tokens=0
    )
    try:
        sent = outbound.send_reply(SendInput(**ref.model_dump(), reply=reply))
    except TwilioPermanentError as error:
        logger.warning("Person's reply refused by Twilio", extra={"error_code": error.code})
        template = None
        if error.code == twilio_messages.WHATSAPP_WINDOW_CLOSED and command.detail.template:
            template = whatsapp_template.send_template_once(
                conversation, ref.window_id, owner=f"send:{ref.execution_name}"
            )
        if template is not None:
            return {
                "outcome": Outcome.TEMPLATE_SENT.value,
                "turn_id": ref.assistant_turn_id,
                "message_sids": [template],
            }
        count("PersonRepliesNotSent")
        return {"outcome": Outcome.NOT_SENT.value, "error_code": error.code}
    item_id = person_reply.after_sent(conversation, ref)
    return {
        "outcome": Outcome.SENT.value,
        "turn_id": ref.assistant_turn_id,
        "message_sids": sent.message_sids,
        "in_openai_conversation": item_id is not None,
    }
