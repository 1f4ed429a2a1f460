"""A person's data, as pure rules: which Twilio messages and media and which OpenAI responses
the service made for a conversation (the ids `forget` deletes at the vendors), and a
person's turns as `export` gives them back (functions/personal_data/forgetting.py,
export.py; what each item keeps once forgotten: functions/personal_data/forgetting_store.py;
docs/personal-data.md)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from functions.storage.models import StagedMessage, Turn

# A Twilio media URL: .../Accounts/<AC>/Messages/<MM|SM>/Media/<ME>.
MEDIA_URL = re.compile(r"/Messages/((?:MM|SM)[0-9a-fA-F]{32})/Media/(ME[0-9a-fA-F]{32})")


@dataclass
class VendorIds:
    """What the service made at the vendors for one conversation, by id."""

    twilio_messages: list[str] = field(default_factory=list)  # inbound first, then ours
    twilio_media: list[tuple[str, str]] = field(default_factory=list)  # (MessageSid, MediaSid)
    openai_responses: list[str] = field(default_factory=list)
    openai_conversation: str | None = None


def vendor_ids(staged: list[StagedMessage], turns: list[Turn], openai_conversation: str | None) -> VendorIds:
    """The Twilio messages the person sent (the staged messages' and user turns' SIDs) and
    those we sent them (reply parts, resends, templates, fallbacks: every SID a status was
    reported for too), their media, and the OpenAI responses asked for them."""
    inbound: list[str] = [m.message_sid for m in staged]
    ours: list[str] = []
    media: list[tuple[str, str]] = []
    responses: list[str] = [m.ai_response_id for m in staged if m.ai_response_id]
    for message in staged:
        media += [m for a in message.media if (m := media_of(a.url))]
        if message.ai_request and message.ai_request.response_id:
            responses += [*message.ai_request.responses, message.ai_request.response_id]
    for turn in turns:
        if turn.role == "user":
            inbound += [*turn.message_sids, *([turn.first_message_sid] if turn.first_message_sid else [])]
            media += [m for a in turn.media if (m := media_of(a.url))]
            ours += [turn.fallback_message_sid] if turn.fallback_message_sid else []
        else:
            ours += turn.message_sids
            ours += [turn.template_sid] if turn.template_sid else []
            ours += [r.sid for r in turn.resends.values() if r.sid]
        ours += list(turn.deliveries)
        responses += [*turn.response_ids, *([turn.response_id] if turn.response_id else [])]
    return VendorIds(
        twilio_messages=list(dict.fromkeys([*inbound, *ours])),
        twilio_media=list(dict.fromkeys(media)),
        openai_responses=list(dict.fromkeys(responses)),
        openai_conversation=openai_conversation,
    )


def media_of(url: str | None) -> tuple[str, str] | None:
    """The (MessageSid, MediaSid) of a Twilio media URL; None for another URL."""
    found = MEDIA_URL.search(url or "")
    return (found.group(1), found.group(2)) if found else None


def exported_turn(turn: Turn) -> dict[str, Any]:
    """One turn as `export` gives it back: who wrote it, what, when, and what became of it."""
    person = turn.role == "user"
    return {
        "turn_id": turn.turn_id,
        "written_by": "you" if person else (turn.written_by or "assistant"),
        "text": turn.body,
        "at": (turn.first_received_at or turn.created_at) if person else (turn.sent_at or turn.created_at),
        "status": turn.status,
        **({"answered_at": turn.answered_at} if person and turn.answered_at else {}),
        **(
            {"media": [{"kind": m.kind, "content_type": m.content_type} for m in turn.media]}
            if turn.media
            else {}
        ),
        **({"transcripts": turn.transcripts} if turn.transcripts else {}),
        **({"message_sids": turn.message_sids} if turn.message_sids else {}),
        "deliveries": [
            {"message_sid": sid, "status": d.status, "error_code": d.error_code, "at": d.at}
            for sid, d in sorted(turn.deliveries.items(), key=lambda pair: pair[1].at)
        ],
    }


def exported_message(message: StagedMessage) -> dict[str, Any]:
    """A message not answered (yet): what the person wrote, when."""
    return {
        "message_sid": message.message_sid,
        "text": message.body,
        "at": message.received_at,
        "status": "set_aside" if message.failed_in else "waiting",
        **({"media": [{"content_type": m.content_type} for m in message.media]} if message.media else {}),
    }
