"""Cost limits and consent (docs/deploying.md#cost-limits): 0 means no limit; the defaults are
limits a normal conversation never meets."""

from __future__ import annotations

from pydantic import Field

from functions.config import SettingsModel


class GuardSettings(SettingsModel):
    """What one conversation, sender, tenant or everyone may spend an hour, the reply's size,
    and what an opt-out is told."""

    docs = "deploying.md#cost-limits"

    max_ai_calls_per_hour_per_conversation: int = Field(
        60, ge=0, description="AI calls an hour, per conversation."
    )
    max_ai_calls_per_hour_per_sender: int = Field(
        120, ge=0, description="AI calls an hour, per sender (of one tenant)."
    )
    max_ai_calls_per_hour_per_tenant: int = Field(0, ge=0, description="AI calls an hour, per tenant.")
    max_ai_calls_per_hour: int = Field(0, ge=0, description="AI calls an hour, all tenants together.")
    max_new_conversations_per_hour_per_tenant: int = Field(
        0, ge=0, description="New conversations an hour, per tenant."
    )
    max_commands_per_hour_per_conversation: int = Field(
        60, ge=0, description="A helpdesk's commands an hour, per conversation."
    )
    max_commands_per_hour_per_tenant: int = Field(
        100_000, ge=0, description="A helpdesk's commands an hour, per tenant."
    )
    max_ai_tokens_per_hour_per_tenant: int = Field(
        10_000_000_000, ge=0, description="AI tokens (in and out) an hour, per tenant."
    )
    max_ai_tokens_per_hour: int = Field(
        10_000_000_000, ge=0, description="AI tokens an hour, all tenants together."
    )
    limited_reply: str = Field(
        "", description="Sent instead of a reply a cost limit stopped, at most once an hour (empty: nothing)."
    )
    max_reply_parts_per_batch: int = Field(10, ge=0, description="The parts (messages) one reply may have.")
    max_sms_segments_per_reply: int = Field(
        10, ge=0, description="SMS: the segments one reply is cut to, in all (billed per segment)."
    )
    opt_out_confirmation: str = Field(
        "You won't get any more messages from us here. Send START to hear from us again.",
        description="WhatsApp: the one message that confirms an opt-out (empty: none).",
    )
