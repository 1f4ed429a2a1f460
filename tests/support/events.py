"""The corpus of inbound webhooks (tests/events/*.json): Twilio's form fields for each
kind of message people send, as Twilio posts them, read by name. A media URL names its
account as `{AccountSid}`, filled in from the event's AccountSid when it is read."""

from __future__ import annotations

import json
from pathlib import Path

EVENTS = Path(__file__).parent.parent / "events"


def load_event(name: str) -> dict[str, str]:
    """The form fields of `tests/events/<name>.json`."""
    form = json.loads((EVENTS / f"{name}.json").read_text(encoding="utf-8"))
    assert all(isinstance(v, str) for v in form.values()), f"{name}: Twilio posts strings only"
    return {k: v.replace("{AccountSid}", form["AccountSid"]) for k, v in form.items()}


def event_names() -> list[str]:
    return sorted(path.stem for path in EVENTS.glob("*.json"))
