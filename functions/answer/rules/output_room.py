"""Room for a reasoning model's reasoning: its reasoning tokens are output tokens, counted
in `max_output_tokens`, and a response that spends them all ends `incomplete`
(`max_output_tokens`) with no text (https://platform.openai.com/docs/guides/reasoning,
"Allocating space for reasoning"). Such a response is asked for once more, with more room."""

from __future__ import annotations

# The most a batch's second request may be given: a reply is at most a few thousand tokens
# (MAX_REPLY_PARTS_PER_BATCH parts of 1,600 characters), and what a response spends past
# the first request's limit is bounded by this.
MAX_OUTPUT_TOKENS_ASKED_AGAIN = 16_384


def more_room(max_output_tokens: int) -> int:
    """The max_output_tokens of the request asked again: twice the first, at most
    MAX_OUTPUT_TOKENS_ASKED_AGAIN (no more room than the first when that is already more)."""
    return max(max_output_tokens, min(2 * max_output_tokens, MAX_OUTPUT_TOKENS_ASKED_AGAIN))
