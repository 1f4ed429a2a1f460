"""Opening a conversation by hand (`python -m infra.conversations create`): for a deployment
that does not create conversations for unknown senders (AUTO_CREATE_CONVERSATIONS off, the
deployed default), the operator names who is to be answered.

The record is the one the webhook's auto-create writes (`conversations.create`: the same
keyed id, the same fields, the tenant's number as our side), so the person's next message
finds it by its addresses and is answered as if the webhook had created it. Opening is
idempotent: a conversation the tenant already has with the person on that number is left as
it is. It does not count against MAX_NEW_CONVERSATIONS_PER_HOUR_PER_TENANT, a ceiling on
senders a tenant's webhooks invent, not on the operator's own choices."""

from __future__ import annotations

import re
from dataclasses import dataclass

from functions import clock
from functions.intake.inbound import SENDER_ADDRESS, Channel
from functions.storage.models import Conversation
from functions.tenancy import conversations, tenants


class NotOpened(ValueError):
    """The conversation cannot be opened as asked; the message says why (and what to name)."""


@dataclass(frozen=True)
class Opened:
    conversation: Conversation
    created: bool  # False: it existed, and nothing changed


def channel_of(address: str) -> Channel:
    return Channel.WHATSAPP if address.startswith("whatsapp:") else Channel.SMS


def open_conversation(address: str, tenant: str | None = None, number: str | None = None) -> Opened:
    """The tenant's conversation between `address` (the person, as Twilio sends `From`) and
    one of the tenant's numbers, created unless it exists. The tenant and the number may be
    left out when only one fits: `number` names its owner, `tenant` its one number on the
    address's channel."""
    if not re.fullmatch(SENDER_ADDRESS, address):
        raise NotOpened(
            f"{address!r} is not an address as Twilio sends it: +15551234567, or whatsapp:+15551234567"
        )
    channel = channel_of(address)
    account_sid, ours = _tenant_and_number(channel, tenant, number)
    found = conversations.find(channel, address, ours, account_sid)
    if found is not None:
        return Opened(found, created=False)
    now = clock.iso(clock.now())
    conversation = conversations.create(channel, address, ours, now, account_sid)
    return Opened(conversation, created=conversation.created_at == now)


def _tenant_and_number(channel: Channel, tenant: str | None, number: str | None) -> tuple[str, str]:
    if number is not None:
        if channel_of(number) is not channel:
            raise NotOpened(f"{number} is not on the same channel ({channel}) as the address")
        owner = tenants.owner_of(number)
        if owner is None:
            raise NotOpened(f"{number} belongs to no tenant: python -m infra.tenants add")
        if tenant is not None and owner != tenant:
            raise NotOpened(f"{number} is not a number of tenant {tenant}: it is {owner}'s")
        return owner, number
    owners = [tenants.get(tenant)] if tenant is not None else tenants.all_tenants()
    if tenant is not None and owners[0] is None:
        raise NotOpened(f"{tenant} is not a tenant: python -m infra.tenants list")
    fitting = [(t.account_sid, n) for t in owners if t for n in t.numbers if channel_of(n) is channel]
    if len(fitting) == 1:
        return fitting[0]
    if not fitting:
        whose = f"tenant {tenant} has" if tenant else "no tenant has"
        raise NotOpened(f"{whose} a {channel} number: python -m infra.tenants add ... --number")
    if tenant is not None:
        raise NotOpened(
            f"tenant {tenant} has {len(fitting)} {channel} numbers ({', '.join(n for _, n in fitting)}): "
            "name ours with --number"
        )
    raise NotOpened(
        f"{len(fitting)} {channel} numbers of {len({sid for sid, _ in fitting})} tenants could be ours: "
        "name the tenant with --tenant, or the number with --number"
    )
