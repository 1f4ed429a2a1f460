"""The WhatsApp template sent instead of a reply once the person's 24-hour window has
closed (Twilio's 63016), once, whoever asks: Send Reply, a status callback that reports
63016, or a person's reply from a helpdesk (docs/adr/0056-one-send-once-protocol-for-every-message-we.md)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from functools import cached_property

from twilio.rest import Client

from functions.answer import turns
from functions.delivery import twilio_messages
from functions.delivery.callback_urls import TEMPLATE, status_callback_url
from functions.delivery.send_once import Claim, receipt_of, send_once
from functions.delivery.settings import DeliverySettings, TwilioSettings
from functions.intake.inbound import Channel
from functions.observability import count, logger
from functions.registry import STATUS_CALLBACK
from functions.storage.models import Conversation, Turn
from functions.storage.tables import assistant_turn_id
from functions.tenancy import secrets


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
    service = settings.twilio_messaging_service_sid
    return send_once(_Template(conversation, window_id, owner, template, service), receipt_wait=wait)


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


@dataclass
class _Template:
    """The WhatsApp template of the turn's reply, for send_once: claimed for an owner on
    the assistant turn (`template_owner`, `template_since`), its SID kept there."""

    conversation: Conversation
    window_id: str
    owner: str
    content_sid: str
    messaging_service_sid: str
    turn: Turn = field(init=False)  # as claimed

    @property
    def turn_id(self) -> str:
        return assistant_turn_id(self.window_id)

    @cached_property
    def client(self) -> Client:
        return twilio_messages.client_for(secrets.twilio_credentials_in_tenant_session(self.conversation))

    def claim(self, now: str) -> Claim:
        self.turn = turns.claim_template(self.conversation.conversation_id, self.turn_id, self.owner, now)
        since, sent = self.turn.template_since or now, self.turn.template_sid
        return Claim.began(since, now, sent=sent, ours=self.turn.template_owner == self.owner)

    def reported(self) -> str | None:
        """Its status callback names it (`template`): recorded on the assistant turn."""
        turn = turns.get(self.conversation.conversation_id, self.turn_id) or self.turn
        return receipt_of(turn.deliveries, TEMPLATE)

    def refused(self) -> None:
        """Nothing kept: a retry waits for a receipt first."""

    def find(self, since: datetime) -> str | None:
        """Twilio's list: a message from us since `since` that is none of the turn's."""
        ours = [*self.turn.message_sids, *self.turn.deliveries]
        our, user = self.conversation.our_address, self.conversation.user_address
        return twilio_messages.find_sent(self.client, our, user, None, since, ours)

    def send(self) -> str:
        return twilio_messages.send_message(
            self.client,
            self.conversation.our_address,
            self.conversation.user_address,
            content_sid=self.content_sid,
            status_callback=status_callback_url(self.conversation.conversation_id, self.window_id, TEMPLATE),
            messaging_service_sid=self.messaging_service_sid,
            content_variables=DeliverySettings.get().whatsapp_template_variables or None,
        )

    def record(self, sid: str) -> None:
        turns.record_template(self.conversation.conversation_id, self.turn_id, sid)
        count("TemplatesSent")
        logger.info("WhatsApp window closed: template sent", extra={"template_sid": sid})
