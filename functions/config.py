"""Configuration of the functions, read once from the environment into a typed model
(pydantic-settings). The names of the resources the stack creates have no defaults: a
function deployed without them fails at cold start, not at its first request."""

from __future__ import annotations

from functools import cache
from typing import Any

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict


class Settings(BaseSettings):
    """Every setting a function reads. Names are the environment variables."""

    model_config = SettingsConfigDict(extra="ignore", populate_by_name=True, frozen=True)

    conversations_table: str = Field(alias="CONVERSATIONS_TABLE", min_length=1)
    staged_messages_table: str = Field(alias="STAGED_MESSAGES_TABLE", min_length=1)
    batch_windows_table: str = Field(alias="BATCH_WINDOWS_TABLE", min_length=1)
    turns_table: str = Field(alias="TURNS_TABLE", min_length=1)
    projects_table: str = Field(alias="PROJECTS_TABLE", min_length=1)
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
    flush_keywords: str = Field("", alias="FLUSH_KEYWORDS")  # comma-separated
    lock_lease_seconds: int = Field(600, ge=30, alias="LOCK_LEASE_SECONDS")
    auto_create_conversations: bool = Field(False, alias="AUTO_CREATE_CONVERSATIONS")
    # Answered staged messages are kept as bodiless tombstones this long, so that a
    # late Twilio retry of the same MessageSid is still recognised as a duplicate.
    answered_message_retention_seconds: int = Field(3 * 24 * 3600, alias="ANSWERED_MESSAGE_RETENTION_SECONDS")

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

    # Secrets Manager names of the deployment's default credentials.
    twilio_secret_name: str = Field("burst-reply/twilio", alias="TWILIO_SECRET_NAME")
    openai_secret_name: str = Field("burst-reply/openai", alias="OPENAI_SECRET_NAME")
    # Other Twilio accounts (tenants) keep their credentials at <prefix><AccountSid>.
    twilio_account_secret_prefix: str = Field("burst-reply/twilio/", alias="TWILIO_ACCOUNT_SECRET_PREFIX")
    secrets_max_age_seconds: int = Field(300, alias="SECRETS_MAX_AGE_SECONDS")

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
    # The public base URL Twilio calls (for signature validation behind a custom domain).
    webhook_base_url: str = Field("", alias="WEBHOOK_BASE_URL")

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
    return Settings()  # type: ignore[call-arg]  # read from the environment
