"""The Conversations half of the OpenAI stand-in: conversations and their items, through
the real endpoints (https://platform.openai.com/docs/api-reference/conversations), and the
control calls that shape them: `POST /_control/context_window` `{"max_items": N,
"max_chars": M}` sets the context window (null: no limit); `GET /_control/conversations/<id>`
shows a conversation and its items; `DELETE /_control/conversations/<id>` forgets one, so
that the API answers 404 for it, as for a deleted one; `GET /_control/conversations` lists
every conversation with its items, and the items left of the deleted ones.

Deleting a conversation through the API does not delete its items: "Delete a conversation.
Items in the conversation will not be deleted"
(https://platform.openai.com/docs/api-reference/conversations/delete). The API answers 404
for the conversation from then on, and for its items (they are reached through it), but
OpenAI still holds them: the stand-in keeps them, shown by `GET /_control/conversations`
with `"deleted": true`, so that a test sees what deleting only the conversation leaves.
Whoever wants them gone deletes each item first
(https://platform.openai.com/docs/api-reference/conversations/delete-item)."""

from __future__ import annotations

import copy
import time
from typing import Any

from werkzeug.routing import Rule
from werkzeug.wrappers import Request, Response

from infra.local.standins.base import json_response
from infra.local.standins.openai_keys import OpenAIKeysStandIn
from infra.local.standins.openai_model import (
    ContextWindow,
    Conversation,
    error,
    input_items,
    item_page,
    new_id,
    not_found,
)


class ConversationsStandIn(OpenAIKeysStandIn):  # every API request needs a key it accepts
    rules = [
        Rule("/v1/conversations", endpoint="create_conversation", methods=["POST"]),
        Rule("/v1/conversations/<cid>", endpoint="conversation_api", methods=["GET", "POST", "DELETE"]),
        Rule("/v1/conversations/<cid>/items", endpoint="items_api", methods=["GET", "POST"]),
        Rule("/v1/conversations/<cid>/items/<item_id>", endpoint="item_api", methods=["GET", "DELETE"]),
        Rule("/_control/context_window", endpoint="control_context_window", methods=["POST"]),
        Rule("/_control/conversations/<cid>", endpoint="control_conversation", methods=["GET", "DELETE"]),
        Rule("/_control/conversations", endpoint="control_conversations", methods=["GET"]),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.conversations: dict[str, Conversation] = {}
        # Conversations deleted through the API, with the items that deleting them left.
        self.deleted_conversations: dict[str, Conversation] = {}
        self.context_window = ContextWindow()

    def _reset(self) -> None:
        self.conversations.clear()
        self.deleted_conversations.clear()
        self.context_window = ContextWindow()

    # --- for tests ------------------------------------------------------------------------

    def conversation_items(self, conversation_id: str) -> list[dict[str, Any]]:
        """The conversation's items, oldest first (KeyError if unknown)."""
        with self._lock:
            return copy.deepcopy(self.conversations[conversation_id].items)

    def forget_conversation(self, conversation_id: str) -> None:
        """From now on the API answers 404 for this conversation, as for a deleted one."""
        with self._lock:
            self.conversations.pop(conversation_id, None)

    def set_context_window(self, max_items: int | None = None, max_chars: int | None = None) -> None:
        with self._lock:
            self.context_window = ContextWindow(max_items, max_chars)

    # --- conversations --------------------------------------------------------------------

    def create_conversation(self, request: Request) -> Response:
        body = request.get_json(force=True, silent=True) or {}
        conversation = Conversation(new_id("conv"), int(time.time()), body.get("metadata") or {})
        conversation.items.extend(input_items(body.get("items") or []))
        with self._lock:
            self.conversations[conversation.id] = conversation
            return json_response(conversation.resource())

    def conversation_api(self, request: Request, cid: str) -> Response:
        with self._lock:
            conversation = self.conversations.get(cid)
            if conversation is None:
                return not_found("Conversation", cid)
            if request.method == "DELETE":
                # https://platform.openai.com/docs/api-reference/conversations/delete: its
                # items are not deleted with it.
                self.deleted_conversations[cid] = self.conversations.pop(cid)
                return json_response({"id": cid, "object": "conversation.deleted", "deleted": True})
            if request.method == "POST":
                conversation.metadata = (request.get_json(force=True) or {}).get("metadata") or {}
            return json_response(conversation.resource())

    def items_api(self, request: Request, cid: str) -> Response:
        with self._lock:
            conversation = self.conversations.get(cid)
            if conversation is None:
                return not_found("Conversation", cid)
            if request.method == "POST":
                if conversation.busy_with:
                    return error(400, "conversation_locked")
                added = input_items((request.get_json(force=True) or {}).get("items") or [])
                conversation.items.extend(added)
                return json_response(item_page(copy.deepcopy(added), False))
            return self._list_items(request, conversation)

    def _list_items(self, request: Request, conversation: Conversation) -> Response:
        """limit 1-100 (default 20), order asc|desc (default desc), after: an item id
        (https://platform.openai.com/docs/api-reference/conversations/list-items)."""
        limit = request.args.get("limit", 20, type=int)
        order = request.args.get("order", "desc")
        if limit is None or not 1 <= limit <= 100:
            return error(400, "integer_out_of_range", "Invalid 'limit': expected 1 to 100.", "limit")
        if order not in ("asc", "desc"):
            return error(400, "invalid_value", "Invalid 'order': expected 'asc' or 'desc'.", "order")
        items = conversation.items if order == "asc" else conversation.items[::-1]
        after = request.args.get("after")
        if after:
            ids = [item["id"] for item in items]
            if after not in ids:  # the docs are silent: refuse, rather than restart the list
                return error(400, "invalid_value", f"Invalid 'after': no item '{after}'.", "after")
            items = items[ids.index(after) + 1 :]
        return json_response(item_page(copy.deepcopy(items[:limit]), len(items) > limit))

    def item_api(self, request: Request, cid: str, item_id: str) -> Response:
        with self._lock:
            conversation = self.conversations.get(cid)
            if conversation is None:
                return not_found("Conversation", cid)
            found = [item for item in conversation.items if item["id"] == item_id]
            if not found:
                return not_found("Item", item_id)
            if request.method == "GET":
                return json_response(copy.deepcopy(found[0]))
            if conversation.busy_with:
                return error(400, "conversation_locked")
            conversation.items.remove(found[0])
            # Deleting an item answers with the conversation
            # (https://platform.openai.com/docs/api-reference/conversations/delete-item).
            return json_response(conversation.resource())

    # --- control --------------------------------------------------------------------------

    def control_context_window(self, request: Request) -> Response:
        body = request.get_json(force=True) or {}
        self.set_context_window(body.get("max_items"), body.get("max_chars"))
        return json_response({"max_items": body.get("max_items"), "max_chars": body.get("max_chars")})

    def control_conversations(self, request: Request) -> Response:
        """Every conversation and its items, the deleted ones' left items too."""
        with self._lock:
            shown = [
                {"conversation": c.resource(), "items": c.items, "deleted": deleted}
                for deleted, kept in ((False, self.conversations), (True, self.deleted_conversations))
                for c in kept.values()
            ]
            return json_response({"conversations": copy.deepcopy(shown)})

    def control_conversation(self, request: Request, cid: str) -> Response:
        with self._lock:
            conversation = self.conversations.get(cid)
            if conversation is None:
                return not_found("Conversation", cid)
            if request.method == "DELETE":
                self.forget_conversation(cid)
                return json_response({"forgotten": cid})
            shown = {"conversation": conversation.resource(), "items": conversation.items}
            return json_response({**copy.deepcopy(shown), "busy_with": conversation.busy_with})
