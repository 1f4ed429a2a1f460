"""A person's reply added to the chat's OpenAI Conversation as an assistant message, so that
the model sees what the person said when it answers again: `conversations.items.create`
(https://platform.openai.com/docs/api-reference/conversations/create-items), one
`EasyInputMessage` of role `assistant`. Errors are classified as every OpenAI request's are
(functions/answer/openai_responses.py): AIRetryableError for a conversation still busy with
a response (`conversation_locked`), a timeout or a 5xx; OpenAIConversationGone when it is
not found."""

from __future__ import annotations

import openai

from functions.answer import openai_responses as ai
from functions.answer.openai_responses import Budget


def add_assistant_message(client: openai.OpenAI, conversation: str, text: str, budget: Budget) -> str:
    """Add `text` as the assistant's message at the end of the conversation; its item id."""
    added = ai.add_items(
        client, conversation, [{"type": "message", "role": "assistant", "content": text}], budget
    )
    return next(iter(added), "")
