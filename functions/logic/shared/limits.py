"""Cost limits: what one conversation, one sender, one tenant, or all of them may cost per hour.

- AI calls per hour, per conversation, per sender (the user's address, across every
  conversation it has with one tenant's numbers), per tenant and for all tenants, and new
  conversations per hour per tenant (a conversation's first AI call: it has no OpenAI
  conversation yet): counted before each call to OpenAI, in one transaction on the
  UsageCounters table (hourly counters, removed by TTL). When a counter is full, no AI
  call is made: the assistant turn is stored empty with `limited` set to the counter that
  was full, the `CostLimitReached` metric is emitted (and `TenantCeilingReached`, by
  Tenant, or `AICallsCeilingReached` for a tenant's or everyone's ceiling), and the batch
  is recorded as `limited` (answered without a reply; its messages are not retried).
- Reply parts per batch: a reply is cut to what fits in that many messages; the turn
  records `limited = "reply_parts"` and `ReplyPartsCapped` is emitted.

0 turns a limit off. The defaults (60 and 120 AI calls an hour, 10 parts of 1,600
characters) are far above what a person typing ever needs; a tenant's (1,000 AI calls and
200 new conversations an hour) and everyone's (10,000) bound what invented senders cost."""

from __future__ import annotations

from enum import StrEnum

from functions.config import get_settings
from functions.contract import BatchRef
from functions.dal import turns, usage_counters
from functions.dal.models import Conversation, Turn
from functions.logic.rules import clock
from functions.logic.rules.replies import split_reply
from functions.observability import count, count_by_tenant, logger

_HOUR = 3600


class Limit(StrEnum):
    CONVERSATION_AI_CALLS = "ai_calls_per_hour_per_conversation"
    SENDER_AI_CALLS = "ai_calls_per_hour_per_sender"
    TENANT_AI_CALLS = "ai_calls_per_hour_per_tenant"
    NEW_CONVERSATIONS = "new_conversations_per_hour_per_tenant"
    ALL_AI_CALLS = "ai_calls_per_hour"
    REPLY_PARTS = "reply_parts"
    # Not a cost limit: the user opted out (functions/logic/shared/consent.py); answered the same way.
    OPTED_OUT = "opted_out"


def admit_ai_call(conversation: Conversation) -> Limit | None:
    """Count one AI call for the conversation, its sender, its tenant and everyone (and
    a new conversation for its tenant, on its first AI call), unless one of them has
    reached its hourly limit: then nothing is counted and that limit is returned."""
    now = int(clock.now().timestamp())
    hour = now // _HOUR
    keys = _counters(conversation, hour)
    counters = {key: limit for key, (_, limit) in keys.items() if limit > 0}
    full = usage_counters.count_within(counters, expires_at=(hour + 2) * _HOUR)
    if full is None:
        return None
    reached = keys[full][0]
    logger.warning("Cost limit reached: no AI call for this batch", extra={"limit": reached.value})
    count("CostLimitReached")
    if reached in (Limit.TENANT_AI_CALLS, Limit.NEW_CONVERSATIONS):
        count_by_tenant("TenantCeilingReached", conversation.tenant_account_sid or "")
    elif reached is Limit.ALL_AI_CALLS:
        count("AICallsCeilingReached")
    return reached


def _counters(conversation: Conversation, hour: int) -> dict[str, tuple[Limit, int]]:
    """The hourly counters one AI call of the conversation counts on: key -> (limit, its maximum)."""
    settings = get_settings()
    tenant = conversation.tenant_account_sid or ""
    keys = {
        f"conversation#{conversation.conversation_id}#{hour}": (
            Limit.CONVERSATION_AI_CALLS,
            settings.max_ai_calls_per_hour_per_conversation,
        ),
        # Per tenant: another tenant writing as this sender cannot use up its calls here.
        f"sender#{tenant}#{conversation.user_address}#{hour}": (
            Limit.SENDER_AI_CALLS,
            settings.max_ai_calls_per_hour_per_sender,
        ),
        # A tenant signs its own webhooks, so it chooses `From`: its senders may be invented.
        f"tenant#{tenant}#{hour}": (Limit.TENANT_AI_CALLS, settings.max_ai_calls_per_hour_per_tenant),
        f"all#{hour}": (Limit.ALL_AI_CALLS, settings.max_ai_calls_per_hour),
    }
    if not conversation.openai_conversation_id:  # its first AI call: a new conversation
        keys[f"new_conversations#{tenant}#{hour}"] = (
            Limit.NEW_CONVERSATIONS,
            settings.max_new_conversations_per_hour_per_tenant,
        )
    return keys


def store_limited_turn(ref: BatchRef, limit: Limit, body: str = "") -> Turn:
    """The assistant turn of a batch that a limit stopped: status `limited`, empty (the
    send step then sends nothing) or with the one message to send instead of a reply (an
    opt-out's confirmation); the batch is recorded as limited (recording.py)."""
    turn = Turn(
        conversation_id=ref.conversation_id,
        turn_id=ref.assistant_turn_id,
        role="assistant",
        status="limited",
        window_id=ref.window_id,
        execution_name=ref.execution_name,
        limited=limit.value,
        body=body,
        created_at=clock.iso(clock.now()),
    )
    turns.put(turn)
    return turn


def cap_reply_parts(text: str, max_parts: int | None = None) -> tuple[str, bool]:
    """The reply cut to the parts a batch may send (`MAX_REPLY_PARTS_PER_BATCH`), and
    whether it was cut. The parts are those `split_reply` makes, so the send step sends
    exactly these."""
    limit = get_settings().max_reply_parts_per_batch if max_parts is None else max_parts
    parts = split_reply(text)
    if limit <= 0 or len(parts) <= limit:
        return text, False
    # The parts are consecutive pieces of the text: keep it up to the end of the last one
    # allowed (split again, that prefix gives the same parts, or fewer).
    kept, end = text.strip(), 0
    for part in parts[:limit]:
        end = kept.index(part, end) + len(part)
    count("ReplyPartsCapped")
    return kept[:end], True
