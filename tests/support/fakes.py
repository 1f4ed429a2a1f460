"""In-memory fakes of the data layer and of Twilio, so that a use case can be unit-tested
in milliseconds without the emulator. `install` puts them where the logic looks for its
collaborators (the dal modules' functions and the Twilio integration)."""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import pytest

from functions.dal import conversations, turns
from functions.dal.models import Conversation, Turn
from functions.errors import ConversationNotFound, TwilioPermanentError, TwilioRetryableError
from functions.integrations import secrets, twilio_messages


@dataclass
class InMemoryStore:
    """Conversations and turns, with the dal's conditional rules (a reply part is
    recorded only in order, once; the time sending began is recorded once)."""

    conversations: dict[str, Conversation] = field(default_factory=dict)
    turns: dict[tuple[str, str], Turn] = field(default_factory=dict)
    delivery_failures: list[tuple[str, int | None]] = field(default_factory=list)
    # Calls to fail once, after doing their work: name → the exception to raise.
    die_after: dict[str, Exception] = field(default_factory=dict)

    def require_conversation(self, conversation_id: str) -> Conversation:
        if conversation_id not in self.conversations:
            raise ConversationNotFound(conversation_id)
        return self.conversations[conversation_id]

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
        turn = self.turns[(conversation_id, turn_id)]
        assert len(turn.message_sids) == part_index, "parts are recorded in order, once"
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
