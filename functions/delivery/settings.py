"""How replies reach Twilio and are paced, the WhatsApp template sent outside the 24-hour
window, and the events a batch announces (docs/how-it-works.md, docs/failures.md)."""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator, Field

from functions.config import Flag, Name, SettingsModel, read_template_variables

# The most messages a second a sender's rate can be (Twilio's WhatsApp senders: 400 for text;
# Meta's Cloud API: 1,000), as TWILIO_SENDER_MPS and as a number's own rate.
MAX_SENDER_MPS = 1000


class TwilioSettings(SettingsModel):
    """Every request to Twilio's API."""

    docs = "how-it-works.md#settings-in-detail"

    # Inside the shortest Lambda timeout of a function that calls Twilio (Status Callback's 12 s).
    twilio_timeout_seconds: float = Field(10.0, gt=0, le=10, description="Each Twilio request's timeout.")
    # On AWS it would send a tenant's credentials to another host: the local stack's only.
    twilio_api_base_url: str = Field("", description="A Twilio stand-in's URL (empty: Twilio's own API).")


class DeliverySettings(SettingsModel):
    """Sending a reply's parts once each, paced, and the template sent when WhatsApp's 24-hour
    window has closed (63016)."""

    docs = "how-it-works.md#settings-in-detail"

    delivery_receipt_wait_seconds: float = Field(
        10.0,
        ge=0,
        le=20,
        description="How long a retry waits for the receipt of a message in doubt before sending it again.",
    )
    reply_part_interval_seconds: float = Field(
        1.0, ge=0, le=5, description="The pause between the parts of one reply."
    )
    twilio_sender_mps: float = Field(
        80,
        ge=0,
        le=MAX_SENDER_MPS,
        description="The messages a second our sender sends at (0: not paced); a number's own rate wins.",
    )
    whatsapp_template_content_sid: str = Field(
        "", description="The template (Content SID) sent when WhatsApp's 24-hour window has closed."
    )
    twilio_messaging_service_sid: str = Field(
        "", description="The Messaging Service (MG...) the template is sent through (without it: not sent)."
    )
    whatsapp_template_variables: Annotated[str, AfterValidator(read_template_variables)] = Field(
        "", description="The template's variables, a JSON object of strings (empty: Twilio's samples)."
    )


class EventSettings(SettingsModel):
    """The events a batch announces on the service's bus (batch.answered, batch.handed_off)."""

    docs = "how-it-works.md#settings-in-detail"

    event_bus_name: Name = Field(description="The bus the events go to.")
    event_includes_texts: Flag = Field(
        False, description="Add the merged fragments, the reply and the user's address to the events."
    )
