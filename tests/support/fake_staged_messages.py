"""The StagedMessages part of the in-memory store (tests/support/fakes.py): each item as
the table holds it, with the conditions of functions/intake/staged_messages.py (a MessageSid
is staged once; only a pending message counts attempts, is set aside or keeps an OpenAI
request)."""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

from functions.intake.inbound import InboundMessage, MessageContent
from functions.intake.staged_messages import Staging
from functions.storage.models import AIRequest, PendingKey, StagedMessage


@dataclass
class InMemoryStagedMessages:
    # (conversation id, MessageSid) → the item as the StagedMessages table holds it
    staged: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)

    def stage(self, conversation_id: str, message: InboundMessage, received_at: str) -> Staging:
        existing = self.staged.get((conversation_id, message.message_sid))
        if existing is not None:
            return Staging.DUPLICATE_PENDING if "pending_since" in existing else Staging.DUPLICATE_DONE
        blank = MessageContent().model_dump(mode="json")
        content = {k: v for k, v in message.content().model_dump(mode="json").items() if v != blank[k]}
        item: dict[str, Any] = {
            **content,
            "conversation_id": conversation_id,
            "message_sid": message.message_sid,
            "received_at": received_at,
            "pending_since": received_at,
            "body": message.body,
            "from_address": message.from_address,
        }
        if message.profile_name:
            item["profile_name"] = message.profile_name
        self.staged[(conversation_id, message.message_sid)] = item
        return Staging.STAGED

    def _pending_item(self, conversation_id: str, message_sid: str) -> dict[str, Any] | None:
        item = self.staged.get((conversation_id, message_sid))
        return item if item is not None and "pending_since" in item else None

    def load_staged(self, conversation_id: str, message_sids: list[str]) -> list[StagedMessage]:
        found = [self.staged.get((conversation_id, sid)) for sid in message_sids]
        return [StagedMessage.from_item(copy.deepcopy(item)) for item in found if item is not None]

    def pending(self, conversation_id: str) -> list[PendingKey]:
        items = [i for (c, _), i in self.staged.items() if c == conversation_id and "pending_since" in i]
        return [PendingKey.from_item(i) for i in sorted(items, key=lambda i: i["pending_since"])]

    def scan_pending(self) -> list[dict[str, Any]]:
        return [copy.deepcopy(i) for i in self.staged.values() if "pending_since" in i]

    def count_failed_attempt(self, conversation_id: str, message_sids: list[str]) -> int:
        highest = 0
        for sid in message_sids:
            item = self._pending_item(conversation_id, sid)
            if item is not None:
                item["attempts"] = item.get("attempts", 0) + 1
                highest = max(highest, item["attempts"])
        return highest

    def count_transient_failure(self, conversation_id: str, message_sids: list[str], at: str) -> int:
        highest = 0
        for sid in message_sids:
            item = self._pending_item(conversation_id, sid)
            if item is not None:
                item["transient_failures"] = item.get("transient_failures", 0) + 1
                item["last_failed_at"] = at
                highest = max(highest, item["transient_failures"])
        return highest

    def set_aside(self, conversation_id: str, message_sids: list[str], window_id: str, reason: str) -> None:
        for sid in message_sids:
            item = self._pending_item(conversation_id, sid)
            if item is not None:
                del item["pending_since"]
                item |= {"failed_in": window_id, "failure": reason}

    def mark_answered(
        self, conversation_id: str, message_sids: list[str], window_id: str, expires_at: int
    ) -> None:
        for sid in message_sids:
            self.staged[(conversation_id, sid)] = {
                "conversation_id": conversation_id,
                "message_sid": sid,
                "answered_in": window_id,
                "expires_at": expires_at,
            }

    def ai_requests(self, conversation_id: str, message_sids: list[str]) -> dict[str, AIRequest]:
        found = {sid: self.staged.get((conversation_id, sid)) or {} for sid in message_sids}
        return {sid: AIRequest.from_item(i["ai_request"]) for sid, i in found.items() if i.get("ai_request")}

    def keep_ai_request(self, conversation_id: str, message_sid: str, request: AIRequest) -> None:
        item = self._pending_item(conversation_id, message_sid)
        if item is not None:
            item["ai_request"] = request.to_item()

    def drop_ai_request(self, conversation_id: str, message_sid: str) -> None:
        key = (conversation_id, message_sid)  # an update: it makes the item if it is missing
        self.staged.setdefault(key, {"conversation_id": conversation_id, "message_sid": message_sid})
        self.staged[key].pop("ai_request", None)
