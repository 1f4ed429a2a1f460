"""WhatsApp's "typing…" indicator through Twilio (public beta): a POST to
`https://messaging.twilio.com/v2/Indicators/Typing.json` with `messageId` (the SID of the
message being answered, SM... or MM...) and `channel=whatsapp`, authenticated with the
account's SID and auth token. Twilio marks that message read and shows the indicator
until the reply is delivered or for 25 s
(https://www.twilio.com/docs/whatsapp/api/typing-indicators-resource). It is shown when
Twilio answers `{"success": true}`, the resource's one field; a 200 without it is not.

A plain form POST, not the SDK's `messaging.v2.typing_indicator`: Generate Reply sends it,
and loading Twilio's REST client would lengthen that function's cold start (only the
functions that send messages load it). Locally, TWILIO_API_BASE_URL (the Twilio stand-in)
stands for Twilio's messaging host."""

from __future__ import annotations

import requests

from functions.delivery.settings import TwilioSettings
from functions.tenancy.secrets import TwilioCredentials

MESSAGING_BASE_URL = "https://messaging.twilio.com"
TYPING_PATH = "/v2/Indicators/Typing.json"
# The indicator is a courtesy: it never holds the reply up for long.
MAX_TIMEOUT_SECONDS = 3.0


class TypingIndicatorFailed(Exception):
    """Twilio did not show the indicator: its HTTP status and error code, or the
    connection's failure (never the credentials)."""


def show_typing(credentials: TwilioCredentials, message_sid: str) -> None:
    """Show "typing…" in reply to the WhatsApp message `message_sid` (and mark it read)."""
    settings = TwilioSettings.get()
    url = (settings.twilio_api_base_url or MESSAGING_BASE_URL).rstrip("/") + TYPING_PATH
    try:
        answer = requests.post(
            url,
            data={"messageId": message_sid, "channel": "whatsapp"},
            auth=(credentials.account_sid, credentials.auth_token),
            headers={"Accept": "application/json"},
            timeout=min(settings.twilio_timeout_seconds, MAX_TIMEOUT_SECONDS),
        )
    except requests.RequestException as error:
        raise TypingIndicatorFailed(f"Twilio unreachable: {type(error).__name__}") from None
    if answer.status_code >= 400:
        raise TypingIndicatorFailed(f"Twilio HTTP {answer.status_code} code {_code(answer)}")
    if _json(answer).get("success") is not True:
        raise TypingIndicatorFailed(f"Twilio HTTP {answer.status_code} without success")


def _code(answer: requests.Response) -> object:
    return _json(answer).get("code")


def _json(answer: requests.Response) -> dict[str, object]:
    try:
        body = answer.json()
    except ValueError:
        return {}
    return body if isinstance(body, dict) else {}
