"""What the webhook does with a message from someone it does not answer, the URL Twilio calls
and signs, and what the endpoints Twilio calls accept (docs/deploying.md)."""

from __future__ import annotations

from pydantic import Field

from functions.config import Flag, SettingsModel
from functions.public_url import PublicBase, public_base


class IntakeSettings(SettingsModel):
    """Unknown senders, and the configured answers to messages that are not staged. The three
    answers never go to an opt-out or opt-in keyword, and go to a sender at most once an hour."""

    docs = "deploying.md#the-webhooks-settings"

    auto_create_conversations: Flag = Field(
        False,
        description="Create conversations for unknown senders of the signing tenant's numbers (locally: on).",
    )
    unknown_sender_reply: str = Field(
        "", description="The answer to a sender with no conversation (empty: none)."
    )
    inactive_project_reply: str = Field(
        "", description="The answer to a message to an inactive project (empty: none)."
    )
    channel_not_allowed_reply: str = Field(
        "", description="The answer to a message on a channel the conversation does not allow (empty: none)."
    )


class PublicUrlSettings(SettingsModel):
    """The URL Twilio calls, which its signatures cover, and the connection overrides every
    URL given to Twilio carries (functions/public_url.py)."""

    docs = "deploying.md#the-webhooks-settings"

    webhook_base_url: str = Field(
        "",
        description="The base URL Twilio calls, which signatures cover; a fragment on it sets the overrides.",
    )
    twilio_connection_overrides: str = Field(
        "rc=5&rp=all", description="Twilio's connection overrides, the fragment of every URL Twilio is given."
    )

    def public_base(self) -> PublicBase:
        """WEBHOOK_BASE_URL without its fragment (empty: not set), and the connection
        overrides Twilio's URLs carry: WEBHOOK_BASE_URL's fragment, or the setting."""
        return public_base(self.webhook_base_url, self.twilio_connection_overrides)


class EndpointSettings(SettingsModel):
    """What the webhook and the status callback read of a request before anything else."""

    docs = "deploying.md#the-webhooks-settings"

    webhook_trust_forwarded_headers: Flag = Field(
        False, description="Rebuild the URL from X-Forwarded-Proto and -Host when no base URL is set."
    )
    webhook_max_body_bytes: int = Field(128 * 1024, ge=1024, description="A larger form is refused (413).")
    webhook_max_fields: int = Field(100, ge=10, description="A form with more fields is refused (400).")
