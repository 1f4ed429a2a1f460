"""Configuration of the functions, read once from the environment into a typed model.
The names of the resources the stack creates have no defaults: a function deployed
without them fails at cold start, not at its first request. (Plain pydantic rather than
pydantic-settings, which added half an `import boto3` to every cold start.)"""

from __future__ import annotations

import os
from functools import cache
from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class Settings(BaseModel):
    """Every setting a function reads. Names are the environment variables."""

    model_config = ConfigDict(extra="ignore", populate_by_name=True, frozen=True)

    conversations_table: str = Field(alias="CONVERSATIONS_TABLE", min_length=1)
    staged_messages_table: str = Field(alias="STAGED_MESSAGES_TABLE", min_length=1)
    batch_windows_table: str = Field(alias="BATCH_WINDOWS_TABLE", min_length=1)
    turns_table: str = Field(alias="TURNS_TABLE", min_length=1)
    projects_table: str = Field(alias="PROJECTS_TABLE", min_length=1)
    tenants_table: str = Field(alias="TENANTS_TABLE", min_length=1)
    usage_counters_table: str = Field(alias="USAGE_COUNTERS_TABLE", min_length=1)
    # Set on the functions that start or inspect runs.
    state_machine_arn: str = Field("", alias="STATE_MACHINE_ARN")
    event_bus_name: str = Field(alias="EVENT_BUS_NAME", min_length=1)

    # The global batching rules (functions/logic/debounce.py); a project's or a
    # conversation's own rules override them.
    batch_mode: str = Field("fixed", alias="BATCH_MODE")
    batch_window_seconds: int = Field(10, ge=1, le=3600, alias="BATCH_WINDOW_SECONDS")
    quiet_seconds: float = Field(3, gt=0, alias="QUIET_SECONDS")
    typing_gap_seconds: float = Field(2, ge=0, alias="TYPING_GAP_SECONDS")
    typing_quiet_seconds: float = Field(6, gt=0, alias="TYPING_QUIET_SECONDS")
    max_wait_seconds: float = Field(60, gt=0, alias="MAX_WAIT_SECONDS")
    max_batch_messages: int = Field(0, ge=0, alias="MAX_BATCH_MESSAGES")
    # A batch holds at most this many messages, and bodies of at most this many bytes (the
    # merged user turn is one DynamoDB item, at most 400 KB); the rest go to the next batch.
    max_batch_size: int = Field(50, ge=1, le=100, alias="MAX_BATCH_SIZE")
    max_batch_bytes: int = Field(64_000, ge=12_000, le=300_000, alias="MAX_BATCH_BYTES")
    flush_keywords: str = Field("", alias="FLUSH_KEYWORDS")  # comma-separated
    lock_lease_seconds: int = Field(600, ge=30, alias="LOCK_LEASE_SECONDS")
    auto_create_conversations: bool = Field(False, alias="AUTO_CREATE_CONVERSATIONS")
    # Answered staged messages are kept as bodiless tombstones this long, so that a
    # late Twilio retry, or a replay of a signed request, of the same MessageSid is still
    # recognised as a duplicate.
    answered_message_retention_seconds: int = Field(
        30 * 24 * 3600, ge=1, alias="ANSWERED_MESSAGE_RETENTION_SECONDS"
    )

    # A batch whose run failed this many times is set aside (dead-lettered), not retried.
    max_batch_attempts: int = Field(3, ge=1, alias="MAX_BATCH_ATTEMPTS")
    # The reconciler opens a window for messages pending longer than this with none open.
    reconcile_after_seconds: int = Field(120, ge=10, alias="RECONCILE_AFTER_SECONDS")

    # What the user is told, when set (empty: nothing is sent).
    fallback_reply: str = Field(
        "Sorry, I can't answer right now. Please try again later.", alias="FALLBACK_REPLY"
    )
    unknown_sender_reply: str = Field("", alias="UNKNOWN_SENDER_REPLY")
    inactive_project_reply: str = Field("", alias="INACTIVE_PROJECT_REPLY")
    channel_not_allowed_reply: str = Field("", alias="CHANNEL_NOT_ALLOWED_REPLY")
    # WhatsApp template (Content SID) sent when the 24-hour window has closed (63016).
    whatsapp_template_content_sid: str = Field("", alias="WHATSAPP_TEMPLATE_CONTENT_SID")

    # Secrets Manager: each tenant's Twilio credentials are the secret
    # <TWILIO_TENANT_SECRET_PREFIX><AccountSid>; a tenant's own OpenAI keys lie under
    # <OPENAI_TENANT_SECRET_PREFIX><AccountSid>; the deployment's OpenAI key is the default.
    twilio_tenant_secret_prefix: str = Field(
        "burst-reply/tenants/twilio/", alias="TWILIO_TENANT_SECRET_PREFIX", min_length=1
    )
    openai_tenant_secret_prefix: str = Field(
        "burst-reply/tenants/openai/", alias="OPENAI_TENANT_SECRET_PREFIX", min_length=1
    )
    openai_secret_name: str = Field("burst-reply/openai", alias="OPENAI_SECRET_NAME")
    secrets_max_age_seconds: int = Field(300, alias="SECRETS_MAX_AGE_SECONDS")
    # The webhook keeps tenants in memory: a known one this long (a change made with
    # `infra.tenants` reaches a warm webhook within this time), an unknown AccountSid longer.
    tenant_cache_seconds: float = Field(60, ge=0, alias="TENANT_CACHE_SECONDS")
    unknown_tenant_cache_seconds: float = Field(300, ge=0, alias="UNKNOWN_TENANT_CACHE_SECONDS")

    # Cost limits (functions/logic/limits.py); 0 means no limit. Defaults that a normal
    # conversation never meets.
    max_ai_calls_per_hour_per_conversation: int = Field(
        60, ge=0, alias="MAX_AI_CALLS_PER_HOUR_PER_CONVERSATION"
    )
    max_ai_calls_per_hour_per_sender: int = Field(120, ge=0, alias="MAX_AI_CALLS_PER_HOUR_PER_SENDER")
    max_reply_parts_per_batch: int = Field(10, ge=0, alias="MAX_REPLY_PARTS_PER_BATCH")

    # The batch.answered event carries keys and counts; texts and the user's address only
    # when this is on.
    event_includes_texts: bool = Field(False, alias="EVENT_INCLUDES_TEXTS")

    # What people send besides text (functions/logic/media.py): photos reach the model as
    # images, voice notes as their transcripts; each can be turned off (then the model is
    # told that a photo or a voice note was sent). Media are fetched from Twilio's media
    # hosts only (https), at most MEDIA_MAX_BYTES each and MEDIA_MAX_BATCH_BYTES a batch,
    # within MEDIA_TIME_BUDGET_SECONDS of Generate Reply's time.
    media_image_input: bool = Field(True, alias="MEDIA_IMAGE_INPUT")
    media_voice_transcription: bool = Field(True, alias="MEDIA_VOICE_TRANSCRIPTION")
    transcription_model: str = Field("gpt-transcribe", alias="TRANSCRIPTION_MODEL")
    media_max_bytes: int = Field(10_000_000, ge=1, alias="MEDIA_MAX_BYTES")
    media_max_batch_bytes: int = Field(20_000_000, ge=1, alias="MEDIA_MAX_BATCH_BYTES")
    media_time_budget_seconds: float = Field(20, gt=0, le=30, alias="MEDIA_TIME_BUDGET_SECONDS")
    twilio_media_hosts: str = Field("api.twilio.com,mms.twiliocdn.com", alias="TWILIO_MEDIA_HOSTS")

    openai_model: str = Field("gpt-5-mini", alias="OPENAI_MODEL")
    openai_instructions: str = Field(
        "You are a helpful assistant replying on WhatsApp or SMS. The user may have sent "
        "several short messages in a row; answer them together, briefly.",
        alias="OPENAI_INSTRUCTIONS",
    )
    # The time one "Generate Reply" attempt spends on OpenAI: each request's timeout, and how
    # long it waits for a background response before the state machine's Retry takes over.
    # Below the function's 60-second timeout.
    openai_timeout_seconds: float = Field(25.0, gt=0, le=45, alias="OPENAI_TIMEOUT_SECONDS")
    # The cap on a reply's tokens, reasoning included (a WhatsApp or SMS reply is short).
    openai_max_output_tokens: int = Field(2048, ge=16, alias="OPENAI_MAX_OUTPUT_TOKENS")
    twilio_timeout_seconds: float = Field(10.0, alias="TWILIO_TIMEOUT_SECONDS")
    # Only set to reach a Twilio stand-in; empty means Twilio's own API.
    twilio_api_base_url: str = Field("", alias="TWILIO_API_BASE_URL")
    # The public base URL Twilio calls, which its signatures cover (set by the stack; a
    # custom domain sets its own). Without it, the URL is rebuilt from the Host header and
    # the request's path; forwarded headers (X-Forwarded-Proto, -Host) only count when
    # trusted, behind a proxy that sets them.
    webhook_base_url: str = Field("", alias="WEBHOOK_BASE_URL")
    webhook_trust_forwarded_headers: bool = Field(False, alias="WEBHOOK_TRUST_FORWARDED_HEADERS")
    # Twilio's connection overrides, the fragment of every URL Twilio is given (the webhook
    # URLs to paste in its console, the StatusCallback of each message sent): without them
    # Twilio retries only a connection failure, once, never a 5xx
    # (https://www.twilio.com/docs/usage/webhooks/webhooks-connection-overrides).
    # A fragment on WEBHOOK_BASE_URL takes precedence.
    twilio_connection_overrides: str = Field("rc=5&rp=all", alias="TWILIO_CONNECTION_OVERRIDES")
    # What the webhook reads before anything else: larger or longer forms are refused.
    webhook_max_body_bytes: int = Field(128 * 1024, ge=1024, alias="WEBHOOK_MAX_BODY_BYTES")
    webhook_max_fields: int = Field(100, ge=10, alias="WEBHOOK_MAX_FIELDS")

    def public_base_url(self) -> str:
        """WEBHOOK_BASE_URL without a fragment or a trailing slash (empty: not set)."""
        return self.webhook_base_url.partition("#")[0].rstrip("/")

    def connection_overrides(self) -> str:
        """The fragment Twilio's URLs carry: WEBHOOK_BASE_URL's own, or the setting."""
        base, hashed, fragment = self.webhook_base_url.partition("#")
        return fragment if hashed else self.twilio_connection_overrides.lstrip("#")

    def batching_defaults(self) -> dict[str, Any]:
        return {
            "mode": self.batch_mode,
            "window_seconds": self.batch_window_seconds,
            "quiet_seconds": self.quiet_seconds,
            "typing_gap_seconds": self.typing_gap_seconds,
            "typing_quiet_seconds": self.typing_quiet_seconds,
            "max_wait_seconds": self.max_wait_seconds,
            "max_messages": self.max_batch_messages,
            "flush_keywords": tuple(k.strip() for k in self.flush_keywords.split(",") if k.strip()),
        }


@cache
def get_settings() -> Settings:
    return Settings.model_validate(dict(os.environ))
