"""A batch's OpenAI request, asked once: one user turn and one reply per batch in the
OpenAI Conversation, whatever attempt times out or dies after OpenAI did the work.

OpenAI adds a response's input and output to the conversation when the response
completes, whether or not its client still waits. So the request is created in background
mode and kept (`AIRequest`) on the batch's first staged message before anyone waits for
it: `response_id` unset while the creation's outcome is unknown, set once OpenAI answered.
Every later attempt, and a later window for the same messages (the reconciler's retry, an
operator's redrive), finds it there and polls it instead of asking again. The message's
tombstone drops it once the batch is answered.

- Same messages, response known: poll it (or reuse the reply an earlier window stored).
- Same messages, outcome unknown: remove the turn the lost request may have left (the
  newest exchanges with this input, newer than the last reply sent), then ask again; once
  answered, look once more for a copy that completed in between.
- A request for a subset of this batch's messages (a window that failed, then messages
  arrived): cancel it if it still runs, remove its turn, and ask for the whole batch.
- A response that failed or was cancelled: remove the turn it may have left, then ask
  again on the next attempt (or fail permanently if OpenAI says retrying cannot help).
- An image OpenAI refused (a 400 or a failed response with an image error code): asked
  again at once, once, without the batch's images, each photo's line saying it could not
  be shown; the request kept on the batch says so, so later attempts ask the same way.
- A response that spent its max_output_tokens on reasoning, with no text: its turn removed,
  asked again at once, once, with twice the room (rules/output_room.py).
- What it spends is counted once (functions/guards/limits.py): a request asked otherwise
  than admitted (without images, of the fallback model, with more room) as one more AI call;
  each response's tokens.
- A reply the content filter cut: its turn removed, and a permanent error (the user gets
  the fallback reply, not the cut text).
- A response that asks for tool calls: the calls are kept on the request and
  ToolCallsRequested raised; the run makes them ("Call Tools") and the next attempt asks
  again with their outputs, one more round (at most `max_tool_rounds`; the last one with
  `tool_choice: none`, so the model answers). Each round's request is kept before it is
  asked, as the first is; one whose outcome is unknown has the outputs it may have left
  removed before it is asked again. Once a round of calls was made, the reply is no longer
  discarded for newer fragments (they are answered in the next window). A conversation
  found holding a call without its output (a round interrupted for good) has the call
  closed with a "cancelled" output, never left or deleted: OpenAI refuses every later turn
  of a conversation that holds one.
- Newer fragments while it is generated (`newer`, asked while it is polled and once it is
  done): the response is cancelled if it still runs, the turn it left removed (whatever
  its final status: a cancelled response may have kept its input), the kept
  request dropped, and NewerFragments raised; the run merges again and asks again.
See docs/adr/0035-one-user-turn-per-batch-in-the-openai.md for what this costs in API calls."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from functions import clock
from functions.answer import openai_models, turns
from functions.answer import openai_responses as ai
from functions.answer.openai_image_errors import IMAGE_ERRORS
from functions.answer.openai_responses import Budget, OpenAIConversationGone, ResponseState
from functions.answer.rules.conversation_items import (
    Exchange,
    deletion_order,
    exchange_of,
    exchanges,
    unanswered_copies,
)
from functions.answer.rules.output_room import more_room
from functions.answer.settings import AnswerSettings
from functions.assistant import tool_calls
from functions.assistant.rules import tools as tool_rules
from functions.errors import (
    AIModelUnavailable,
    AIPermanentError,
    AIRetryableError,
    NewerFragments,
    ToolCallsRequested,
)
from functions.intake import staged_messages
from functions.observability import count, logger
from functions.storage.models import AIRequest, AskedCall
from functions.storage.tables import assistant_turn_id, user_turn_id

if TYPE_CHECKING:
    from typing import Any

    import openai
    from openai.types.responses import ResponseInputParam
    from openai.types.shared import ReasoningEffort


@dataclass
class BatchRequest:
    """Asking OpenAI for one batch's reply, within one attempt's time; and finding and
    removing the turns its earlier requests left in the OpenAI conversation (a lost
    request's copy, an earlier window's request for part of the batch, what a removal cut
    short left)."""

    conversation_id: str
    window_id: str
    message_sids: list[str]
    input: str | ResponseInputParam  # the merged user turn as the model reads it (images included)
    body: str  # its text: what the conversation's items are compared with
    openai_conversation: str
    client: openai.OpenAI
    budget: Budget
    model: str
    instructions: str
    max_output_tokens: int
    without_images: str | None = None  # the input with no image, each photo's line saying so
    images_left_out: bool = False
    # Whether fragments came after the batch was merged and its reply may be discarded
    # for them (None: it may not; functions/states/generate_reply.py).
    newer: Callable[[], bool] | None = None
    # Called while the reply is awaited (the typing indicator's refresh).
    while_waiting: Callable[[], None] | None = None
    # Counting what it spends (limits.count_what_it_spends): a request asked again, named; tokens.
    asked_again_as: Callable[[str], None] | None = None
    tokens_spent: Callable[[ResponseState], None] | None = None
    # The assistant's function tools (as OpenAI takes them) and its rounds of calls; what
    # every request carries besides (metadata, a safety identifier that is no number).
    tenant: str = ""
    tools: list[dict[str, Any]] | None = None
    max_tool_rounds: int = 0
    metadata: dict[str, str] | None = None
    safety_identifier: str | None = None
    max_tool_calls: int | None = None  # the file searches one response may make

    def __post_init__(self) -> None:
        self.admitted_as = self.model  # the model the batch's AI call was counted for
        self.tools_called: list[str] = []  # the tools the reply's rounds called (names)
        self.responses: list[str] = []  # every response asked for the batch, its rounds'
        self.first_max_output_tokens = self.max_output_tokens

    @property
    def key(self) -> str:
        return self.message_sids[0]

    def reply(self) -> ResponseState:
        """The batch's finished response, with text: polled if it was asked before,
        asked otherwise; asked once more without images if OpenAI refused one of them.
        AIRetryableError while it runs."""
        try:
            return self._reply()
        except AIPermanentError as error:
            if self.images_left_out or self.without_images is None or error.code not in IMAGE_ERRORS:
                raise
            count("AIImagesRefused")
            logger.warning("OpenAI refused an image: asking without the images", extra={"code": error.code})
        self._leave_images_out()
        return self._reply()

    def _leave_images_out(self) -> None:
        if self.without_images is not None:
            self.input = self.body = self.without_images
            self.images_left_out = True

    def _reply(self) -> ResponseState:
        same: AIRequest | None = None
        found = staged_messages.ai_requests(self.conversation_id, self.message_sids)
        for sid, request in found.items():
            if request.openai_conversation_id != self.openai_conversation:
                # Asked on a conversation that was replaced since: its turn went with it.
                staged_messages.drop_ai_request(self.conversation_id, sid)
            elif set(request.message_sids) == set(self.message_sids):
                same = request
                if sid != self.key:
                    staged_messages.drop_ai_request(self.conversation_id, sid)
                    staged_messages.keep_ai_request(self.conversation_id, self.key, request)
            else:
                self._withdraw(request)
                staged_messages.drop_ai_request(self.conversation_id, sid)
        if same is None:
            return self._ask(recovered=False)
        if same.images_left_out:  # an earlier attempt's image was refused
            self._leave_images_out()
        if same.tool_round > 0 or same.calls:
            self.newer = None  # calls were made (or are to be): answered as they are
        if same.response_id is not None and same.calls:  # its calls were to be made: the next round
            return self._ask_round(same, list(same.calls), recovered=False)
        if same.response_id is None and same.tool_round > 0:  # a round's answer was lost
            self._remove_round_copies(same.answering)
            return self._ask_round(same, same.answering, recovered=True)
        if same.response_id is None:  # asked before, and the answer was lost (or discarded)
            self._remove_copies()
            if self.newer is not None and self.newer():  # its answer would be discarded
                staged_messages.drop_ai_request(self.conversation_id, self.key)
                raise NewerFragments("Newer fragments came before the batch was asked again")
            return self._ask(recovered=True)
        earlier = self._stored_reply(same)
        if earlier is not None:
            return earlier
        state = ai.retrieve_response(self.client, same.response_id, self.budget)
        if state is None:  # OpenAI no longer knows it: its turn may be there
            self._remove_copies()
            return self._ask(recovered=True)
        return self._finish(same, state)

    # --- asking and waiting ------------------------------------------------------------

    def _ask(self, recovered: bool) -> ResponseState:
        request = AIRequest(
            message_sids=self.message_sids,
            window_id=self.window_id,
            openai_conversation_id=self.openai_conversation,
            requested_at=clock.iso(clock.now()),
            recovered=recovered,
            images_left_out=self.images_left_out,
        )
        again = None
        if self.images_left_out or self.model != self.admitted_as:
            again = f"asked of {self.model}" + (" without images" if self.images_left_out else "")
        return self._create(request, self.input, None, on_refusal=None, asked_again=again)

    def _ask_round(self, earlier: AIRequest, calls: list[AskedCall], recovered: bool) -> ResponseState:
        """The next round: the outputs of `calls` (recorded by Call Tools), asked for on the
        conversation that holds the calls; the last round allows no further call."""
        outputs = tool_calls.recorded_outputs(
            self.tenant,
            self.conversation_id,
            self.key,
            calls,
            missing=tool_rules.CANCELLED if recovered else None,
        )
        if outputs is None:
            raise ToolCallsRequested(
                f"{len(calls)} tool call(s) to make before round {earlier.tool_round + 1}"
            )
        number = earlier.tool_round if recovered else earlier.tool_round + 1
        request = earlier.model_copy(
            update={
                "tool_round": number,
                "answering": calls,
                "called": earlier.called if recovered else [*earlier.called, *(call.name for call in calls)],
                "calls": [],
                "response_id": None,
                "recovered": recovered,
                "requested_at": clock.iso(clock.now()),
            }
        )
        round_input: list[dict[str, Any]] = [
            {"type": "function_call_output", "call_id": call.call_id, "output": output}
            for call, output in zip(calls, outputs, strict=True)
        ]
        choice = "none" if number >= self.max_tool_rounds else None
        again = f"asked of {self.model} with the outputs of tool round {number}"
        return self._create(request, round_input, choice, on_refusal=earlier, asked_again=again)

    def _create(
        self,
        request: AIRequest,
        model_input: str | ResponseInputParam | list[dict[str, Any]],
        tool_choice: str | None,
        on_refusal: AIRequest | None,
        asked_again: str | None,
    ) -> ResponseState:
        """Keep `request`, then ask (counted as one more AI call when `asked_again` names
        how); a request OpenAI refused leaves `on_refusal` kept (the round it followed) or
        nothing (the first), so that the next attempt asks the same way."""
        staged_messages.keep_ai_request(self.conversation_id, self.key, request)  # before asking
        if asked_again is not None and self.asked_again_as is not None:
            self.asked_again_as(asked_again)
        try:
            state = self._create_response(model_input, tool_choice)
        except (AIRetryableError, AIPermanentError, AIModelUnavailable, OpenAIConversationGone) as error:
            if not request.recovered and not ai.outcome_unknown(error):  # refused: nothing was asked
                if on_refusal is None:
                    staged_messages.drop_ai_request(self.conversation_id, self.key)
                else:
                    staged_messages.keep_ai_request(self.conversation_id, self.key, on_refusal)
            raise
        request = request.model_copy(
            update={"response_id": state.id, "responses": [*request.responses, state.id]}
        )
        staged_messages.keep_ai_request(self.conversation_id, self.key, request)
        logger.info(
            "Reply requested",
            extra={"response_id": state.id, "recovered": request.recovered, "round": request.tool_round},
        )
        return self._finish(request, state)

    def _create_response(
        self, model_input: str | ResponseInputParam | list[dict[str, Any]], tool_choice: str | None
    ) -> ResponseState:
        """One create; a conversation holding a call without its output (a round that was
        interrupted for good) has it closed with a "cancelled" output, then is asked again."""
        for closing in (True, False):
            try:
                return ai.create_response(
                    self.client,
                    conversation=self.openai_conversation,
                    user_turn=model_input,  # type: ignore[arg-type]
                    model=self.model,
                    instructions=self.instructions,
                    max_output_tokens=self.max_output_tokens,
                    budget=self.budget,
                    context_tokens=AnswerSettings.get().openai_max_context_tokens,
                    reasoning_effort=_reasoning_effort(self.model),
                    tools=self.tools,
                    tool_choice=tool_choice,
                    metadata=self.metadata,
                    safety_identifier=self.safety_identifier,
                    max_tool_calls=self.max_tool_calls,
                )
            except AIPermanentError as error:
                if not (
                    closing
                    and ai.holds_unanswered_call(error)
                    and ai.close_unanswered_calls(
                        self.client, self.openai_conversation, tool_rules.CANCELLED, self.budget
                    )
                ):
                    raise
        raise AssertionError("unreachable")

    def _finish(self, request: AIRequest, state: ResponseState) -> ResponseState:
        self.tools_called = request.called
        self.responses = request.responses or [state.id]
        state = ai.wait_for(
            self.client, state, self.budget, stop=self.newer, while_waiting=self.while_waiting
        )
        if state.finished and self.tokens_spent is not None:
            self.tokens_spent(state)
        if self.newer is not None and (not state.finished or self.newer()):
            self._discard(request, state)
            raise NewerFragments(f"OpenAI response {state.id} discarded for newer fragments")
        if state.status == "completed" and state.calls:
            return self._tool_round(request, state)
        filtered = state.status == "incomplete" and state.incomplete_reason == ai.CONTENT_FILTER
        if state.text and state.status in ("completed", "incomplete") and not filtered:
            if state.status == "incomplete":
                logger.warning("Reply cut short", extra={"reason": state.incomplete_reason})
                count("AIRepliesCut")
            if request.recovered:
                self._remove_copies(keep=state)
            return state
        # Failed, cancelled, filtered or no text: remove the turn it may have left.
        own = exchange_of(self._exchanges(), state.item_ids, self.body, state.text)
        self._delete([own] if own else [])
        staged_messages.drop_ai_request(self.conversation_id, self.key)
        if self._room_for_reasoning(state):
            return self._ask(recovered=False)
        reason = state.error_code or state.incomplete_reason
        described = f"OpenAI response {state.id} {state.status} ({reason})"
        if state.status == "cancelled" or state.error_code in ai.RETRYABLE_FAILURES:
            raise AIRetryableError(described)
        if filtered:
            count("AIRepliesFiltered")
            logger.warning("Reply stopped by OpenAI's content filter: not sent")
        raise AIPermanentError(described, state.error_code or state.incomplete_reason)

    def _tool_round(self, request: AIRequest, state: ResponseState) -> ResponseState:
        """The response asks for calls: kept with the request; the next round once Call
        Tools recorded their outputs (ToolCallsRequested until then)."""
        calls = list(state.calls)
        if request.calls != calls:
            request = request.model_copy(update={"calls": calls})
            staged_messages.keep_ai_request(self.conversation_id, self.key, request)
        self.newer = None
        return self._ask_round(request, calls, recovered=False)

    def _room_for_reasoning(self, state: ResponseState) -> bool:
        """Whether to ask once more, with more output tokens, after a response that spent
        them all on reasoning and has no text (its turn removed): once, counted as one more
        AI call; a reasoning model's reasoning counts in max_output_tokens."""
        room = more_room(self.first_max_output_tokens)
        if state.text or state.incomplete_reason != ai.MAX_OUTPUT_TOKENS:
            return False
        if state.max_output_tokens is None or state.max_output_tokens >= room:
            return False
        count("AIRepliesOutOfRoom")
        logger.warning("No text: the output tokens went to reasoning; asking with more", extra={"room": room})
        self.max_output_tokens = room
        if self.asked_again_as is not None:
            self.asked_again_as(f"asked of {self.model} with {room} output tokens")
        return True

    def _discard(self, request: AIRequest, state: ResponseState) -> None:
        """Stop the response if it still runs and remove the turn it left (its input and
        output, once completed; and a lost earlier request's copy); the batch is asked for
        again, as a whole."""
        if not state.finished:
            state = ai.cancel_response(self.client, state.id, self.budget) or state
        # Its response is no longer to be sent: if the removal below is cut short, the
        # state's retry finds the request without it, removes what is left of the turn
        # and asks again, whether or not it still has newer fragments to merge.
        forgotten = request.model_copy(update={"response_id": None})
        staged_messages.keep_ai_request(self.conversation_id, self.key, forgotten)
        if request.recovered:
            self._remove_copies()
        else:  # whatever its final status: even a cancelled response may have kept its input
            found = self._exchanges()
            own = exchange_of(found, state.item_ids, self.body, state.text)
            # Not whole: an earlier attempt removed its reply and ran out of time before its
            # input (_delete removes replies first), which is this batch's unanswered copy.
            self._delete([own] if own else self._copies(found, self.body))
        staged_messages.drop_ai_request(self.conversation_id, self.key)
        count("RepliesDiscarded")
        logger.info("Reply discarded for newer fragments", extra={"response_id": state.id})

    def _stored_reply(self, request: AIRequest) -> ResponseState | None:
        """The reply an earlier window stored for the same response (no API call)."""
        if request.window_id == self.window_id:
            return None
        turn = turns.get(self.conversation_id, assistant_turn_id(request.window_id))
        if turn is None or not turn.response_id or turn.response_id != request.response_id or not turn.body:
            return None
        return ResponseState(
            id=turn.response_id,
            status="completed",
            text=turn.body,
            model=turn.model or "",
            item_ids=tuple(turn.item_ids),
            prompt_tokens=turn.prompt_tokens,
            completion_tokens=turn.completion_tokens,
            total_tokens=turn.total_tokens,
        )

    # --- the turns earlier requests left --------------------------------------------------

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

    def _remove_round_copies(self, calls: list[AskedCall]) -> None:
        """A round's request whose outcome is unknown may have added its outputs (and the
        reply that followed them): remove them, newest first, before it is asked again."""
        ids = {call.call_id for call in calls}
        items = ai.newest_items(self.client, self.openai_conversation, self.budget, limit=50)
        stray: list[str] = []
        for item in items:  # newest first: the reply, then the outputs it followed
            stray.append(item.id)
            if item.kind == "function_call_output" and item.call_id in ids:
                ids.discard(item.call_id)
                if not ids:
                    break
        if ids == {call.call_id for call in calls}:
            return  # none of its outputs is there: it was not carried out
        ai.delete_items(self.client, self.openai_conversation, stray, self.budget)
        count("AIStrayTurnsRemoved")
        logger.warning("A lost tool round's outputs removed", extra={"items": len(stray)})

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


def _reasoning_effort(model: str) -> ReasoningEffort:
    """OPENAI_REASONING_EFFORT for a model that takes one (None: the model's own)."""
    effort = AnswerSettings.get().openai_reasoning_effort
    return (effort or None) if openai_models.takes_reasoning_effort(model) else None
