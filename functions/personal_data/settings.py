"""How long what people send is kept (docs/personal-data.md#retention)."""

from __future__ import annotations

from pydantic import Field

from functions.config import SettingsModel

MAX_RETENTION_DAYS = 36_500  # a tenant's or the deployment's turn-text retention, at most


class RetentionSettings(SettingsModel):
    """How long answered messages and turns keep what they hold."""

    docs = "personal-data.md#retention"

    answered_message_retention_seconds: int = Field(
        365 * 24 * 3600,
        ge=1,
        description="How long an answered MessageSid is kept, bodiless, so that a replay is a duplicate.",
    )
    turn_text_retention_days: int = Field(
        0,
        ge=0,
        le=MAX_RETENTION_DAYS,
        description="Days after which answered turns' texts are cut to figures (0: kept until forgotten).",
    )
