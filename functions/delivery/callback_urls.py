"""Where Twilio reports each message we send: the StatusCallback URL of a reply part, the
WhatsApp template, the fallback reply and a part's resend. Shared by what sends them
(functions/delivery/send_once.py) and by the status callback that receives the reports
(functions/entry_points/status_callback.py)."""

from __future__ import annotations

from urllib.parse import quote

from functions.intake.settings import PublicUrlSettings
from functions.registry import STATUS_CALLBACK

# The API resource of the StatusCallback function: the conversation, the batch window, and
# which message: a reply part's index (0, 1, ...), `template`, `fallback`, or a part sent
# again after 63018 (its index and RESENT: `1r`).
(STATUS_CALLBACK_RESOURCE,) = STATUS_CALLBACK.routes
TEMPLATE, FALLBACK, RESENT = "template", "fallback", "r"


def status_callback_url(conversation_id: str, window_id: str, message: str) -> str | None:
    """The StatusCallback of a message we send, with our connection overrides, so that
    Twilio retries a callback we could not take; None without a public base URL. Each path
    segment is percent-encoded (`whatsapp:+1555 x` → `whatsapp%3A%2B1555%20x`), so any
    conversation id makes one segment that no client or proxy rewrites; API Gateway hands
    it over still encoded, and the handler decodes it once (functions/handlers/status_callback.py)."""
    base = PublicUrlSettings.get().public_base()
    if not base.url:
        return None
    path = STATUS_CALLBACK_RESOURCE.format(
        conversation=quote(conversation_id, safe=""),
        window=quote(window_id, safe=""),
        message=quote(message, safe=""),
    )
    return base.given_to_twilio(path)
