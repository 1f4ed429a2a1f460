"""The reply: a batch's one OpenAI request (its input, media, tool rounds, stray turns) and the
Turns table that records it."""
