"""In-memory fakes of the tables and of Twilio, so that a use case can be unit-tested in
milliseconds without the emulator. `install` puts them where the operations look for their
collaborators (the table modules' functions, and Twilio's calls in
functions/delivery/twilio_messages.py and functions/answer/twilio_typing.py). The contract
tests (tests/contract) hold the fakes and the table modules to the same behaviour."""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import pytest
from botocore.exceptions import ClientError

from functions import clock
from functions.answer import turns, twilio_typing
from functions.batching import batch_windows
from functions.delivery import sender_budget, twilio_messages
from functions.errors import ConversationNotFound, TwilioPermanentError, TwilioRetryableError
from functions.intake import staged_messages
from functions.intake.inbound import Channel, address_key
from functions.storage.models import BatchWindow, Conversation, Turn
from functions.tenancy import conversations, id_key, secrets, tenants
from tests.support.fake_sender_budget import InMemorySenderTurns
from tests.support.fake_staged_messages import InMemoryStagedMessages
from tests.support.fake_twilio import FakeTwilio

# The deployment's key of conversation ids, as the fakes' store draws them (no Secrets Manager).
ID_KEY = b"the-fakes-key-of-conversation-ids-0123456789"


def condition_failed(operation: str) -> ClientError:
    """What DynamoDB answers when a condition does not hold."""
    error = {"Code": "ConditionalCheckFailedException", "Message": "The conditional request failed"}
    return ClientError({"Error": error}, operation)


@dataclass
class InMemoryStore(InMemoryStagedMessages, InMemorySenderTurns):
    """Conversations, their processing locks, batch windows, staged messages and turns,
    with the table modules' conditions (a reply part is recorded only in order, once; the
    time sending began is recorded once; a lock is taken when free, ours or expired; a
    task token is parked on its own window only, and never replaced by an older one; a
    MessageSid is staged once; only a pending message counts attempts, is set aside or
    keeps an OpenAI request)."""

    conversations: dict[str, Conversation] = field(default_factory=dict)
    turns: dict[tuple[str, str], Turn] = field(default_factory=dict)
    windows: dict[str, BatchWindow] = field(default_factory=dict)
    token_entered_ms: dict[str, int] = field(default_factory=dict)
    # conversation id → (owner, lease's end in epoch seconds)
    locks: dict[str, tuple[str, int]] = field(default_factory=dict)
    delivery_failures: list[tuple[str, int | None]] = field(default_factory=list)
    # What the conversation's record holds that its model does not read, written by
    # expressions only: the totals and status of the answered batches, the delivery failures.
    conversation_totals: dict[str, dict[str, Any]] = field(default_factory=dict)
    # Calls to fail once, after doing their work: name → the exception to raise.
    die_after: dict[str, Exception] = field(default_factory=dict)

    def require_conversation(self, conversation_id: str) -> Conversation:
        if conversation_id not in self.conversations:
            raise ConversationNotFound(conversation_id)
        return self.conversations[conversation_id]

    def find_conversation(
        self, channel: Channel, user_address: str, our_address: str, tenant_account_sid: str
    ) -> Conversation | None:
        for conversation in self.conversations.values():
            if (conversation.channel, conversation.user_address, conversation.our_address) == (
                channel,
                user_address,
                our_address,
            ) and (not conversation.task_complete and conversation.tenant_account_sid == tenant_account_sid):
                return copy.deepcopy(conversation)
        return None

    def create_conversation(
        self,
        channel: Channel,
        user_address: str,
        our_address: str,
        now: str,
        tenant_account_sid: str,
        message_sid: str | None = None,  # a replay of a forgotten conversation's: none here
    ) -> Conversation:
        key = address_key(channel, user_address, our_address)
        conversation_id = conversations.new_conversation_id(tenant_account_sid, key)
        if conversation_id not in self.conversations:
            self.conversations[conversation_id] = Conversation(
                conversation_id=conversation_id,
                channel=channel,
                user_address=user_address,
                our_address=our_address,
                created_at=now,
                tenant_account_sid=tenant_account_sid,
            )
        return copy.deepcopy(self.conversations[conversation_id])

    def get_conversation(self, conversation_id: str) -> Conversation | None:
        return copy.deepcopy(self.conversations.get(conversation_id))

    # --- the processing lock ----------------------------------------------------------

    def acquire_lock(
        self,
        conversation_id: str,
        owner: str,
        now_epoch: int,
        lease_seconds: int,
        now: str,
        learned: dict[str, int] | None = None,
    ) -> bool:
        if conversation_id not in self.conversations:
            return False
        holder = self.locks.get(conversation_id)
        if holder is not None and holder[0] != owner and holder[1] >= now_epoch:
            return False
        self.locks[conversation_id] = (owner, now_epoch + lease_seconds)
        if learned:
            conversation = self.conversations[conversation_id]
            self.conversations[conversation_id] = conversation.model_copy(update=learned)
        return True

    def release_lock(self, conversation_id: str, owner: str) -> bool:
        if self.locks.get(conversation_id, ("", 0))[0] != owner:
            return False
        del self.locks[conversation_id]
        return True

    # --- batch windows ----------------------------------------------------------------

    def open_window(self, window: BatchWindow) -> BatchWindow | None:
        if window.conversation_id in self.windows:
            return copy.deepcopy(self.windows[window.conversation_id])
        self.windows[window.conversation_id] = copy.deepcopy(window)
        return None

    def get_window(self, conversation_id: str) -> BatchWindow | None:
        return copy.deepcopy(self.windows.get(conversation_id))

    def park_task_token(
        self, conversation_id: str, window_id: str, task_token: str, entered_ms: int
    ) -> BatchWindow | None:
        window = self.windows.get(conversation_id)
        if window is None or window.window_id != window_id:
            return None
        if self.token_entered_ms.get(conversation_id, entered_ms - 1) >= entered_ms:
            return None
        window.task_token, self.token_entered_ms[conversation_id] = task_token, entered_ms
        return copy.deepcopy(window)

    def close_window(self, conversation_id: str, window_id: str) -> BatchWindow | None:
        window = self.windows.get(conversation_id)
        if window is None or window.window_id != window_id:
            return None
        self.token_entered_ms.pop(conversation_id, None)
        return self.windows.pop(conversation_id)

    def count_message_in_window(self, candidate: BatchWindow, now_ms: int, flush: bool) -> BatchWindow:
        window = self.windows.get(candidate.conversation_id)
        if window is None:
            window = copy.deepcopy(candidate)
            window.message_count, window.previous_message_ms = 0, None
            self.windows[candidate.conversation_id] = window
        else:
            window.previous_message_ms = window.last_message_ms
        window.last_message_ms, window.message_count = now_ms, window.message_count + 1
        window.flush_requested = flush or window.flush_requested
        return copy.deepcopy(window)

    def scan_windows(self) -> list[BatchWindow]:
        return [copy.deepcopy(window) for window in self.windows.values()]

    # --- turns ------------------------------------------------------------------------

    def put_turn(self, turn: Turn) -> None:
        self.turns[(turn.conversation_id, turn.turn_id)] = copy.deepcopy(turn)

    def recent_turns(self, conversation_id: str, limit: int) -> list[Turn]:
        own = sorted((t for (c, _), t in self.turns.items() if c == conversation_id), key=lambda t: t.turn_id)
        return [copy.deepcopy(t) for t in reversed(own)][:limit]

    def last_reply(self, conversation_id: str) -> Turn | None:
        sent = [t for t in self.recent_turns(conversation_id, len(self.turns)) if t.role == "assistant"]
        return next((t for t in sent if t.status == "sent"), None)

    def record_answered_batch(
        self,
        *,
        conversation_id: str,
        owner: str,
        user_turn_id: str,
        assistant_turn_id: str | None,
        answered_at: str,
        processing_time_ms: int,
        tokens: dict[str, int],
        last_message_sid: str | None,
        limited: bool = False,
        ended_by: str | None = None,
    ) -> bool:
        """The transaction: the turns' statuses, the conversation's totals and status, and
        the lock released, if `owner` holds it."""
        if self.locks.get(conversation_id, ("", 0))[0] != owner:
            return False
        user = self._turn(conversation_id, user_turn_id, "user")
        user.status = "handed_off" if assistant_turn_id is None else ("limited" if limited else "answered")
        user.answered_at, user.burst_ended_by = answered_at, ended_by
        if last_message_sid and conversation_id in self.conversations:
            self.conversations[conversation_id].last_reply_at = answered_at
        status = "awaiting_agent" if assistant_turn_id is None else ("limited" if limited else "reply_sent")
        totals = self.conversation_totals.setdefault(conversation_id, {})
        totals |= {"updated_at": answered_at, "conversation_status": status}
        totals["last_assistant_message_sid"] = last_message_sid or ""
        added = {k: tokens.get(k, 0) for k in ("prompt_tokens", "completion_tokens", "total_tokens")}
        added["turn_count"] = 1 if assistant_turn_id is None else 2
        for name, value in added.items():
            totals[name] = totals.get(name, 0) + value
        if assistant_turn_id is not None:
            assistant = self._turn(conversation_id, assistant_turn_id, "assistant")
            assistant.status, assistant.sent_at = ("limited" if limited else "sent"), answered_at
            assistant.processing_time_ms = processing_time_ms
        del self.locks[conversation_id]
        return True

    def _turn(self, conversation_id: str, turn_id: str, role: str) -> Turn:
        key = (conversation_id, turn_id)  # an update: it makes the item if it is missing
        return self.turns.setdefault(key, Turn(conversation_id=conversation_id, turn_id=turn_id, role=role))

    def require_turn(self, conversation_id: str, turn_id: str) -> Turn:
        return copy.deepcopy(self.turns[(conversation_id, turn_id)])

    def get_turn(self, conversation_id: str, turn_id: str) -> Turn | None:
        turn = self.turns.get((conversation_id, turn_id))
        return copy.deepcopy(turn) if turn is not None else None

    def mark_failed(self, conversation_id: str, turn_id: str, fields: dict[str, Any]) -> None:
        key = (conversation_id, turn_id)
        turn = self.turns.get(key) or Turn(conversation_id=conversation_id, turn_id=turn_id, role="user")
        for name, value in fields.items():
            setattr(turn, name, value)
        self.turns[key] = turn

    def claim_once(
        self, conversation_id: str, turn_id: str, slot: turns.Slot, part: int, owner: str | None, now: str
    ) -> turns.Held:
        """The claim of a message sent once, on the turn's fields (or its part's map), as
        DynamoDB's `if_not_exists` makes it; what the turn held before."""
        key = (conversation_id, turn_id)
        if key not in self.turns and not slot.creates_turn:
            raise condition_failed("UpdateItem")
        old = self.turns.get(key) or Turn(conversation_id=conversation_id, turn_id=turn_id, role="user")
        item = old.model_dump()
        claim = {"since": now, "owner": owner}
        if slot.within is not None:
            held = dict((old.to_item().get(slot.within) or {}).get(str(part)) or {})
            item[slot.within] = {**item[slot.within], str(part): item[slot.within].get(str(part)) or claim}
        else:
            held = old.to_item()
            item[slot.since] = item[slot.since] or now
            if slot.owner:
                item[slot.owner] = item[slot.owner] or owner
            if slot.in_order:
                item["last_attempt_at"] = now
        self.turns[key] = Turn.model_validate(item)
        # The part refused in the previous attempt, if that was its last create.
        refused = old.refused_part if old.last_attempt_at and old.refused_by == old.last_attempt_at else None
        return turns.Held(
            since=held.get(slot.since) or now,
            owner=(held.get(slot.owner) or owner) if slot.owner else None,
            sid=(old.message_sids[part] if part < len(old.message_sids) else None)
            if slot.in_order
            else held.get(slot.sid),
            refused_part=refused if slot.in_order else None,
            part_sids=tuple(old.message_sids),
            reported=tuple(old.deliveries),
        )

    def record_once(
        self, conversation_id: str, turn_id: str, slot: turns.Slot, part: int, sid: str, now: str
    ) -> None:
        if slot.in_order:
            self.append_sent_part(conversation_id, turn_id, part, sid, now)
            return
        key = (conversation_id, turn_id)
        turn = self.turns.get(key) or Turn(conversation_id=conversation_id, turn_id=turn_id, role="user")
        item = turn.model_dump()
        if slot.within is not None:
            item[slot.within][str(part)][slot.sid] = sid
        else:
            item[slot.sid] = sid
        self.turns[key] = Turn.model_validate(item)

    def refuse_part(self, conversation_id: str, turn_id: str, part_index: int, attempt: str) -> None:
        turn = self.turns[(conversation_id, turn_id)]
        turn.refused_part, turn.refused_by = part_index, attempt

    def append_sent_part(
        self, conversation_id: str, turn_id: str, part_index: int, message_sid: str, accepted_at: str
    ) -> None:
        if "append_sent_part" in self.die_after:
            raise self.die_after.pop("append_sent_part")
        turn = self.turns.get((conversation_id, turn_id))
        if turn is None or len(turn.message_sids) != part_index:  # in order, once
            raise condition_failed("UpdateItem")
        turn.message_sids = [*turn.message_sids, message_sid]
        turn.first_part_at = turn.first_part_at or accepted_at

    def record_delivery_failure(self, conversation_id: str, code: int | None, at: str) -> None:
        self.delivery_failures.append((conversation_id, code))
        kept = self.conversation_totals.setdefault(conversation_id, {})
        kept |= {"last_delivery_error": code if code is not None else 0, "last_delivery_error_at": at}
        kept["delivery_failures"] = kept.get("delivery_failures", 0) + 1

    def claim_typing(self, conversation_id: str, turn_id: str, field: str, now: str) -> bool:
        turn = self.turns.get((conversation_id, turn_id))
        if turn is None or getattr(turn, field):
            return False
        setattr(turn, field, now)
        return True


def install(monkeypatch: pytest.MonkeyPatch, store: InMemoryStore, twilio: FakeTwilio) -> None:
    monkeypatch.setattr(conversations, "require", store.require_conversation)
    monkeypatch.setattr(conversations, "find", store.find_conversation)
    monkeypatch.setattr(conversations, "create", store.create_conversation)
    monkeypatch.setattr(id_key, "conversation_id_key", lambda: ID_KEY)
    monkeypatch.setattr(conversations, "get", store.get_conversation)
    monkeypatch.setattr(conversations, "record_delivery_failure", store.record_delivery_failure)
    monkeypatch.setattr(conversations, "acquire_lock", store.acquire_lock)
    monkeypatch.setattr(conversations, "release_lock", store.release_lock)
    monkeypatch.setattr(batch_windows, "open", store.open_window)
    monkeypatch.setattr(batch_windows, "get", store.get_window)
    monkeypatch.setattr(batch_windows, "park_task_token", store.park_task_token)
    monkeypatch.setattr(batch_windows, "close", store.close_window)
    monkeypatch.setattr(batch_windows, "count_message", store.count_message_in_window)
    monkeypatch.setattr(batch_windows, "scan", store.scan_windows)
    monkeypatch.setattr(batch_windows, "scan_with_resends", lambda: (store.scan_windows(), []))
    monkeypatch.setattr(staged_messages, "stage", store.stage)
    monkeypatch.setattr(staged_messages, "load", store.load_staged)
    monkeypatch.setattr(staged_messages, "pending", store.pending)
    monkeypatch.setattr(staged_messages, "scan_pending", store.scan_pending)
    monkeypatch.setattr(staged_messages, "count_failed_attempt", store.count_failed_attempt)
    monkeypatch.setattr(staged_messages, "count_transient_failure", store.count_transient_failure)
    monkeypatch.setattr(staged_messages, "set_aside", store.set_aside)
    monkeypatch.setattr(staged_messages, "mark_answered", store.mark_answered)
    monkeypatch.setattr(staged_messages, "ai_requests", store.ai_requests)
    monkeypatch.setattr(staged_messages, "keep_ai_request", store.keep_ai_request)
    monkeypatch.setattr(staged_messages, "drop_ai_request", store.drop_ai_request)
    monkeypatch.setattr(turns, "put", store.put_turn)
    monkeypatch.setattr(turns, "require", store.require_turn)
    monkeypatch.setattr(turns, "get", store.get_turn)
    monkeypatch.setattr(turns, "recent", store.recent_turns)
    monkeypatch.setattr(turns, "last_reply", store.last_reply)
    monkeypatch.setattr(turns, "record_answered_batch", store.record_answered_batch)
    monkeypatch.setattr(turns, "mark_failed", store.mark_failed)
    monkeypatch.setattr(turns, "claim_once", store.claim_once)
    monkeypatch.setattr(turns, "record_once", store.record_once)
    monkeypatch.setattr(turns, "refuse_part", store.refuse_part)
    monkeypatch.setattr(turns, "append_sent_part", store.append_sent_part)
    monkeypatch.setattr(turns, "claim_typing", store.claim_typing)
    monkeypatch.setattr(sender_budget, "take_turn", store.take_turn)
    monkeypatch.setattr(tenants, "sender_mps", store.sender_mps)
    monkeypatch.setattr(tenants, "retention_overrides", dict)  # no tenant keeps texts for less
    monkeypatch.setattr(twilio_typing, "show_typing", twilio.show_typing)
    monkeypatch.setattr(secrets, "twilio_credentials_for", lambda conversation: None)
    monkeypatch.setattr(
        secrets, "twilio_credentials_in_tenant_session", lambda conversation, fresh=False: None
    )
    monkeypatch.setattr(twilio_messages, "client_for", lambda credentials: None)
    monkeypatch.setattr(twilio_messages, "send_message", twilio.send_message)
    monkeypatch.setattr(twilio_messages, "find_sent", twilio.find_sent)


__all__ = ["FakeTwilio", "InMemoryStore", "TwilioPermanentError", "TwilioRetryableError", "install"]


def store_with_conversation(
    monkeypatch: pytest.MonkeyPatch, now: datetime, user: str, us: str, **conversation: Any
) -> InMemoryStore:
    """An installed store holding WhatsApp conversation c1 between `user` and our number
    `us` (with any other fields given), a FakeTwilio, and the clock at `now`."""
    store = InMemoryStore()
    store.conversations["c1"] = Conversation(
        conversation_id="c1", channel=Channel.WHATSAPP, user_address=user, our_address=us, created_at="t",
        **conversation,
    )  # fmt: skip
    install(monkeypatch, store, FakeTwilio())
    monkeypatch.setattr(clock, "now", lambda: now)
    return store
