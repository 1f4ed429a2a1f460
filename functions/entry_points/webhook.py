"""Receiving a Twilio webhook: validate, find the conversation, stage, open the window."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from urllib.parse import urlsplit

from pydantic import ValidationError

from functions import clock
from functions.batching.rules.debounce import is_flush_keyword, splits_a_burst
from functions.batching.settings import BatchingSettings
from functions.batching.windows import count_in_window, open_batch_window, rules_for_new_window
from functions.guards import limits
from functions.handoff import pausing
from functions.intake import staged_messages
from functions.intake.admission import Refusal, Signature, admit
from functions.intake.inbound import Channel, InboundMessage, address_key, is_typed_text
from functions.intake.settings import IntakeSettings
from functions.intake.staged_messages import Staging
from functions.observability import count, count_about, logger
from functions.storage.models import Conversation
from functions.tenancy import conversations


class MessageOutcome(StrEnum):
    FORBIDDEN = "forbidden"  # not a tenant, not its number, or not its signature
    MALFORMED = "malformed"  # signed, but not a message we can stage
    UNKNOWN_SENDER = "unknown_sender"  # no conversation, and auto-create is off (deployment and tenant)
    TENANT_CEILING = "tenant_ceiling"  # no conversation, and the tenant's new ones are at its ceiling
    PROJECT_INACTIVE = "project_inactive"  # the conversation's project is not active
    CHANNEL_NOT_ALLOWED = "channel_not_allowed"  # not on this conversation's channels
    DUPLICATE = "duplicate"  # this MessageSid was staged before
    STAGED = "staged"

    @property
    def reply(self) -> str:
        """The configured answer to the sender for this outcome (empty: none)."""
        settings = IntakeSettings.get()
        return {
            MessageOutcome.UNKNOWN_SENDER: settings.unknown_sender_reply,
            MessageOutcome.PROJECT_INACTIVE: settings.inactive_project_reply,
            MessageOutcome.CHANNEL_NOT_ALLOWED: settings.channel_not_allowed_reply,
        }.get(self, "")


# At most one configured answer per sender in this time (claim_answer).
ANSWER_INTERVAL_SECONDS = 3600


@dataclass(frozen=True)
class WebhookResult:
    """What became of a webhook, and the TwiML answer to its sender (empty: none)."""

    outcome: MessageOutcome
    reply: str = ""


def receive_message(channel: Channel, form: dict[str, str], url: str, signature: Signature) -> WebhookResult:
    """The webhook's message, staged or refused; a refusal by the conversation rules gets
    its configured answer (answer_to)."""
    tenant = admit(form, url, signature)
    if isinstance(tenant, Refusal):
        # The path and the query's length only: a query may carry whatever a stranger sends.
        called = urlsplit(url)
        logger.warning(
            "Webhook refused",
            extra={"reason": tenant.value, "path": called.path, "query_chars": len(called.query)},
        )
        count("WebhooksRefused")
        return WebhookResult(MessageOutcome.FORBIDDEN)
    logger.append_keys(account_sid=tenant.account_sid)
    try:
        message = InboundMessage.from_form(form)
    except ValidationError as error:
        fields = invalid_fields(error)  # names only: a value may be personal data
        logger.warning("Webhook malformed, acknowledged and dropped", extra={"invalid_fields": fields})
        count("WebhooksMalformed")
        return WebhookResult(MessageOutcome.MALFORMED)
    logger.append_keys(message_sid=message.message_sid)

    received_at = clock.iso(clock.now())
    conversation = conversations.find(channel, message.from_address, message.to_address, tenant.account_sid)
    if conversation is None:
        if not (IntakeSettings.get().auto_create_conversations or tenant.auto_create_conversations):
            logger.warning("No conversation for this sender; message not staged")
            return answer_to(MessageOutcome.UNKNOWN_SENDER, message)
        key = address_key(channel, message.from_address, message.to_address)
        if not limits.admit_new_conversation(
            tenant.account_sid, conversations.new_conversation_id(tenant.account_sid, key)
        ):
            return WebhookResult(MessageOutcome.TENANT_CEILING)  # not staged: counted and alarmed
        conversation = conversations.create(
            channel,
            message.from_address,
            message.to_address,
            received_at,
            tenant.account_sid,
            message.message_sid,
        )
    logger.append_keys(conversation_id=conversation.conversation_id)
    if _staged_when_forgotten(conversation, channel, message):
        return WebhookResult(MessageOutcome.DUPLICATE)
    refused = _refused_by_conversation_rules(conversation, channel)
    if refused:
        logger.warning("Message refused by the conversation's rules", extra={"outcome": refused.value})
        return answer_to(refused, message)
    return WebhookResult(_stage(conversation, channel, message, received_at, is_typed_text(form)))


def _staged_when_forgotten(conversation: Conversation, channel: Channel, message: InboundMessage) -> bool:
    """Whether the message is a replay of one that a forgotten conversation of the person
    staged (their tombstones stay the duplicate ledger): the conversation create returned
    is that one (done), or the person's conversation of a later generation finds the
    MessageSid in an earlier one's (counted as a duplicate webhook). Costs nothing for a
    person never forgotten."""
    if not conversation.task_complete:
        if not conversation.generation:
            return False
        key = address_key(channel, message.from_address, message.to_address)
        tenant = conversation.tenant_account_sid or ""
        earlier = [conversations.new_conversation_id(tenant, key, g) for g in range(conversation.generation)]
        if not staged_messages.staged_in(earlier, message.message_sid):
            return False
    logger.info("Duplicate webhook: MessageSid of a forgotten conversation")
    count("DuplicateWebhooks")
    return True


def answer_to(outcome: MessageOutcome, message: InboundMessage) -> WebhookResult:
    """The configured answer for a refused message (MessageOutcome.reply), if any, except
    to an opt-out or opt-in keyword (answered by Twilio itself on SMS, and never to be
    answered with anything else), and at most one per sender an hour: the answer is
    recorded in the StagedMessages table, which the webhook writes already
    (staged_messages.claim_answer), before it is given."""
    reply = outcome.reply
    if not reply:
        return WebhookResult(outcome)
    if message.consent is not None:
        logger.info("Opt-out or opt-in keyword: no configured answer")
        return WebhookResult(outcome)
    now_ms = clock.epoch_ms(clock.now())
    if not staged_messages.claim_answer(
        message.account_sid, message.from_address, now_ms, ANSWER_INTERVAL_SECONDS
    ):
        logger.info("Configured answer given to this sender within the hour: none now")
        count("AnswersHeldBack")
        return WebhookResult(outcome)
    return WebhookResult(outcome, reply)


def _stage(
    conversation: Conversation,
    channel: Channel,
    message: InboundMessage,
    received_at: str,
    typed: bool = False,
) -> MessageOutcome:
    """Stage the message (once per MessageSid) and count it in its conversation's batch
    window, opening the window if none is open; typed text that asks for a person hands the
    conversation off first (functions/handoff/pausing.py)."""
    staging = staged_messages.stage(conversation.conversation_id, message, received_at)
    received_ms = clock.iso_to_ms(received_at)
    rules = rules_for_new_window(conversation, channel, received_ms)
    if staging is not Staging.DUPLICATE_DONE:
        pausing.on_keyword(conversation, rules, message, typed)
    if staging is Staging.STAGED:
        flush = is_flush_keyword(rules, message.body)
        opened = count_in_window(conversation.conversation_id, rules, received_ms, flush)
        last_reply_ms = clock.iso_to_ms(conversation.last_reply_at) if conversation.last_reply_at else None
        if opened and splits_a_burst(last_reply_ms, received_ms, BatchingSettings.get().split_seconds):
            # once per burst: by the fragment that opened its window
            count_about(conversation.conversation_id, "SplitBursts")
    elif staging is Staging.DUPLICATE_PENDING:
        # Its first delivery may have staged it and died before the window's run started.
        open_batch_window(conversation.conversation_id, rules, ensure_started=True)
    if staging is not Staging.STAGED:
        logger.info("Duplicate webhook: MessageSid already staged", extra={"staging": staging.value})
        count("DuplicateWebhooks")
        return MessageOutcome.DUPLICATE
    logger.info(
        "Message staged",
        extra={
            "message_type": message.message_type,
            "body_chars": len(message.body),
            "media": len(message.media),
        },
    )
    count("MessagesStaged")
    return MessageOutcome.STAGED


def _refused_by_conversation_rules(conversation: Conversation, channel: Channel) -> MessageOutcome | None:
    if conversation.project_status != "active":
        return MessageOutcome.PROJECT_INACTIVE
    if conversation.allowed_channels is not None and channel not in conversation.allowed_channels:
        return MessageOutcome.CHANNEL_NOT_ALLOWED
    return None


def invalid_fields(error: ValidationError) -> list[str]:
    """The fields found amiss, by their place in the message (`location.latitude`), or
    "message" for a rule of the whole message."""
    return list(dict.fromkeys(".".join(map(str, e["loc"])) or "message" for e in error.errors()))
