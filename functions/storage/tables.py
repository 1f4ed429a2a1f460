"""The DynamoDB tables, defined once: the CDK stack and the local stack both build them
from these definitions, so the tables the tests run against are the deployed ones."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Index:
    name: str
    partition_key: str
    sort_key: str | None = None


@dataclass(frozen=True)
class TableDefinition:
    logical_id: str  # CDK construct id, also the default table name locally
    env_var: str  # environment variable that carries the table name to the functions
    placeholder: str  # ${Placeholder} in the state machine definition
    partition_key: str
    sort_key: str | None = None
    ttl_attribute: str | None = None
    indexes: tuple[Index, ...] = field(default_factory=tuple)

    def key_attributes(self) -> list[str]:
        names = [self.partition_key, self.sort_key]
        for index in self.indexes:
            names += [index.partition_key, index.sort_key]
        return list(dict.fromkeys(n for n in names if n))


PENDING_INDEX = "pending"  # StagedMessages' sparse index of the messages not yet answered

# One item per conversation: its addresses, configuration, the processing lock and totals.
CONVERSATIONS = TableDefinition(
    logical_id="Conversations",
    env_var="CONVERSATIONS_TABLE",
    placeholder="ConversationsTableName",
    partition_key="conversation_id",
    indexes=(Index("by_address", "address_key", "created_at"),),
)

# Every accepted message, until its batch is answered; then a bodiless tombstone kept
# (with a TTL) so that a replayed MessageSid stays a duplicate.
# A pending message also carries `pending_since`, which puts it in the sparse `pending`
# index that the reconciler scans; answered and failed messages leave that index.
STAGED_MESSAGES = TableDefinition(
    logical_id="StagedMessages",
    env_var="STAGED_MESSAGES_TABLE",
    placeholder="StagedMessagesTableName",
    partition_key="conversation_id",
    sort_key="message_sid",
    ttl_attribute="expires_at",
    indexes=(Index(PENDING_INDEX, "conversation_id", "pending_since"),),
)

# At most one open batch window per conversation; the conditional put that creates it
# decides which webhook starts the execution. The TTL is a fallback for a lost close.
BATCH_WINDOWS = TableDefinition(
    logical_id="BatchWindows",
    env_var="BATCH_WINDOWS_TABLE",
    placeholder="BatchWindowsTableName",
    partition_key="conversation_id",
    ttl_attribute="expires_at",
)

# The recorded turns (a user turn and an assistant turn per answered batch), one item
# each, so that a long conversation never meets DynamoDB's 400 KB item limit.
TURNS = TableDefinition(
    logical_id="Turns",
    env_var="TURNS_TABLE",
    placeholder="TurnsTableName",
    partition_key="conversation_id",
    sort_key="turn_id",
)


def turn_ids_of_window(window_id: str) -> str:
    """What every turn id of a batch window starts with: the window's id, then `#`."""
    return f"{window_id}#"


def user_turn_id(window_id: str) -> str:
    """The batch's user turn: sorts before its assistant turn."""
    return f"{turn_ids_of_window(window_id)}1-user"


def assistant_turn_id(window_id: str) -> str:
    return f"{turn_ids_of_window(window_id)}2-assistant"


# Projects group conversations (the seeds' project); here they carry batching rules.
PROJECTS = TableDefinition(
    logical_id="Projects",
    env_var="PROJECTS_TABLE",
    placeholder="ProjectsTableName",
    partition_key="project_id",
)

# The tenants (Twilio accounts) the service answers for, and the numbers each owns. Two
# kinds of item, each read with one GetItem: `account#<AccountSid>` (a registered tenant and
# the set of its numbers) and `number#<address>` (the one tenant that owns a number). They
# change together, in transactions (functions/tenancy/tenants.py).
TENANTS = TableDefinition(
    logical_id="Tenants",
    env_var="TENANTS_TABLE",
    placeholder="TenantsTableName",
    partition_key="tenant_key",
)

# Usage counters for the cost limits (functions/guards/limits.py): one item per conversation
# or sender and hour, removed by TTL once the hour is over.
USAGE_COUNTERS = TableDefinition(
    logical_id="UsageCounters",
    env_var="USAGE_COUNTERS_TABLE",
    placeholder="UsageCountersTableName",
    partition_key="counter_key",
    ttl_attribute="expires_at",
)

# The assistants' profiles (functions/assistant/assistant_profiles.py): one item per version of a
# tenant's (`tenant#<AccountSid>`) or a project's (`tenant#<AccountSid>#project#<id>`)
# profile, never changed once written; the newest is the profile in force.
ASSISTANT_PROFILES = TableDefinition(
    logical_id="AssistantProfiles",
    env_var="ASSISTANT_PROFILES_TABLE",
    placeholder="AssistantProfilesTableName",
    partition_key="profile_key",
    sort_key="version",
)

# Each tool call the model asked for, claimed before it is made and its outcome recorded
# (functions/assistant/tool_calls.py), keyed by what makes it the same call (the batch, the tool,
# the arguments), so that no retry, rerun or regenerated response makes it twice.
TOOL_CALLS = TableDefinition(
    logical_id="ToolCalls",
    env_var="TOOL_CALLS_TABLE",
    placeholder="ToolCallsTableName",
    partition_key="conversation_id",
    sort_key="call_key",
    ttl_attribute="expires_at",
)

ALL_TABLES = (
    CONVERSATIONS,
    STAGED_MESSAGES,
    BATCH_WINDOWS,
    TURNS,
    PROJECTS,
    TENANTS,
    USAGE_COUNTERS,
    ASSISTANT_PROFILES,
    TOOL_CALLS,
)
