"""In-memory fakes of the data layer and of Twilio, so that a use case can be unit-tested
in milliseconds without the emulator. `install` puts them where the logic looks for its
collaborators (the dal modules' functions and the Twilio integration). The contract tests
(tests/contract) hold the fakes and the DynamoDB layer to the same behaviour."""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import pytest
from botocore.exceptions import ClientError

from functions.dal import batch_windows, conversations, turns
from functions.dal.models import BatchWindow, Conversation, Turn
from functions.errors import ConversationNotFound, TwilioPermanentError, TwilioRetryableError
from functions.integrations import secrets, twilio_messages


def condition_failed(operation: str) -> ClientError:
    """What DynamoDB answers when a condition does not hold."""
    error = {"Code": "ConditionalCheckFailedException", "Message": "The conditional request failed"}
    return ClientError({"Error": error}, operation)


@dataclass
class InMemoryStore:
    """Conversations, their processing locks, batch windows and turns, with the dal's
    conditional rules (a reply part is recorded only in order, once; the time sending
    began is recorded once; a lock is taken when free, ours or expired; a task token is
    parked on its own window only, and never replaced by an older one)."""

    conversations: dict[str, Conversation] = field(default_factory=dict)
    turns: dict[tuple[str, str], Turn] = field(default_factory=dict)
    windows: dict[str, BatchWindow] = field(default_factory=dict)
    token_entered_ms: dict[str, int] = field(default_factory=dict)
    # conversation id → (owner, lease's end in epoch seconds)
    locks: dict[str, tuple[str, int]] = field(default_factory=dict)
    delivery_failures: list[tuple[str, int | None]] = field(default_factory=list)
    # Calls to fail once, after doing their work: name → the exception to raise.
    die_after: dict[str, Exception] = field(default_factory=dict)

    def require_conversation(self, conversation_id: str) -> Conversation:
        if conversation_id not in self.conversations:
            raise ConversationNotFound(conversation_id)
        return self.conversations[conversation_id]

    # --- the processing lock ----------------------------------------------------------

    def acquire_lock(
        self, conversation_id: str, owner: str, now_epoch: int, lease_seconds: int, now: str
    ) -> bool:
        if conversation_id not in self.conversations:
            return False
        holder = self.locks.get(conversation_id)
        if holder is not None and holder[0] != owner and holder[1] >= now_epoch:
            return False
        self.locks[conversation_id] = (owner, now_epoch + lease_seconds)
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

    # --- turns ------------------------------------------------------------------------

    def put_turn(self, turn: Turn) -> None:
        self.turns[(turn.conversation_id, turn.turn_id)] = copy.deepcopy(turn)

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

    def begin_sending(self, conversation_id: str, turn_id: str, now: str) -> str:
        turn = self.turns[(conversation_id, turn_id)]
        turn.sending_since = turn.sending_since or now
        return turn.sending_since

    def append_sent_part(self, conversation_id: str, turn_id: str, part_index: int, message_sid: str) -> None:
        if "append_sent_part" in self.die_after:
            raise self.die_after.pop("append_sent_part")
        turn = self.turns.get((conversation_id, turn_id))
        if turn is None or len(turn.message_sids) != part_index:  # in order, once
            raise condition_failed("UpdateItem")
        turn.message_sids = [*turn.message_sids, message_sid]

    def record_delivery_failure(self, conversation_id: str, code: int | None, at: str) -> None:
        self.delivery_failures.append((conversation_id, code))

    def claim_template(self, conversation_id: str, turn_id: str, owner: str, now: str) -> Turn:
        turn = self.turns[(conversation_id, turn_id)]
        turn.template_owner = turn.template_owner or owner
        turn.template_since = turn.template_since or now
        return copy.deepcopy(turn)

    def record_template(self, conversation_id: str, turn_id: str, message_sid: str) -> None:
        self.turns[(conversation_id, turn_id)].template_sid = message_sid


@dataclass
class FakeTwilio:
    """Accepts messages, or refuses the ones whose number is in `refuse` (0-based, in
    the order of the create calls) with the given error; those in `lose_answer` are
    accepted, and then the answer is lost (a timeout: TwilioRetryableError)."""

    sent: list[dict[str, Any]] = field(default_factory=list)
    refuse: dict[int, Exception] = field(default_factory=dict)
    lose_answer: set[int] = field(default_factory=set)
    attempts: int = 0
    lookups: int = 0

    def send_message(
        self,
        client: Any,
        from_address: str,
        to_address: str,
        body: str | None = None,
        content_sid: str | None = None,
        status_callback: str | None = None,
        messaging_service_sid: str | None = None,
    ) -> str:
        number, self.attempts = self.attempts, self.attempts + 1
        if number in self.refuse:
            raise self.refuse[number]
        sid = f"SM{len(self.sent) + 1:032d}"
        self.sent.append(
            {
                "sid": sid,
                "from": from_address,
                "to": to_address,
                "body": body,
                "content_sid": content_sid,
                "status_callback": status_callback,
                "messaging_service_sid": messaging_service_sid,
            }
        )
        if number in self.lose_answer:
            raise TwilioRetryableError("Twilio unreachable: ReadTimeout")
        return sid

    def find_sent(
        self,
        client: Any,
        from_address: str,
        to_address: str,
        body: str | None,
        since: datetime,
        exclude: list[str] | tuple[str, ...] = (),
    ) -> str | None:
        self.lookups += 1
        found = [
            m["sid"]
            for m in self.sent
            if (m["from"], m["to"]) == (from_address, to_address)
            and m["sid"] not in exclude
            and (body is None or m["body"] == body)
        ]
        return found[0] if found else None


def install(monkeypatch: pytest.MonkeyPatch, store: InMemoryStore, twilio: FakeTwilio) -> None:
    monkeypatch.setattr(conversations, "require", store.require_conversation)
    monkeypatch.setattr(conversations, "record_delivery_failure", store.record_delivery_failure)
    monkeypatch.setattr(conversations, "acquire_lock", store.acquire_lock)
    monkeypatch.setattr(conversations, "release_lock", store.release_lock)
    monkeypatch.setattr(batch_windows, "open", store.open_window)
    monkeypatch.setattr(batch_windows, "get", store.get_window)
    monkeypatch.setattr(batch_windows, "park_task_token", store.park_task_token)
    monkeypatch.setattr(batch_windows, "close", store.close_window)
    monkeypatch.setattr(turns, "put", store.put_turn)
    monkeypatch.setattr(turns, "require", store.require_turn)
    monkeypatch.setattr(turns, "get", store.get_turn)
    monkeypatch.setattr(turns, "mark_failed", store.mark_failed)
    monkeypatch.setattr(turns, "begin_sending", store.begin_sending)
    monkeypatch.setattr(turns, "append_sent_part", store.append_sent_part)
    monkeypatch.setattr(turns, "claim_template", store.claim_template)
    monkeypatch.setattr(turns, "record_template", store.record_template)
    monkeypatch.setattr(secrets, "twilio_credentials_for", lambda conversation: None)
    monkeypatch.setattr(twilio_messages, "client_for", lambda credentials: None)
    monkeypatch.setattr(twilio_messages, "send_message", twilio.send_message)
    monkeypatch.setattr(twilio_messages, "find_sent", twilio.find_sent)


__all__ = ["FakeTwilio", "InMemoryStore", "TwilioPermanentError", "TwilioRetryableError", "install"]
