"""Events for other services: one `batch.answered` event per answered batch on the
service's EventBridge bus (as the seeds' buffer service emits messages.batch.ready)."""

from __future__ import annotations

import json
from functools import cache
from typing import Any

import boto3

from functions.config import get_settings

SOURCE = "burst-reply"
BATCH_ANSWERED = "batch.answered"
# EventBridge takes entries up to 256 KB; texts beyond this are cut and flagged.
MAX_TEXT_CHARS = 100_000


@cache
def _events() -> Any:
    return boto3.client("events")


def publish_batch_answered(detail: dict[str, Any]) -> None:
    response = _events().put_events(
        Entries=[
            {
                "EventBusName": get_settings().event_bus_name,
                "Source": SOURCE,
                "DetailType": BATCH_ANSWERED,
                "Detail": json.dumps(detail),
            }
        ]
    )
    if response.get("FailedEntryCount"):
        raise RuntimeError(f"EventBridge refused the event: {response['Entries'][0].get('ErrorCode')}")


def clip(text: str) -> tuple[str, bool]:
    return (text[:MAX_TEXT_CHARS], True) if len(text) > MAX_TEXT_CHARS else (text, False)
