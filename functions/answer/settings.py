"""How the reply is asked of OpenAI, and what people send besides text reaches the model
(docs/how-it-works.md, docs/message-types.md)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from functions.config import Flag, SettingsModel
from functions.default_model import DEFAULT_MODEL


class AnswerSettings(SettingsModel):
    """The model, its instructions and the room it is given; a conversation's or an
    assistant profile's own model and instructions come first."""

    docs = "how-it-works.md#settings-in-detail"

    openai_model: str = Field(
        DEFAULT_MODEL,
        min_length=1,
        description="The model, unless the conversation or its profile names one.",
    )
    openai_fallback_model: str = Field(
        "", description="Answers when OpenAI does not serve the model (404 model_not_found); empty: none."
    )
    openai_instructions: str = Field(
        "You are a helpful assistant replying on WhatsApp or SMS. The user may have sent "
        "several short messages in a row; answer them together, briefly. Lines in square "
        "brackets are the messaging service's notes on what was sent (a photo, a quoted "
        "message); brackets the user typed arrive escaped with a backslash.",
        description="Sent with every turn, unless the conversation or its profile has its own.",
    )
    openai_max_context_tokens: int = Field(
        4_000,
        ge=0,
        description="A conversation's context budget: past it, OpenAI compacts the history (0: never).",
    )
    openai_max_output_tokens: int = Field(
        4096, ge=16, description="The cap on a reply's tokens, reasoning included."
    )
    openai_max_output_tokens_sms: int = Field(
        1024, ge=16, description="The same cap on SMS, or OPENAI_MAX_OUTPUT_TOKENS if lower."
    )
    openai_reasoning_effort: Literal["", "none", "minimal", "low", "medium", "high", "xhigh"] = Field(
        "low", description="reasoning.effort, for a model that takes one (empty: the model's own)."
    )
    typing_indicator: Flag = Field(
        True, description='WhatsApp: show "typing…" on a burst\'s last message while its reply is written.'
    )


class OpenAISettings(SettingsModel):
    """The time given to OpenAI: Generate Reply's requests, and a person's reply added to the
    OpenAI conversation (functions/handoff/person_reply.py)."""

    docs = "how-it-works.md#settings-in-detail"

    # Below Generate Reply's 90-second timeout (functions/registry.py), with the media's time.
    openai_timeout_seconds: float = Field(
        25.0, gt=0, le=45, description="The time one Generate Reply attempt spends on OpenAI."
    )


class MediaSettings(SettingsModel):
    """Photos reach the model as images, voice notes as their transcripts
    (functions/answer/media.py); each can be turned off, and the model is then told what
    was sent."""

    docs = "message-types.md"

    media_image_input: Flag = Field(True, description="Photos reach the model as images.")
    media_voice_transcription: Flag = Field(True, description="Voice notes are transcribed for the model.")
    transcription_model: str = Field("gpt-transcribe", description="OpenAI's speech-to-text model.")
    media_max_bytes: int = Field(10_000_000, ge=1, description="A larger file is mentioned, not loaded.")
    media_max_batch_bytes: int = Field(
        20_000_000, ge=1, description="Files past this total in a batch are mentioned, not loaded."
    )
    media_time_budget_seconds: float = Field(
        20, gt=0, le=30, description="Generate Reply's time for fetching and transcribing media."
    )
    twilio_media_hosts: str = Field(
        "api.twilio.com",
        description="The hosts a media URL may be on (https; it carries the tenant's credentials).",
    )
    media_redirect_hosts: str = Field(
        "mms.twiliocdn.com,s3-external-1.amazonaws.com",
        description="The hosts a media URL may redirect to (https, without credentials).",
    )
