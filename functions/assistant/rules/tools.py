"""The rules of a tool call, no I/O: what makes two calls the same call, what the endpoint
is sent, and what the model is told when there is no answer to give it.

Two calls are the same call when they are in the same batch (its first message, which a
retry, a rerun of the batch in a later window and a regenerated response all share), of
the same tool, with the same arguments (compared as JSON values, not as text). Its key is
the claim's key in the ToolCalls table and the endpoint's `Idempotency-Key`: the same for
every attempt at it. A model that asks again in other words ("12345" for "#12345") makes
another call; one whose outcome is recorded is never made again."""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

# What the model is told in place of an answer (as the function_call_output).
CANCELLED = json.dumps({"error": "cancelled: this call was not made"})
IN_DOUBT = json.dumps(
    {
        "error": "outcome unknown: the call was sent and no answer came back, so it may or may "
        "not have been carried out. It is not repeated. Do not tell the person it worked or "
        "that it failed: say it is being checked."
    }
)
UNAVAILABLE = json.dumps({"error": "the tool could not be reached; it was not carried out"})


NEEDS_CONFIRMATION = json.dumps(
    {
        "status": "not done: this action needs the person's yes. Tell them exactly what will be done "
        "and ask them to confirm; it is done if their next message says yes and you ask for it again."
    }
)
NOT_CONFIRMED = json.dumps({"status": "not done: the person did not confirm it"})
# Words that deny or hold back a yes ("yes, but not that one", "wait").
_NOT_A_YES = {"no", "not", "don't", "dont", "never", "wait", "stop", "nope", "cancel", "but"}
_WORDS = re.compile(r"[^\W\d_]+(?:'[^\W\d_]+)?")


def said_yes(text: str, keywords: tuple[str, ...]) -> bool:
    """Whether a short message says yes (one of `keywords`, CONFIRM_KEYWORDS) and nothing
    that holds it back; a long message is never taken for a yes."""
    words = _WORDS.findall(text.lower())
    if not words or len(words) > 8 or _NOT_A_YES.intersection(words):
        return False
    joined = f" {' '.join(words)} "
    return any(f" {' '.join(_WORDS.findall(k.lower()))} " in joined for k in keywords if k.strip())


def confirmation_key(tenant: str, conversation_id: str, name: str, arguments: dict[str, Any]) -> str:
    """What a proposal and its confirmation share: the same tool and arguments in the same
    conversation, whatever the batch."""
    return "confirm#" + call_key(tenant, conversation_id, "", name, arguments)


def unknown_tool(name: str) -> str:
    return json.dumps({"error": f"there is no tool named {name!r}"})


def bad_arguments() -> str:
    return json.dumps({"error": "the arguments are not a JSON object"})


def arguments_of(text: str) -> dict[str, Any] | None:
    """The arguments the model wrote (a JSON object), or None."""
    try:
        value = json.loads(text or "{}")
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def call_key(tenant: str, conversation_id: str, batch_key: str, name: str, arguments: dict[str, Any]) -> str:
    """The call's key (see above): 32 hex digits."""
    canonical = json.dumps(arguments, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    text = "\x1f".join((tenant, conversation_id, batch_key, name, canonical))
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def request_body(name: str, arguments: dict[str, Any], call_id: str, conversation_id: str) -> bytes:
    """What the endpoint is sent (the signature covers these exact bytes)."""
    body = {"name": name, "arguments": arguments, "call_id": call_id, "conversation": conversation_id}
    return json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode()
