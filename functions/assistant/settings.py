"""An assistant's function tools (docs/assistants.md): a profile may set lower round and time
limits of its own."""

from __future__ import annotations

from pydantic import Field

from functions.config import Flag, SettingsModel


class AssistantSettings(SettingsModel):
    """The rounds, time and answer size of tool calls, and the confirmation a `confirm: true`
    tool waits for."""

    docs = "assistants.md"

    max_tool_rounds: int = Field(3, ge=1, le=10, description="Rounds of tool calls a batch may make.")
    tool_timeout_seconds: float = Field(10.0, ge=1, le=25, description="One tool call's time.")
    tool_max_answer_bytes: int = Field(
        4096, ge=256, le=65_536, description="The largest JSON answer a tool endpoint may give."
    )
    # Deployed, a tool's url must be https to a public address: on AWS, loopback would be the
    # Lambda runtime's own API (functions/assistant/tool_endpoints.py).
    tool_loopback_http: Flag = Field(
        False, description="Allow tool endpoints on a loopback address over http: the local stack's only."
    )
    assistant_profile_cache_seconds: float = Field(
        30, ge=0, le=3600, description="How long Generate Reply keeps the profiles in force in memory."
    )
    confirm_keywords: str = Field(
        "yes,y,yeah,yep,yup,sure,ok,okay,confirm,confirmed,go ahead,do it,sí,si,oui,ja,sim",
        description="What a short next message must hold to confirm a `confirm: true` tool's call.",
    )
    confirm_within_seconds: int = Field(
        3600, ge=60, le=7 * 24 * 3600, description="How long after the proposal a yes still counts."
    )
