"""Generate Reply: one OpenAI call per batch, its answer stored as the assistant turn."""

from __future__ import annotations

from functions.config import get_settings
from functions.contract import BatchRef, GenerateInput, ReplySummary
from functions.dal import conversations, turns
from functions.dal.models import Turn
from functions.integrations import openai_responses, secrets
from functions.logic import clock, consent, limits, turn_input
from functions.observability import logger


def generate_reply(task: GenerateInput) -> ReplySummary:
    """Ask OpenAI for the reply to the user turn; store it as the assistant turn. A retry
    after the reply was stored does not call OpenAI again. No AI call for an empty batch
    (an earlier run answered its messages) or one handed off to a person."""
    if task.batch.message_count == 0 or task.rules.answer == "human":
        answered_by = "nobody" if task.batch.message_count == 0 else "human"
        return ReplySummary(
            answered_by=answered_by, reply_chars=0, prompt_tokens=0, completion_tokens=0, total_tokens=0
        )
    turn = turns.get(task.conversation_id, task.assistant_turn_id) or _new_assistant_turn(task)
    return ReplySummary(
        answered_by="limited" if turn.status == "limited" else "ai",
        reply_chars=len(turn.body),
        prompt_tokens=turn.prompt_tokens,
        completion_tokens=turn.completion_tokens,
        total_tokens=turn.total_tokens,
    )


def _new_assistant_turn(ref: BatchRef) -> Turn:
    settings = get_settings()
    conversation = conversations.require(ref.conversation_id)
    user_turn = turns.require(ref.conversation_id, ref.user_turn_id)
    if consent.holds_back(conversation, user_turn):
        return limits.store_limited_turn(ref, limits.Limit.OPTED_OUT)  # no AI call
    limited = limits.admit_ai_call(conversation)
    if limited is not None:
        return limits.store_limited_turn(ref, limited)  # no AI call
    client = openai_responses.client_for(secrets.openai_api_key_for(conversation))
    openai_conversation = conversation.openai_conversation_id
    if not openai_conversation:
        openai_conversation = openai_responses.start_conversation(client, ref.conversation_id)
        conversations.set_openai_conversation(ref.conversation_id, openai_conversation)
    reply = openai_responses.generate_reply(
        client,
        openai_conversation,
        turn_input.for_model(conversation, user_turn, client),
        conversation.ai_model or settings.openai_model,
        conversation.ai_instructions or settings.openai_instructions,
    )
    text, capped = limits.cap_reply_parts(reply.text)
    turn = Turn(
        conversation_id=ref.conversation_id,
        turn_id=ref.assistant_turn_id,
        role="assistant",
        status="generated",
        window_id=ref.window_id,
        execution_name=ref.execution_name,
        body=text,
        limited=limits.Limit.REPLY_PARTS.value if capped else None,
        response_id=reply.response_id,
        model=reply.model,
        prompt_tokens=reply.prompt_tokens,
        completion_tokens=reply.completion_tokens,
        total_tokens=reply.total_tokens,
        created_at=clock.iso(clock.now()),
    )
    turns.put(turn)
    logger.info("Reply generated", extra={"reply_chars": len(reply.text), "total_tokens": reply.total_tokens})
    return turn
