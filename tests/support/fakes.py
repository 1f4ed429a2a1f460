"""In-memory fakes of the data layer and of Twilio, so that a use case can be unit-tested
in milliseconds without the emulator. `install` puts them where the logic looks for its
collaborators (the dal modules' functions and the Twilio integration)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from functions.dal import conversations, turns
from functions.dal.models import Conversation, Turn
from functions.errors import ConversationNotFound, TwilioPermanentError, TwilioRetryableError
from functions.integrations import secrets, twilio_messages


@dataclass
class InMemoryStore:
    """Conversations and turns, with the dal's conditional rules (a reply part is
    recorded only in order, once)."""

    conversations: dict[str, Conversation] = field(default_factory=dict)
    turns: dict[tuple[str, str], Turn] = field(default_factory=dict)
    delivery_failures: list[tuple[str, int | None]] = field(default_factory=list)

    def require_conversation(self, conversation_id: str) -> Conversation:
        if conversation_id not in self.conversations:
            raise ConversationNotFound(conversation_id)
        return self.conversations[conversation_id]

    def require_turn(self, conversation_id: str, turn_id: str) -> Turn:
        return self.turns[(conversation_id, turn_id)]

    def append_sent_part(self, conversation_id: str, turn_id: str, part_index: int, message_sid: str) -> None:
        turn = self.turns[(conversation_id, turn_id)]
        assert len(turn.message_sids) == part_index, "parts are recorded in order, once"
        turn.message_sids = [*turn.message_sids, message_sid]

    def record_delivery_failure(self, conversation_id: str, code: int | None, at: str) -> None:
        self.delivery_failures.append((conversation_id, code))


@dataclass
class FakeTwilio:
    """Accepts messages, or refuses the ones whose number is in `refuse` (0-based, in
    the order sent) with the given error."""

    sent: list[dict[str, Any]] = field(default_factory=list)
    refuse: dict[int, Exception] = field(default_factory=dict)
    attempts: int = 0

    def send_message(
        self,
        client: Any,
        from_address: str,
        to_address: str,
        body: str | None = None,
        content_sid: str | None = None,
    ) -> str:
        number, self.attempts = self.attempts, self.attempts + 1
        if number in self.refuse:
            raise self.refuse[number]
        self.sent.append({"from": from_address, "to": to_address, "body": body, "content_sid": content_sid})
        return f"SM{len(self.sent):032d}"


def install(monkeypatch: pytest.MonkeyPatch, store: InMemoryStore, twilio: FakeTwilio) -> None:
    monkeypatch.setattr(conversations, "require", store.require_conversation)
    monkeypatch.setattr(conversations, "record_delivery_failure", store.record_delivery_failure)
    monkeypatch.setattr(turns, "require", store.require_turn)
    monkeypatch.setattr(turns, "append_sent_part", store.append_sent_part)
    monkeypatch.setattr(secrets, "twilio_credentials_for", lambda conversation: None)
    monkeypatch.setattr(twilio_messages, "client_for", lambda credentials: None)
    monkeypatch.setattr(twilio_messages, "send_message", twilio.send_message)


__all__ = ["FakeTwilio", "InMemoryStore", "TwilioPermanentError", "TwilioRetryableError", "install"]
