"""The names of the tables the functions read and write (functions/storage/tables.py defines
the tables; the stack names them and gives every function their names)."""

from __future__ import annotations

from pydantic import Field

from functions.config import Name, SettingsModel


class TableSettings(SettingsModel):
    """The tables' names, set by the stack: a function without them fails at cold start."""

    docs = "how-it-works.md#settings-in-detail"

    conversations_table: Name = Field(description="The Conversations table's name.")
    staged_messages_table: Name = Field(description="The StagedMessages table's name.")
    batch_windows_table: Name = Field(description="The BatchWindows table's name.")
    turns_table: Name = Field(description="The Turns table's name.")
    projects_table: Name = Field(description="The Projects table's name.")
    tenants_table: Name = Field(description="The Tenants table's name.")
    usage_counters_table: Name = Field(description="The UsageCounters table's name.")
    assistant_profiles_table: Name = Field(description="The AssistantProfiles table's name.")
    tool_calls_table: Name = Field(description="The ToolCalls table's name.")
