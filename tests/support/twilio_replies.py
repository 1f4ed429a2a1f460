"""What the user got from the Twilio stand-in, for the randomized test, judged by the
stand-in's own records rather than by what the system wrote down: a reply part sent again
counts once only when the stand-in itself failed the first one with 63018 (a fault it was
told to inject), and every status callback the stand-in made was acknowledged (2xx) or
retried until it was."""

from __future__ import annotations

from typing import Any

from functions.answer import turns

RATE_LIMITED = 63018


def injected_rate_limit(harness: Any) -> set[str]:
    """The MessageSids the Twilio stand-in accepted and then failed with 63018 because a
    fault told it to (its record of each create, with the fault it drew, and the message's
    status as it reported it)."""
    messages = {m["sid"]: m for m in harness.stack.twilio.messages}
    return {
        c["sid"]
        for c in harness.stack.twilio.calls
        if (c["fault"] or {}).get("outcome") == "failed"
        and (c["fault"] or {}).get("error_code") == RATE_LIMITED
        and c["sid"] in messages
        and messages[c["sid"]]["status"] == "failed"
        and messages[c["sid"]]["error_code"] == RATE_LIMITED
    }


def resends(harness: Any, conversation_id: str) -> tuple[dict[str, str], dict[str, str]]:
    """The parts the system recorded as sent again, owner's MessageSid → the resend's: those
    the stand-in's own record justifies (the owner failed with an injected 63018, and the
    resend carries the owner's body), and the others."""
    justified = injected_rate_limit(harness)
    bodies = {m["sid"]: m["body"] for m in harness.stack.twilio.messages}
    recorded = {r.owner: r.sid for t in turns.list_of(conversation_id) for r in t.resends.values() if r.sid}
    good = {
        owner: sid
        for owner, sid in recorded.items()
        if owner in justified and sid in bodies and bodies[sid] == bodies.get(owner)
    }
    return good, {owner: sid for owner, sid in recorded.items() if owner not in good}


def replies_delivered(harness: Any, user: str, conversation_id: str) -> list[str]:
    """The bodies of the messages sent to `user` (templates aside), in order; a part the
    stand-in failed with an injected 63018 and that was sent again counts once, where it was
    first sent. Any other message sent again counts as the second message it is."""
    good, _ = resends(harness, conversation_id)
    again = set(good.values())
    return [
        m["body"]
        for m in harness.stack.twilio.messages
        if m["to"] == user and not m["content_sid"] and m["sid"] not in again
    ]


def callbacks_given_up(harness: Any) -> list[dict[str, Any]]:
    """The status callbacks the stand-in made and gave up on: every attempt of one callback
    (attempt 1, 2, ... as the URL's connection overrides allow) failed or answered non-2xx.
    Each callback's attempts are listed together once it is done (a callback still being
    retried is not listed yet)."""
    given_up: list[dict[str, Any]] = []
    last: dict[str, Any] | None = None
    for attempt in [*harness.stack.twilio.callbacks, {"attempt": 1}]:
        if attempt["attempt"] == 1 and last is not None and not (last["status"] and last["status"] < 300):
            given_up.append(last)
        last = attempt
    return given_up
