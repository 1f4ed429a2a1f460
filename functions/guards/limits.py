"""Cost limits: what one conversation, one sender, one tenant, or all of them may cost per hour.

- New conversations per hour per tenant (MAX_NEW_CONVERSATIONS_PER_HOUR_PER_TENANT, when
  set): counted by the webhook before it creates a conversation for a sender it does not
  know (admit_new_conversation), so that past the ceiling an invented sender costs neither
  a conversation item nor a run; the message is acknowledged and not staged, and the
  metrics below are emitted.
- AI calls per hour, per conversation, per sender (the user's address, across every
  conversation it has with one tenant's numbers), per tenant and for all tenants; tokens per
  hour (as OpenAI reports each response's usage) per tenant and for all tenants. Counted on
  the UsageCounters table (hourly counters, removed by TTL;
  a tenant's and everyone's spread over shards: functions/guards/usage_counters.py) before each
  batch's AI call, in two transactions: first the tenant's own counters (its conversation's,
  its sender's, its shards), then everyone's shards, so that a tenant at its ceiling stops
  before it writes a counter that other tenants share. When a counter is full, no AI call is
  made: the assistant turn is stored empty with `limited` set to the counter that was full,
  the `CostLimitReached` metric is emitted (and `TenantCeilingReached`, by Tenant, for a
  tenant's ceiling, `AICallsCeilingReached` for everyone's calls, `TokenCeilingReached` for
  tokens), and the batch is recorded as `limited` (answered without a reply; its messages
  are not retried). (A call that the tenant's counters admitted and everyone's refused stays
  counted on the tenant's: no call is admitted for anyone until the hour ends, so it never
  stops one that would have been made.)
- Each is counted once: a count leaves its mark on the batch's first staged message, beside
  the batch's AI request, and a retry of Generate Reply that finds the mark counts nothing.
  What else is billed counts as what it is, once, without being refused (the batch was
  admitted): a request asked again without the batch's images or of the fallback model,
  each voice note's transcription, and each response's tokens once it is done. A counter
  these pass stops the next batch.
- Reply parts per batch: a reply is cut to what fits in that many messages; the turn
  records `limited = "reply_parts"` and `ReplyPartsCapped` is emitted.

0 turns a limit off. The defaults (60 and 120 AI calls an hour, 10 parts of 1,600
characters) are far above what a person typing ever needs; a tenant's and everyone's
tokens an hour (10,000,000,000 each) admit 1,000 messages a second at the context budget
(docs/capacity.md) and stop a runaway; a tenant's and everyone's AI calls and a tenant's new
conversations an hour are off by default (the token ceilings bound what calls cost, and a
fixed count of new conversations silenced a campaign's later customers). Every batch a limit
stops is a metric and an alarm, and, with LIMITED_REPLY set, a notice to the person."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import TYPE_CHECKING

from functions import clock
from functions.answer import turns
from functions.contract import BatchRef
from functions.delivery.rules.replies import split_reply
from functions.guards import usage_counters
from functions.guards.settings import GuardSettings
from functions.guards.usage_counters import Count, Counter, Mark
from functions.handoff.rules import pause as handoff_rules
from functions.observability import count, count_by_tenant, logger
from functions.storage.models import Conversation, Turn
from functions.tenancy import conversations

if TYPE_CHECKING:
    from functions.answer.ai_requests import BatchRequest

_HOUR = 3600


class Limit(StrEnum):
    CONVERSATION_AI_CALLS = "ai_calls_per_hour_per_conversation"
    SENDER_AI_CALLS = "ai_calls_per_hour_per_sender"
    TENANT_AI_CALLS = "ai_calls_per_hour_per_tenant"
    NEW_CONVERSATIONS = "new_conversations_per_hour_per_tenant"
    ALL_AI_CALLS = "ai_calls_per_hour"
    TENANT_AI_TOKENS = "ai_tokens_per_hour_per_tenant"
    ALL_AI_TOKENS = "ai_tokens_per_hour"
    REPLY_PARTS = "reply_parts"
    # Not a cost limit: the user opted out (functions/guards/consent.py); answered the same way.
    OPTED_OUT = "opted_out"
    # Nor this: the person asked for a person (functions/handoff/pausing.py).
    HANDED_OFF = handoff_rules.HANDED_OFF
    # A helpdesk's commands (functions/entry_points/conversation_commands.py).
    CONVERSATION_COMMANDS = "commands_per_hour_per_conversation"
    TENANT_COMMANDS = "commands_per_hour_per_tenant"


_TENANT_CEILINGS = (Limit.TENANT_AI_CALLS, Limit.NEW_CONVERSATIONS, Limit.TENANT_AI_TOKENS)
_TOKEN_CEILINGS = (Limit.TENANT_AI_TOKENS, Limit.ALL_AI_TOKENS)


def admit_ai_call(conversation: Conversation, message_sids: list[str]) -> Limit | None:
    """Count the batch's AI call for the conversation, its sender, its tenant and everyone
    (a new conversation was counted by the webhook that created it), unless one of them has
    reached its hourly limit: then that limit is returned (and nothing is counted on that
    side). Counted once per batch (`message_sids`), however often it is asked."""
    counters = _Counters(conversation)
    tenant_side = [
        (Limit.CONVERSATION_AI_CALLS, Count(counters.conversation)),
        (Limit.SENDER_AI_CALLS, Count(counters.sender)),
        (Limit.TENANT_AI_CALLS, Count(counters.tenant_calls)),
        (Limit.TENANT_AI_TOKENS, Count(counters.tenant_tokens, 0, "check")),
    ]
    everyones = [
        (Limit.ALL_AI_CALLS, Count(counters.all_calls)),
        (Limit.ALL_AI_TOKENS, Count(counters.all_tokens, 0, "check")),
    ]
    reached: Limit | None = None
    for side, what in ((tenant_side, "call"), (everyones, "call, everyone's")):
        limit_of = {c.counter.key: limit for limit, c in side}
        full = usage_counters.count(
            [c for _, c in side], counters.expires_at, _mark(conversation, message_sids, what)
        )
        if full is not None:
            reached = limit_of[full.key]
            break
    if reached is None:
        return None
    logger.warning("Cost limit reached: no AI call for this batch", extra={"limit": reached.value})
    count("CostLimitReached")
    if reached in _TENANT_CEILINGS:
        count_by_tenant("TenantCeilingReached", conversation.tenant_account_sid or "")
    if reached is Limit.ALL_AI_CALLS:
        count("AICallsCeilingReached")
    if reached in _TOKEN_CEILINGS:
        count("TokenCeilingReached")
    return reached


def admit_new_conversation(tenant_account_sid: str, conversation_id: str) -> bool:
    """Count a conversation about to be created for a sender the tenant's numbers do not
    know yet, unless the tenant has reached MAX_NEW_CONVERSATIONS_PER_HOUR_PER_TENANT this
    hour (then False, nothing counted, and the limit's metrics). Off (0): True, no call.
    Two webhooks of one new sender racing each count one (the ceiling errs on the safe side)."""
    limit = GuardSettings.get().max_new_conversations_per_hour_per_tenant
    if limit <= 0:
        return True
    hour = int(clock.now().timestamp()) // _HOUR
    counter = Counter.sharded(f"new_conversations#{tenant_account_sid}#{hour}", limit, conversation_id)
    if usage_counters.count([Count(counter)], (hour + 2) * _HOUR) is None:
        return True
    logger.warning("Cost limit reached: no new conversation", extra={"limit": Limit.NEW_CONVERSATIONS.value})
    count("CostLimitReached")
    count_by_tenant("TenantCeilingReached", tenant_account_sid)
    return False


def count_request_again(conversation: Conversation, message_sids: list[str], what: str) -> None:
    """Count a second billed request for an admitted batch (`what`: how it differs: asked
    without its images, of the fallback model), once, never refused."""
    counters = _Counters(conversation)
    calls = [counters.conversation, counters.sender, counters.tenant_calls, counters.all_calls]
    mark = _mark(conversation, message_sids, what)
    usage_counters.count([Count(c, 1, "spill") for c in calls], counters.expires_at, mark)


def count_transcriptions(conversation: Conversation, transcriptions: int) -> None:
    """Count the voice notes transcribed for a batch (each is a billed request to OpenAI;
    a retry that transcribes again is billed again, and counted again)."""
    if transcriptions <= 0:
        return
    counters = _Counters(conversation)
    calls = [counters.conversation, counters.sender, counters.tenant_calls, counters.all_calls]
    usage_counters.count([Count(c, transcriptions, "spill") for c in calls], counters.expires_at)


def count_tokens(conversation: Conversation, message_sids: list[str], response_id: str, tokens: int) -> None:
    """Count a finished response's tokens (input and output, as OpenAI reported them) on
    its tenant's and everyone's token counters, once per response."""
    if tokens <= 0:
        return
    counters = _Counters(conversation)
    spent = [Count(counters.tenant_tokens, tokens, "spill"), Count(counters.all_tokens, tokens, "spill")]
    usage_counters.count(
        spent, counters.expires_at, _mark(conversation, message_sids, f"tokens of {response_id}")
    )


def count_what_it_spends(request: BatchRequest, conversation: Conversation) -> None:
    """Have the batch's request count what it spends besides the call admitted: a request
    asked again otherwise, and each finished response's tokens."""
    sids = request.message_sids
    request.asked_again_as = lambda what: count_request_again(conversation, sids, what)
    request.tokens_spent = lambda state: count_tokens(conversation, sids, state.id, state.total_tokens)


@dataclass(frozen=True)
class CommandAdmission:
    """A helpdesk's command as the limits took it: when its event was first received (the
    time it is recorded with, whatever `time` its sender wrote) and the limit that refused
    it, if one did."""

    received_at: datetime
    refused_by: Limit | None


def admit_command(conversation: Conversation, event_id: str) -> CommandAdmission:
    """Count a helpdesk's command (event `event_id`) for its conversation and its tenant,
    unless either has reached its hourly limit (MAX_COMMANDS_PER_HOUR_PER_CONVERSATION,
    MAX_COMMANDS_PER_HOUR_PER_TENANT): then refused by that limit, nothing counted, and the
    metrics. Decided once per event: a redelivery finds the first delivery's time and decision."""
    now = clock.now()
    hour = int(now.timestamp()) // _HOUR
    receipt = usage_counters.receive_command(event_id, clock.iso(now), (hour + 48) * _HOUR)
    received_at = clock.parse(receipt.received_at)
    if receipt.admitted is not None:
        return CommandAdmission(received_at, None if receipt.admitted else Limit.CONVERSATION_COMMANDS)
    settings = GuardSettings.get()
    tenant, cid = conversation.tenant_account_sid or "", conversation.conversation_id
    per_conversation = Counter(f"commands#{cid}#{hour}", settings.max_commands_per_hour_per_conversation)
    per_tenant = Counter.sharded(
        f"tenant_commands#{tenant}#{hour}", settings.max_commands_per_hour_per_tenant, cid
    )
    limit_of = {per_conversation.key: Limit.CONVERSATION_COMMANDS, per_tenant.key: Limit.TENANT_COMMANDS}
    full = usage_counters.count([Count(per_conversation), Count(per_tenant)], (hour + 2) * _HOUR)
    usage_counters.record_admission(event_id, full is None)
    if full is None:
        return CommandAdmission(received_at, None)
    reached = limit_of[full.key]
    logger.warning("Command limit reached: command refused", extra={"limit": reached.value})
    count("ConversationCommandsLimited")
    if reached is Limit.TENANT_COMMANDS:
        count_by_tenant("TenantCeilingReached", tenant)
    return CommandAdmission(received_at, reached)


def sender_counter_key(tenant: str, user_address: str, hour: int) -> str:
    """The key of a sender's hourly counter (it holds the address: a forget deletes it,
    functions/personal_data/forgetting.py)."""
    return f"sender#{tenant}#{user_address}#{hour}"


class _Counters:
    """The hourly counters of a conversation's AI calls and tokens, this hour."""

    def __init__(self, conversation: Conversation) -> None:
        settings = GuardSettings.get()
        hour = int(clock.now().timestamp()) // _HOUR
        self.expires_at = (hour + 2) * _HOUR
        tenant, cid = conversation.tenant_account_sid or "", conversation.conversation_id
        self.conversation = Counter(
            f"conversation#{cid}#{hour}", settings.max_ai_calls_per_hour_per_conversation
        )
        # Per tenant: another tenant writing as this sender cannot use up its calls here.
        self.sender = Counter(
            sender_counter_key(tenant, conversation.user_address, hour),
            settings.max_ai_calls_per_hour_per_sender,
        )
        # A tenant signs its own webhooks, so it chooses `From`: its senders may be invented.
        self.tenant_calls = Counter.sharded(
            f"tenant#{tenant}#{hour}", settings.max_ai_calls_per_hour_per_tenant, cid
        )
        self.tenant_tokens = Counter.sharded(
            f"tenant_tokens#{tenant}#{hour}", settings.max_ai_tokens_per_hour_per_tenant, cid, "tokens"
        )
        self.all_calls = Counter.sharded(f"all#{hour}", settings.max_ai_calls_per_hour, cid)
        self.all_tokens = Counter.sharded(
            f"all_tokens#{hour}", settings.max_ai_tokens_per_hour, cid, "tokens"
        )


def _mark(conversation: Conversation, message_sids: list[str], what: str) -> Mark:
    """A batch's mark for `what` it counted: the batch is its messages (a later window
    with more messages asks, and counts, again)."""
    batch = hashlib.sha256("\n".join(sorted(message_sids)).encode()).hexdigest()[:16]
    return Mark(conversation.conversation_id, message_sids[0], f"{batch} {what}")


def notice_of(conversation: Conversation) -> str:
    """What to send instead of a reply that a cost limit stopped: LIMITED_REPLY (empty: no
    notice), at most once an hour per conversation (a retry of the batch claims it again in
    vain, and the send step sends a stored notice once)."""
    notice = GuardSettings.get().limited_reply.strip()
    now = int(clock.now().timestamp())
    if notice and conversations.claim_limited_notice(conversation.conversation_id, now, _HOUR):
        return notice
    return ""


def store_limited_turn(ref: BatchRef, limit: Limit, body: str = "") -> Turn:
    """The assistant turn of a batch that a limit stopped: status `limited`, empty (the
    send step then sends nothing) or with the one message to send instead of a reply (an
    opt-out's confirmation); the batch is recorded as limited (Record Turns And Release Lock)."""
    turn = Turn.assistant(ref, status="limited", limited=limit.value, body=body)
    turns.put(turn)
    return turn


def cap_reply_parts(text: str, max_parts: int | None = None) -> tuple[str, bool]:
    """The reply cut to the parts a batch may send (`MAX_REPLY_PARTS_PER_BATCH`), and
    whether it was cut. The parts are those `split_reply` makes, so the send step sends
    exactly these."""
    limit = GuardSettings.get().max_reply_parts_per_batch if max_parts is None else max_parts
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
