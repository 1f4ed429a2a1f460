"""Generate Reply: one OpenAI request per batch, its answer stored as the assistant turn."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from functions import clock
from functions.answer import openai_responses, turn_input, turns
from functions.answer.ai_requests import BatchRequest
from functions.answer.openai_responses import Budget, OpenAIConversationGone, ResponseState
from functions.answer.settings import AnswerSettings, OpenAISettings
from functions.answer.typing_indicator import TypingIndicator
from functions.assistant import assistant_profiles
from functions.assistant.assistant_profile import AssistantProfile
from functions.assistant.settings import AssistantSettings
from functions.batching import batch_windows
from functions.batching.rules.debounce import may_answer_again, newer_fragments_arrived
from functions.contract import GenerateInput, ReplySummary
from functions.delivery.rules import sms_segments
from functions.errors import AICredentialsRefused, AIModelUnavailable, AIPermanentError
from functions.guards import consent, limits
from functions.guards.settings import GuardSettings
from functions.handoff import pausing
from functions.intake.inbound import Channel
from functions.observability import count, logger
from functions.storage.models import Conversation, Turn
from functions.tenancy import conversations, secrets, tenants
from functions.tenancy.fresh_credentials import with_fresh_credentials

NoReply = Literal["nobody", "human"]


def generate_reply(task: GenerateInput) -> ReplySummary:
    """Ask OpenAI for the reply to the user turn; store it as the assistant turn. A retry
    after the reply was stored does not call OpenAI again, and no attempt asks twice for
    the same messages (functions/answer/ai_requests.py). No AI call for an empty batch (an
    earlier run answered its messages) or one handed off to a person. With `on_newer: merge`,
    a reply discarded for newer fragments raises NewerFragments: the run catches it, merges
    again and asks again, counting it in `regenerations`."""
    if task.batch.message_count == 0 or task.rules.answer == "human":
        return _no_reply(task, "nobody" if task.batch.message_count == 0 else "human")
    turn = turns.get(task.conversation_id, task.assistant_turn_id) or _new_assistant_turn(task)
    if turn is None:  # the conversation waits for a person (functions/handoff/pausing.py)
        return _no_reply(task, "human")
    return ReplySummary(
        answered_by="limited" if turn.status == "limited" else "ai",
        reply_chars=len(turn.body),
        prompt_tokens=turn.prompt_tokens,
        completion_tokens=turn.completion_tokens,
        total_tokens=turn.total_tokens,
        regenerations=task.regenerations,
    )


def _no_reply(task: GenerateInput, answered_by: NoReply) -> ReplySummary:
    return ReplySummary(
        answered_by=answered_by,
        reply_chars=0,
        prompt_tokens=0,
        completion_tokens=0,
        total_tokens=0,
        regenerations=task.regenerations,
    )


def newer_fragments_check(task: GenerateInput, merged_at: str) -> Callable[[], bool] | None:
    """While the reply is generated: did the batch window count a fragment after the
    batch was merged (at `merged_at`), early enough to be answered in this reply? None
    when the rules allow no (more) regeneration for this batch."""
    if not merged_at or not may_answer_again(
        task.rules, task.regenerations, task.batch.message_count, task.batch_limit
    ):
        return None
    merged_ms = clock.iso_to_ms(merged_at)

    def newer() -> bool:
        window = batch_windows.get(task.conversation_id)
        if window is None or window.window_id != task.window_id:
            return False
        return newer_fragments_arrived(task.rules, window, merged_ms, clock.epoch_ms(clock.now()))

    return newer


def _new_assistant_turn(task: GenerateInput) -> Turn | None:
    conversation = conversations.require(task.conversation_id)
    user_turn = turns.require(task.conversation_id, task.user_turn_id)
    held_back = consent.held_back_turn(task, conversation, user_turn)
    if held_back is not None:
        return held_back  # no AI call
    if pausing.waits_for_a_person(conversation):
        return pausing.handoff_turn(task, conversation)  # no AI call
    limited = limits.admit_ai_call(conversation, task.batch.message_sids)  # counted once per batch
    if limited is not None:
        return limits.store_limited_turn(task, limited, limits.notice_of(conversation))  # no AI call
    typing = TypingIndicator(conversation, user_turn)
    typing.show()  # a reply will follow: "typing…" on WhatsApp while it is written
    answer = _reply_with_a_fresh_key_if_refused(task, conversation, user_turn, typing)
    reply = answer.state
    text, cut_by = _capped(conversation, reply.text)
    turn = Turn.assistant(
        task,
        status="generated",
        body=text,
        limited=cut_by,
        response_id=reply.id,
        item_ids=list(reply.item_ids),
        model=reply.model,
        profile_key=answer.profile_key or None,
        profile_version=answer.profile_version or None,
        tools_called=list(answer.tools_called),
        response_ids=list(answer.responses),
        prompt_tokens=reply.prompt_tokens,
        completion_tokens=reply.completion_tokens,
        total_tokens=reply.total_tokens,
    )
    turns.put(turn)
    logger.info("Reply generated", extra={"reply_chars": len(reply.text), "total_tokens": reply.total_tokens})
    return turn


def _capped(conversation: Conversation, text: str) -> tuple[str, str | None]:
    """The reply cut to what a batch may send: its parts (MAX_REPLY_PARTS_PER_BATCH) and, on
    SMS, billed per segment, its segments (MAX_SMS_SEGMENTS_PER_REPLY); and the limit that
    cut it last, if one did (the assistant turn's `limited`)."""
    text, capped = limits.cap_reply_parts(text)
    limited = limits.Limit.REPLY_PARTS.value if capped else None
    if conversation.channel is Channel.SMS:
        text, cut = sms_segments.cap_segments(text, GuardSettings.get().max_sms_segments_per_reply)
        if cut:
            count("SmsSegmentsCapped")
            limited = sms_segments.LIMITED
    return text, limited


def _max_output_tokens(conversation: Conversation) -> int:
    """OPENAI_MAX_OUTPUT_TOKENS; on SMS, OPENAI_MAX_OUTPUT_TOKENS_SMS if lower."""
    settings = AnswerSettings.get()
    if conversation.channel is Channel.SMS:
        return min(settings.openai_max_output_tokens, settings.openai_max_output_tokens_sms)
    return settings.openai_max_output_tokens


@dataclass(frozen=True)
class Reply:
    """The batch's finished response, and the tools its rounds called (names)."""

    state: ResponseState
    tools_called: tuple[str, ...]
    responses: tuple[str, ...]
    profile_key: str
    profile_version: int


def _reply_with_a_fresh_key_if_refused(
    task: GenerateInput, conversation: Conversation, user_turn: Turn, typing: TypingIndicator
) -> Reply:
    """The batch's reply (_ask). If OpenAI refuses the key we hold (401: it may have been
    rotated since it was cached), the batch is asked once more with the key read again (safe:
    the request kept on the batch, functions/answer/ai_requests.py;
    functions/tenancy/fresh_credentials.py)."""
    return with_fresh_credentials(
        lambda fresh: secrets.openai_api_key_for(conversation, fresh=fresh),
        lambda key: _ask(task, conversation, user_turn, typing, key),
        AICredentialsRefused,
        "OpenAI",
    )


def _ask(
    task: GenerateInput, conversation: Conversation, user_turn: Turn, typing: TypingIndicator, api_key: str
) -> Reply:
    user_turn, profile = _pinned_profile(conversation, user_turn)
    request = _batch_request(task, conversation, user_turn, profile, api_key)
    request.while_waiting = typing.refresh_if_due
    limits.count_what_it_spends(request, conversation)  # a request asked again, tokens
    if not request.openai_conversation:
        request.openai_conversation = _start_conversation(request)
    state = _reply_with_a_served_model(request, AnswerSettings.get().openai_fallback_model)
    return Reply(
        state,
        tuple(request.tools_called),
        tuple(request.responses),
        user_turn.profile_key or "",
        user_turn.profile_version or 0,
    )


def _batch_request(
    task: GenerateInput, conversation: Conversation, user_turn: Turn, profile: AssistantProfile, api_key: str
) -> BatchRequest:
    """The batch's one request to OpenAI: its input (within its own time budget, and the
    same turn without its images, if it has any), model and instructions."""
    settings = AnswerSettings.get()
    client = openai_responses.client_for(api_key)
    model_input, without_images = turn_input.inputs_for_model(conversation, user_turn, client)
    tenant = conversation.tenant_account_sid or ""
    return BatchRequest(
        conversation_id=task.conversation_id,
        window_id=task.window_id,
        message_sids=task.batch.message_sids,
        input=model_input,
        body=turn_input.text_of(model_input),
        openai_conversation=conversation.openai_conversation_id or "",
        client=client,
        budget=Budget(OpenAISettings.get().openai_timeout_seconds),
        model=conversation.ai_model or profile.model or settings.openai_model,
        instructions=conversation.ai_instructions or profile.instructions or settings.openai_instructions,
        max_output_tokens=_max_output_tokens(conversation),
        without_images=without_images,
        newer=newer_fragments_check(task, user_turn.created_at),
        tenant=tenant,
        tools=[*(tool.for_openai() for tool in profile.tools), *_knowledge(profile, tenant)],
        max_tool_calls=profile.knowledge.max_tool_calls if profile.knowledge else None,
        max_tool_rounds=_max_tool_rounds(profile),
        metadata={
            "tenant": tenant,
            "conversation": task.conversation_id,
            "window": task.window_id,
            "profile": f"{user_turn.profile_key}@{user_turn.profile_version}"
            if user_turn.profile_key
            else "",
        },
        safety_identifier=safety_identifier(task.conversation_id),
    )


def _max_tool_rounds(profile: AssistantProfile) -> int:
    """MAX_TOOL_ROUNDS, or the profile's own if lower."""
    most = AssistantSettings.get().max_tool_rounds
    return min(most, profile.max_tool_rounds or most)


def _knowledge(profile: AssistantProfile, tenant: str) -> list[dict[str, object]]:
    """The profile's file_search over its vector stores, if they are all the tenant's own
    (recorded on its item by `infra.assistants knowledge add`; checked when the profile was
    written, and here again: a store is never searched for another tenant's customer)."""
    if profile.knowledge is None:
        return []
    found = tenants.find(tenant) if tenant else None
    foreign = profile.stores_not_among(found.vector_store_ids if found else [])
    if foreign:
        count("KnowledgeStoresRefused")
        logger.error(
            "The assistant profile names vector stores not the tenant's: no knowledge",
            extra={"stores": foreign},
        )
        return []
    return [profile.knowledge.for_openai()]


def safety_identifier(conversation_id: str) -> str:
    """What OpenAI is told identifies the person (its abuse monitoring): the conversation's
    id, hashed again to fit OpenAI's 64 characters; it holds nothing of the number."""
    return hashlib.sha256(conversation_id.encode()).hexdigest()[:32]


def _pinned_profile(conversation: Conversation, user_turn: Turn) -> tuple[Turn, AssistantProfile]:
    """The assistant profile the batch is asked with: the version pinned on its user turn,
    or else the one in force now (the project's, else the tenant's), pinned there first, so
    that every retry asks the same way. No profile: an empty one (the settings' defaults)."""
    if user_turn.profile_version is None:
        found = _profile_in_force(conversation)
        key, version = (found.profile_key, found.version) if found else ("", 0)
        user_turn = turns.pin_profile(user_turn.conversation_id, user_turn.turn_id, key, version)
    if not user_turn.profile_key or not user_turn.profile_version:
        return user_turn, AssistantProfile()
    pinned = assistant_profiles.get(user_turn.profile_key, user_turn.profile_version)
    if pinned is None:
        raise AIPermanentError(
            f"assistant profile {user_turn.profile_key} version {user_turn.profile_version} is gone"
        )
    return user_turn, pinned.profile


def _profile_in_force(conversation: Conversation) -> assistant_profiles.ProfileVersion | None:
    tenant = conversation.tenant_account_sid
    if not tenant:
        return None
    if conversation.project_id:
        found = assistant_profiles.newest(assistant_profiles.profile_key(tenant, conversation.project_id))
        if found is not None:
            return found
    return assistant_profiles.newest(assistant_profiles.profile_key(tenant))


def _reply_with_a_served_model(request: BatchRequest, fallback_model: str) -> ResponseState:
    """The reply from the configured model; from the fallback model (if set) when OpenAI
    does not serve the configured one. AIModelUnavailable when neither is served."""
    try:
        return _reply(request)
    except AIModelUnavailable as error:
        unavailable = request.model
        if not fallback_model or fallback_model == unavailable:
            raise AIModelUnavailable(
                f"OpenAI does not serve the model {unavailable!r} (no other OPENAI_FALLBACK_MODEL): {error}"
            ) from error
        logger.error(
            "OpenAI does not serve the model: answering with the fallback model",
            extra={"model": unavailable, "fallback_model": fallback_model},
        )
        request.model = fallback_model
    try:
        return _reply(request)
    except AIModelUnavailable as error:
        raise AIModelUnavailable(
            f"OpenAI serves neither the model {unavailable!r} nor the fallback {fallback_model!r}: {error}"
        ) from error


def _reply(request: BatchRequest) -> ResponseState:
    try:
        return request.reply()
    except OpenAIConversationGone:
        # Deleted, or the key now belongs to another project: a new conversation, and the
        # batch is answered on it.
        logger.warning("OpenAI conversation not found: starting a new one")
        count("AIConversationsReplaced")
        request.openai_conversation = _start_conversation(request)
        try:
            return request.reply()
        except OpenAIConversationGone as error:
            raise AIPermanentError("OpenAI: a new conversation is not found either") from error


def _start_conversation(request: BatchRequest) -> str:
    started = openai_responses.start_conversation(request.client, request.conversation_id, request.budget)
    conversations.set_openai_conversation(request.conversation_id, started)
    return started
