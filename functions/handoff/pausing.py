"""Hand-off to a person: a conversation paused for a person gets its bursts staged, batched
and recorded as always, but no AI call and no reply; each such batch is announced as
`batch.handed_off` (Record Turns And Release Lock) so that a helpdesk can show it, and a
person's replies go out through the conversation's own number (person_reply.py).

A conversation is paused by an operator (`python -m infra.conversations pause`), by a
helpdesk's `conversation.pause` event, or by the person's own words: a typed message that
holds one of the rules' `handoff_keywords` (HANDOFF_KEYWORDS) pauses it, and the batch that
holds that message is answered with `handoff_reply` (HANDOFF_REPLY) only, once: the
assistant turn's body, limited `handed_off`, which Send Reply sends as it sends a reply.
A pause ends at its `paused_until` (a pause for a time), or when resumed."""

from __future__ import annotations

from functions import clock
from functions.batching.rules.burst import BatchingRules
from functions.contract import GenerateInput
from functions.guards import limits
from functions.handoff.rules import pause as handoff_rules
from functions.intake.inbound import Channel, InboundMessage
from functions.observability import count, logger
from functions.storage.models import Conversation, Turn
from functions.tenancy import conversations, tenants


def pause(conversation_id: str, by: str, seconds: float | None = None) -> str | None:
    """Hand the conversation off to a person, for `seconds` (None: until resumed); when
    the pause ends (None: no end)."""
    now = clock.now()
    until = handoff_rules.until(now, seconds)
    conversations.pause(conversation_id, clock.iso(now), by, until)
    logger.info("Conversation handed off to a person", extra={"by": by, "until": until})
    count("HandedOff")
    return until


def resume(conversation_id: str, by: str) -> None:
    conversations.resume(conversation_id)
    logger.info("Conversation resumed: the assistant answers again", extra={"by": by})


def on_keyword(
    conversation: Conversation, rules: BatchingRules, message: InboundMessage, typed: bool
) -> bool:
    """A typed message that asks for a person pauses its conversation, unless it is paused
    already (the webhook calls this once the message is staged). Whether it paused it."""
    if not handoff_rules.asks_for_a_person(rules, message.body, typed):
        return False
    now = clock.now()
    if handoff_rules.is_paused(conversation, now):
        return False
    paused = conversations.pause(
        conversation.conversation_id, clock.iso(now), handoff_rules.BY_KEYWORD, None, message.message_sid
    )
    if paused:
        logger.info("The person asked for a person: conversation handed off")
        count("HandedOff")
    return paused


def waits_for_a_person(conversation: Conversation) -> bool:
    return handoff_rules.is_paused(conversation, clock.now())


def handoff_turn(task: GenerateInput, conversation: Conversation) -> Turn | None:
    """The assistant turn of a batch of a conversation handed off to a person: the batch
    that asked for a person is told so (HANDOFF_REPLY, limited `handed_off`, sent once by
    Send Reply); any other gets none (None: no reply)."""
    reply = task.rules.handoff_reply.strip()
    if not reply or not handoff_rules.is_the_asking_batch(conversation, task.batch.message_sids):
        logger.info("Handed off to a person: batch recorded, not answered")
        return None
    return limits.store_limited_turn(task, limits.Limit.HANDED_OFF, body=reply)


def find_conversations(reference: str, tenant: str | None = None) -> list[Conversation]:
    """The open conversations that `reference` names: a conversation id, or the person's
    address as Twilio sends it (`whatsapp:+15551234567`, `+15551234567`) with any number
    of the tenant (every tenant's when None). Another tenant's are never found."""
    found = conversations.get(reference)
    if found is not None:
        return [found] if tenant is None or found.tenant_account_sid == tenant else []
    channel = Channel.WHATSAPP if reference.startswith("whatsapp:") else Channel.SMS
    owners = [t for t in [tenants.get(tenant)] if t] if tenant else tenants.all_tenants()
    matches = []
    for owner in owners:
        for number in owner.numbers:
            if number.startswith("whatsapp:") == (channel is Channel.WHATSAPP):
                match = conversations.find(channel, reference, number, owner.account_sid)
                matches += [match] if match else []
    return matches
