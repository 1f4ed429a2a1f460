"""Forgetting a person (`python -m infra.conversations forget`): each of their conversations
is erased wherever this service keeps or put what they wrote and were answered.

One run, for one conversation:
1. It begins only while no run holds the conversation (no processing lock held, no batch
   window open), in one transaction that also marks it done (`task_complete`): from then on
   no webhook finds it, and a message from the person opens a new conversation, without
   history (conversations.create). A conversation a run holds is refused, nothing done.
2. At OpenAI, with the key its replies were asked with (the tenant's or the deployment's:
   functions/tenancy/secrets.py): every item of its OpenAI conversation, then the
   conversation (deleting it does not delete its items), then every stored response asked
   for it.
3. At Twilio, with the tenant's credentials: the media the person sent, then every message
   they sent and every message sent to them (reply parts, resends, templates, fallbacks).
   A message Twilio is not done with (20009) is left for a later run.
4. In our tables: turns keep only their figures, staged messages become tombstones (the
   duplicate ledger), tool calls and due resends are deleted, and so are the items kept
   under the person's address (functions/personal_data/forgetting_store.py).
5. Once nothing is left, and no run wrote to the conversation meanwhile, its record keeps
   only the forget's own (times, runs, counts: no address, no id of the person's).
A step cut short (a vendor's 5xx, a timeout, a refused key) leaves what it did not do to the
next run, which finds it again (the ids stay in the figures of step 4): `forget` is
idempotent, a run after the end finds nothing of the person."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import timedelta

from aws_lambda_powertools.utilities.parameters.exceptions import GetParameterError

from functions import clock
from functions.answer import openai_responses, turns
from functions.delivery import twilio_messages
from functions.errors import (
    AIPermanentError,
    AIRetryableError,
    SecretOutsideTenant,
    TwilioPermanentError,
    TwilioRetryableError,
)
from functions.guards.limits import sender_counter_key
from functions.personal_data import forgetting_store
from functions.personal_data.forgetting_store import Busy
from functions.personal_data.rules.person_data import VendorIds, vendor_ids
from functions.personal_data.settings import RetentionSettings
from functions.storage.models import Conversation
from functions.tenancy import conversations, secrets

# The time OpenAI's deletions of one conversation may take, in all (each request's timeout is
# what is left of it).
OPENAI_SECONDS = 600
# The sender's usage counters deleted (functions/guards/limits.py): the hours of the last week, since TTL
# deletes an expired item only within days.
COUNTER_HOURS = 7 * 24
# Why a vendor's step stopped: the errors a forget reports and leaves to its next run.
VENDOR_ERRORS = (
    AIRetryableError,
    AIPermanentError,
    TwilioRetryableError,
    TwilioPermanentError,
    SecretOutsideTenant,
    GetParameterError,
)


@dataclass
class Forget:
    """What one run did for one conversation (counts), what it left, and why."""

    conversation_id: str
    busy: Busy | None = None  # refused: a run holds it
    done: Counter[str] = field(default_factory=Counter)
    left: Counter[str] = field(default_factory=Counter)
    problems: list[str] = field(default_factory=list)
    finished: bool = False


def forget(conversation: Conversation) -> Forget:
    """Erase what the conversation holds of its person, as far as this run can (see above)."""
    cid = conversation.conversation_id
    now = clock.now()
    busy = forgetting_store.begin(cid, clock.iso(now), int(now.timestamp()))
    if busy is not None:
        return Forget(cid, busy=busy)
    conversation = conversations.require(cid)
    started = conversation.forget_started_at or clock.iso(now)
    outcome = Forget(cid)
    staged = forgetting_store.staged_messages(cid)
    ids = vendor_ids(staged, turns.list_of(cid), conversation.openai_conversation_id)
    _at_openai(conversation, ids, outcome)
    _at_twilio(conversation, ids, outcome)
    _in_tables(conversation, outcome)
    if forgetting_store.busy(cid, int(clock.now().timestamp())) or forgetting_store.held_texts(cid):
        outcome.left["texts written meanwhile"] += 1
        outcome.problems.append("a run wrote to the conversation while it was being forgotten")
    forgetting_store.record_counts(cid, started, dict(Counter(conversation.forget_counts) + outcome.done))
    if not +outcome.left:
        forgetting_store.finish(cid, started, clock.iso(clock.now()))
        outcome.finished = True
    return outcome


def _at_openai(conversation: Conversation, ids: VendorIds, outcome: Forget) -> None:
    responses = list(ids.openai_responses)
    gone_conversation = ids.openai_conversation is None
    if gone_conversation and not responses:
        return
    try:
        client = openai_responses.client_for(secrets.openai_api_key_for(conversation))
        budget = openai_responses.Budget(OPENAI_SECONDS)
        if ids.openai_conversation is not None:
            items = openai_responses.conversation_item_ids(client, ids.openai_conversation, budget) or []
            openai_responses.delete_items(client, ids.openai_conversation, items, budget)
            outcome.done["OpenAI conversation items"] += len(items)
            openai_responses.delete_conversation(client, ids.openai_conversation, budget)
            outcome.done["OpenAI conversations"] += 1
            gone_conversation = True
        while responses:
            openai_responses.delete_response(client, responses[0], budget)
            outcome.done["OpenAI responses"] += 1
            responses.pop(0)
    except VENDOR_ERRORS as error:
        outcome.left["OpenAI conversations"] += 0 if gone_conversation else 1
        outcome.left["OpenAI responses"] += len(responses)
        outcome.left = +outcome.left
        outcome.problems.append(f"OpenAI: {error}")


def _at_twilio(conversation: Conversation, ids: VendorIds, outcome: Forget) -> None:
    media, messages = list(ids.twilio_media), list(ids.twilio_messages)
    if not media and not messages:
        return
    not_yet = 0
    try:
        client = twilio_messages.client_for(secrets.twilio_credentials_for(conversation))
        while media:
            if twilio_messages.delete_media(client, *media[0]):
                outcome.done["Twilio media"] += 1
            media.pop(0)  # one Twilio is not done with goes with its message
        while messages:
            if twilio_messages.delete_message(client, messages[0]):
                outcome.done["Twilio messages"] += 1
            else:
                not_yet += 1
            messages.pop(0)
    except VENDOR_ERRORS as error:
        outcome.problems.append(f"Twilio: {error}")
    outcome.left["Twilio media"] += len(media)
    outcome.left["Twilio messages"] += len(messages) + not_yet
    outcome.left = +outcome.left
    if not_yet:
        outcome.problems.append(
            f"Twilio: {not_yet} message(s) not complete yet (20009): try again in a few minutes"
        )


def _in_tables(conversation: Conversation, outcome: Forget) -> None:
    cid, now = conversation.conversation_id, clock.now()
    at, tombstones_until = (
        clock.iso(now),
        int(now.timestamp()) + RetentionSettings.get().answered_message_retention_seconds,
    )
    outcome.done["turns"] += forgetting_store.erase_turns(cid, at)
    outcome.done["staged messages"] += forgetting_store.erase_staged(cid, at, tombstones_until)
    outcome.done["tool calls"] += forgetting_store.delete_tool_calls(cid)
    outcome.done["due resends"] += forgetting_store.delete_due_resends(cid)
    if conversation.tenant_account_sid and conversation.user_address:
        hour = int(now.timestamp()) // int(timedelta(hours=1).total_seconds())
        keys = [
            sender_counter_key(conversation.tenant_account_sid, conversation.user_address, hour - n)
            for n in range(COUNTER_HOURS + 1)
        ]
        forgetting_store.delete_by_address(conversation.tenant_account_sid, conversation.user_address, keys)
