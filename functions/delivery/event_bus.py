"""Events for other services: one `batch.answered` event per answered batch on the
service's EventBridge bus (as the seeds' buffer service emits messages.batch.ready), and one
`batch.handed_off` per batch recorded for a person instead (functions/handoff/pausing.py)."""

from __future__ import annotations

import json
from functools import cache
from typing import Any

import boto3

from functions.delivery.settings import EventSettings

SOURCE = "burst-reply"
BATCH_ANSWERED = "batch.answered"
BATCH_HANDED_OFF = "batch.handed_off"
# EventBridge takes an entry of up to 256 KB, counted in UTF-8 bytes of its Detail (and
# Source, DetailType); each text is cut to this many bytes of its JSON (as published: an
# emoji escapes to 12 bytes, `\ud83d\ude00`) and flagged, so that both with the rest fit.
MAX_ENTRY_BYTES = 256 * 1024
MAX_TEXT_BYTES = 100_000


@cache
def _events() -> Any:
    return boto3.client("events")


def publish_batch_answered(detail: dict[str, Any]) -> None:
    publish(BATCH_ANSWERED, detail)


def publish(detail_type: str, detail: dict[str, Any]) -> None:
    encoded = json.dumps(detail)
    size = len(encoded.encode()) + len(SOURCE) + len(detail_type)
    if size > MAX_ENTRY_BYTES:
        raise ValueError(f"{detail_type} is {size} bytes, over EventBridge's {MAX_ENTRY_BYTES}")
    response = _events().put_events(
        Entries=[
            {
                "EventBusName": EventSettings.get().event_bus_name,
                "Source": SOURCE,
                "DetailType": detail_type,
                "Detail": encoded,
            }
        ]
    )
    if response.get("FailedEntryCount"):
        raise RuntimeError(f"EventBridge refused the event: {response['Entries'][0].get('ErrorCode')}")


def encoded_bytes(text: str) -> int:
    """The bytes `text` takes in a published Detail (JSON, UTF-8)."""
    return len(json.dumps(text).encode())


def clip(text: str, max_bytes: int = MAX_TEXT_BYTES) -> tuple[str, bool]:
    """The text, or its longest beginning that takes at most `max_bytes` in the Detail,
    and whether it was cut."""
    if encoded_bytes(text) <= max_bytes:
        return text, False
    kept, over = 0, len(text)  # text[:kept] fits, text[:over] does not
    while over - kept > 1:
        middle = (kept + over) // 2
        kept, over = (middle, over) if encoded_bytes(text[:middle]) <= max_bytes else (kept, middle)
    return text[:kept], True
