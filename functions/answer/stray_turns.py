"""The turns earlier requests left in a batch's OpenAI conversation, found and removed
(functions/answer/ai_requests.py's BatchRequest is a StrayTurns): a lost request's
copy, an earlier window's request for part of the batch, what a removal cut short left."""

from __future__ import annotations

from typing import TYPE_CHECKING

from functions.answer import openai_responses as ai
from functions.answer import turns
from functions.answer.openai_responses import Budget, ResponseState
from functions.answer.rules.conversation_items import (
    Exchange,
    deletion_order,
    exchange_of,
    exchanges,
    unanswered_copies,
)
from functions.observability import count, logger
from functions.storage.models import AIRequest
from functions.storage.tables import user_turn_id

if TYPE_CHECKING:
    import openai


class StrayTurns:
    """The turns in `openai_conversation` that this batch's earlier requests left."""

    conversation_id: str
    openai_conversation: str
    body: str
    client: openai.OpenAI
    budget: Budget

    def _withdraw(self, request: AIRequest) -> None:
        """An earlier window asked for some of these messages only: stop that response if
        it still runs and remove its turn; this batch is asked for as a whole."""
        earlier = turns.get(self.conversation_id, user_turn_id(request.window_id))
        text = earlier.body if earlier else None
        state = None
        if request.response_id:
            state = ai.retrieve_response(self.client, request.response_id, self.budget)
        if state is not None and not state.finished:
            state = ai.cancel_response(self.client, state.id, self.budget) or state
        found = self._exchanges()
        own = None
        if state is not None and state.status in ("completed", "incomplete"):
            own = exchange_of(found, state.item_ids, text, state.text)
        if own is not None:
            self._delete([own])
        elif text is not None:  # its copies, or what a removal cut short left of it (_discard)
            self._delete(self._copies(found, text))
        logger.info("Earlier request withdrawn", extra={"messages": len(request.message_sids)})

    def _remove_copies(self, keep: ResponseState | None = None) -> None:
        """Remove this batch's turns that a lost request left, newer than the last reply
        sent; `keep`: this batch's own response, kept (if its items cannot be told apart,
        nothing is removed)."""
        found = self._exchanges()
        own = exchange_of(found, keep.item_ids, None, "") if keep else None
        if keep is not None and own is None:
            return
        self._delete(self._copies(found, self.body, own))

    def _copies(self, found: list[Exchange], text: str, keep: Exchange | None = None) -> list[Exchange]:
        last = turns.last_reply(self.conversation_id)
        if last is None:
            return unanswered_copies(found, text, None, None, keep)
        return unanswered_copies(found, text, last.item_ids, last.body, keep)

    def _exchanges(self) -> list[Exchange]:
        return exchanges(ai.newest_items(self.client, self.openai_conversation, self.budget))

    def _delete(self, stray: list[Exchange]) -> None:
        if not stray:
            return
        ai.delete_items(self.client, self.openai_conversation, deletion_order(stray), self.budget)
        count("AIStrayTurnsRemoved", len(stray))
        logger.warning("Stray turns removed from the OpenAI conversation", extra={"turns": len(stray)})
