"""A person's conversations, and their data given back (`python -m infra.conversations
export`): every conversation the person's address has with a tenant's numbers, and their
turns (what they wrote, what they were answered, when, what Twilio reported of each message
sent) with the messages not answered yet, from our tables alone (docs/personal-data.md)."""

from __future__ import annotations

from typing import Any

from functions import clock
from functions.answer import turns
from functions.personal_data import forgetting_store
from functions.personal_data.rules.person_data import exported_message, exported_turn
from functions.storage.models import Conversation
from functions.tenancy import conversations, tenants
from functions.tenancy.opening import channel_of


def conversations_of(reference: str, tenant: str | None = None) -> list[Conversation]:
    """The conversations that hold `reference`: a conversation id, or the person's address as
    Twilio sends it (`whatsapp:+15551234567`, `+15551234567`) with any number a tenant has,
    done ones and ones being forgotten too, oldest first; only `tenant`'s when named. A
    number no tenant has any more is not searched: name its conversations by id."""
    found = conversations.get(reference)
    if found is not None:
        return [found] if tenant is None or found.tenant_account_sid == tenant else []
    channel = channel_of(reference)
    numbers = sorted({n for t in tenants.all_tenants() for n in t.numbers if channel_of(n) is channel})
    held = [c for n in numbers for c in conversations.of_address(channel, reference, n)]
    return sorted(
        (c for c in held if tenant is None or c.tenant_account_sid == tenant),
        key=lambda c: (c.created_at, c.conversation_id),
    )


def export(address: str, found: list[Conversation]) -> dict[str, Any]:
    """The person's data, as JSON: each conversation and its turns, oldest first."""
    return {
        "address": address,
        "exported_at": clock.iso(clock.now()),
        "conversations": [_conversation(c) for c in found],
    }


def _conversation(conversation: Conversation) -> dict[str, Any]:
    waiting = [m for m in forgetting_store.staged_messages(conversation.conversation_id) if m.received_at]
    return {
        "conversation_id": conversation.conversation_id,
        "tenant": conversation.tenant_account_sid,
        "channel": conversation.channel.value,
        "with": conversation.our_address,
        "created_at": conversation.created_at,
        "opted_out": conversation.opted_out,
        **(
            {"being_forgotten_since": conversation.forget_started_at}
            if conversation.forget_started_at
            else {}
        ),
        "turns": [exported_turn(t) for t in turns.list_of(conversation.conversation_id)],
        "not_answered": [exported_message(m) for m in waiting if m.answered_in is None],
    }
