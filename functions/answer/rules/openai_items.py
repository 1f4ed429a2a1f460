"""An item of an OpenAI conversation, as far as the service compares them: plain data,
read by the integration (functions/answer/openai_responses.py) and compared by the
rules (functions/answer/rules/conversation_items.py), so that neither imports the other."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ConversationItem:
    """An item of an OpenAI conversation, as far as the service compares them."""

    id: str
    role: str  # user, assistant, or "" for items that are not messages
    text: str
    kind: str = "message"  # the item's type: message, function_call, function_call_output...
    call_id: str = ""  # a function call's, or its output's
