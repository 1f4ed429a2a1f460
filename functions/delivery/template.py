"""The WhatsApp template sent instead of a reply once the person's 24-hour window has
closed (Twilio's 63016), once, whoever asks: Send Reply, a status callback that reports
63016, or a person's reply from a helpdesk (docs/adr/0056-one-send-once-protocol-for-every-message-we.md)."""

from __future__ import annotations

from functions.delivery.send_once import WHATSAPP_TEMPLATE, TurnMessage, send_once
from functions.delivery.settings import DeliverySettings, TwilioSettings
from functions.intake.inbound import Channel
from functions.observability import count, logger
from functions.registry import STATUS_CALLBACK
from functions.storage.models import Conversation


def send_template_once(conversation: Conversation, window_id: str, owner: str) -> str | None:
    """Send the configured WhatsApp template (WHATSAPP_TEMPLATE_CONTENT_SID) for the
    turn's reply, once, whoever asks how many times: the first to claim it (`owner`: the
    MessageSid whose callback said 63016, or Send Reply) sends it, and only that owner
    tries again if its attempt failed, after looking for a message that attempt may have
    sent (send_once.py). It goes through TWILIO_MESSAGING_SERVICE_SID, as Twilio sends
    templates. Its SID, or None when no template (or no Messaging Service) is configured,
    it is not WhatsApp, or another owner sends it. Whoever sends it (this function, Send
    Reply, Conversation Commands) reads the tenant's Twilio credentials in a session tagged
    with the conversation's tenant, never with its own role (which, here, may read every
    tenant's: it checks a claimed tenant's signature)."""
    settings = DeliverySettings.get()
    template = settings.whatsapp_template_content_sid
    if not template or conversation.channel != Channel.WHATSAPP:
        return None
    if template_without_messaging_service():
        count("TemplateNotConfigured")
        return None
    # Within the StatusCallback function's timeout when it sends: a wait, then a create.
    wait = STATUS_CALLBACK.timeout_seconds - TwilioSettings.get().twilio_timeout_seconds - 1
    message = TurnMessage(
        WHATSAPP_TEMPLATE,
        conversation,
        window_id,
        owner=owner,
        content_sid=template,
        messaging_service_sid=settings.twilio_messaging_service_sid,
        content_variables=settings.whatsapp_template_variables or None,
    )
    return send_once(message, receipt_wait=wait)


def template_without_messaging_service() -> bool:
    """Whether the template is configured without the Messaging Service it is sent through
    (Twilio refuses it, 30124): said once per process, as an error."""
    settings = DeliverySettings.get()
    amiss = bool(settings.whatsapp_template_content_sid and not settings.twilio_messaging_service_sid)
    if amiss and not _said_amiss:
        _said_amiss.append(True)
        logger.error(
            "WHATSAPP_TEMPLATE_CONTENT_SID is set without TWILIO_MESSAGING_SERVICE_SID: "
            "the template is not sent (Twilio sends templates through a Messaging Service)"
        )
    return amiss


_said_amiss: list[bool] = []
