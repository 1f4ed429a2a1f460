"""What the user got from the Twilio stand-in, for the randomized test: a reply part that
Twilio reported failed with 63018 and that was sent again counts once."""

from __future__ import annotations

from typing import Any

from functions.dal import turns


def replies_delivered(harness: Any, user: str, conversation_id: str) -> list[str]:
    """The bodies of the messages sent to `user` (templates aside), in order, a part
    reported failed with 63018 counted once: where it was first sent, by its resend if it
    was sent again (functions/logic/shared/part_resend.py)."""
    resent = {r.owner: r.sid for t in turns.list_of(conversation_id) for r in t.resends.values() if r.sid}
    again = set(resent.values())
    by_sid = {m["sid"]: m for m in harness.stack.twilio.messages}
    return [
        by_sid[resent.get(m["sid"], m["sid"])]["body"]
        for m in harness.stack.twilio.messages
        if m["to"] == user and not m["content_sid"] and m["sid"] not in again
    ]


def parts_resent(conversation_ids: Any) -> int:
    return sum(1 for cid in conversation_ids for t in turns.list_of(cid) for r in t.resends.values() if r.sid)
