"""A person's reply, sent from a helpdesk (`conversation.reply`): an assistant turn of its
own, `written_by: person`, sent through the conversation's own number by Send Reply's code
(functions/delivery/reply.py), once (functions/delivery/send_once.py: a redelivered event,
or a retried invocation, finds its parts sent), then added to the chat's OpenAI
conversation as an assistant message, once, so that the model sees what the person said
when it answers again.

The turn has a window id of its own (`person_window_id`): it sorts by time among the
conversation's turns, and every delivery of the same event names the same turn; the status
callbacks of its parts are recorded on it as a reply's are."""

from __future__ import annotations

import hashlib
from datetime import datetime

from functions import clock
from functions.answer import openai_responses, turns
from functions.answer.openai_responses import Budget
from functions.answer.settings import OpenAISettings
from functions.contract import BatchRef
from functions.handoff import openai_assistant_items
from functions.handoff.rules.pause import BY_HELPDESK, PERSON
from functions.observability import count, logger
from functions.storage.models import Conversation, Turn
from functions.tenancy import conversations, secrets


def person_window_id(sent_at: datetime, key: str) -> str:
    """Sortable by the time the person sent it, the same for every delivery of `key`."""
    return f"{clock.epoch_ms(sent_at):013d}-p{hashlib.sha256(key.encode()).hexdigest()[:6]}"


def reply_ref(conversation_id: str, key: str, sent_at: datetime) -> BatchRef:
    window_id = person_window_id(sent_at, key)
    return BatchRef(
        conversation_id=conversation_id, window_id=window_id, execution_name=f"{PERSON}-{window_id}"
    )


def record_turn(ref: BatchRef, body: str) -> Turn:
    """The reply's assistant turn, written once (a redelivery finds the first one's)."""
    return turns.put_once(Turn.assistant(ref, status="generated", body=body, written_by=PERSON))


def after_sent(conversation: Conversation, ref: BatchRef) -> str | None:
    """Mark the reply sent and add it to the OpenAI conversation; its item id (None when
    none of its parts went out: the model must not see what the person never got)."""
    turn = turns.require(ref.conversation_id, ref.assistant_turn_id)
    if not turn.message_sids:
        logger.warning("Person's reply not sent: not added to the OpenAI conversation")
        return None
    if turn.status != "sent":
        turns.record_person_reply_sent(ref.conversation_id, ref.assistant_turn_id, clock.iso(clock.now()))
        count("PersonReplies")
    logger.info("Person's reply sent", extra={"by": BY_HELPDESK, "message_sids": turn.message_sids})
    return _add_to_openai_once(conversation, ref, turn.body)


def _add_to_openai_once(conversation: Conversation, ref: BatchRef, body: str) -> str:
    """The reply as the OpenAI conversation's newest assistant message, added once: an
    attempt that finds an earlier one began looks for it among the newest items first."""
    now = clock.iso(clock.now())
    added, since = turns.claim_openai_item(ref.conversation_id, ref.assistant_turn_id, now)
    if added:
        return added[0]
    client = openai_responses.client_for(secrets.openai_api_key_for(conversation))
    budget = Budget(OpenAISettings.get().openai_timeout_seconds)
    openai_conversation = conversation.openai_conversation_id
    if not openai_conversation:  # handed off before the assistant ever answered
        openai_conversation = openai_responses.start_conversation(
            client, conversation.conversation_id, budget
        )
        conversations.set_openai_conversation(conversation.conversation_id, openai_conversation)
    item_id = None
    if since != now:  # an earlier attempt may have added it, and lost the answer
        newest = openai_responses.newest_items(client, openai_conversation, budget)
        item_id = next((i.id for i in newest if i.role == "assistant" and i.text == body), None)
    item_id = item_id or openai_assistant_items.add_assistant_message(
        client, openai_conversation, body, budget
    )
    turns.record_openai_item(ref.conversation_id, ref.assistant_turn_id, item_id)
    return item_id
