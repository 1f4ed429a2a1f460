"""What one burst costs in AWS calls, per function and operation: the counts the capacity
model multiplies. Recorded on the local stack (tests/e2e/operating/test_capacity_counts.py holds them
to a real run: one burst of 1 and one of 3 fragments of a returning conversation, answered
with one reply part, on WhatsApp), so that a change in the code's access pattern fails
that test until this table is brought up to date.

A count is `burst + fragment * K + callback * C` for a burst of K fragments whose reply
has C status callbacks (Twilio posts one per status of each part: sent, delivered, read
on WhatsApp), plus what each extension of its window (quiet and adaptive modes) and each tool
round of its reply (one call a round) add, held to recorded runs too (a quiet-mode burst
extended once against one that was not; a tool round against a reply without one). An
operation's label is `service:Operation`, with the tables it names for DynamoDB
(`dynamodb:GetItem BatchWindows`, `dynamodb:TransactWriteItems Conversations+Turns`).
Items are what DynamoDB bills: one per key read or written (a batch's or a transaction's
items each count).

Reads that a warm Lambda instance answers from its cache (the Twilio token, the tenant,
the OpenAI key, the tenant reader's session) are not per burst: they are made once per
instance per cache lifetime (CACHED_READS)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from functions.storage.tables import ALL_TABLES
from functions.tenancy.tenant_sessions import RENEW_BEFORE_SECONDS, SESSION_SECONDS

STATE_MACHINE = "StateMachine"  # the state machine's own integrations (Query Staged Messages)
SESSION_RENEWED_EVERY = SESSION_SECONDS - RENEW_BEFORE_SECONDS  # a tenant reader's session: 840 s


@dataclass(frozen=True)
class PerBurst:
    """A count for one burst: so many per burst, per fragment, per status callback, per
    extension of its window (quiet and adaptive modes: Burst Over? sends the run back to
    Wait For The Burst To End) and per tool round (Call Tools, then Generate Reply again)."""

    burst: float = 0
    fragment: float = 0
    callback: float = 0
    extension: float = 0
    tool_round: float = 0
    fragment_round: float = 0  # per fragment of the batch, each tool round (its messages read again)

    def at(self, fragments: float, callbacks: float, extensions: float = 0, rounds: float = 0) -> float:
        return (
            self.burst
            + self.fragment * fragments
            + self.callback * callbacks
            + self.extension * extensions
            + (self.tool_round + self.fragment_round * fragments) * rounds
        )


@dataclass(frozen=True)
class Calls:
    """One function's calls of one operation in one burst, and the items they read or write."""

    function: str
    call: str  # "dynamodb:GetItem BatchWindows"
    count: PerBurst
    items: PerBurst | None = None  # DynamoDB's: None, one item per call

    @property
    def service(self) -> str:
        return self.call.split(":", 1)[0]

    @property
    def operation(self) -> str:
        return self.call.split(":", 1)[1].split(" ", 1)[0]

    @property
    def tables(self) -> tuple[str, ...]:
        _, _, tables = self.call.partition(" ")
        return tuple(tables.split("+")) if tables else ()

    def items_at(self, fragments: float, callbacks: float, extensions: float = 0, rounds: float = 0) -> float:
        """The items read or written (DynamoDB); other services' calls have none."""
        if self.service != "dynamodb":
            return 0
        return (self.items or self.count).at(fragments, callbacks, extensions, rounds)


ONE = PerBurst(burst=1)
EACH_FRAGMENT = PerBurst(fragment=1)
EACH_CALLBACK = PerBurst(callback=1)

# Each function's invocations in one burst.
INVOCATIONS: dict[str, PerBurst] = {
    "Webhook": EACH_FRAGMENT,
    "WaitForTheBurstToEnd": PerBurst(burst=1, extension=1),
    "AcquireProcessingLock": PerBurst(burst=1, extension=1),
    "MergeStagedMessages": ONE,
    "GenerateReply": PerBurst(burst=1, tool_round=1),
    "CallTools": PerBurst(tool_round=1),
    "SendReply": ONE,
    "RecordTurnsAndReleaseLock": ONE,
    "CloseBatchWindow": ONE,
    "StatusCallback": EACH_CALLBACK,
}

# The state machine: transitions (billed: each state entered, and each retry) and history
# events (each one a log record at log level ALL) of an answered burst without retries.
TRANSITIONS = PerBurst(burst=9, extension=3, tool_round=2)
HISTORY_EVENTS = PerBurst(burst=45, extension=13, tool_round=10)
# Each tool round: Generate Reply's response asks for a call (ToolCallsRequested, caught),
# Call Tools makes it (claimed, then recorded), Generate Reply asks again with its output.
EACH_ROUND = PerBurst(tool_round=1)

CALLS: tuple[Calls, ...] = (
    # The webhook: find the conversation, stage the message, count it in the window (the
    # window's first message opens it with the same UpdateItem), start the run once.
    Calls("Webhook", "dynamodb:Query Conversations", EACH_FRAGMENT),
    Calls("Webhook", "dynamodb:PutItem StagedMessages", EACH_FRAGMENT),
    Calls("Webhook", "dynamodb:UpdateItem BatchWindows", EACH_FRAGMENT),
    Calls("Webhook", "states:StartExecution", ONE),
    Calls("WaitForTheBurstToEnd", "dynamodb:UpdateItem BatchWindows", PerBurst(burst=1, extension=1)),
    Calls("WaitForTheBurstToEnd", "states:SendTaskSuccess", ONE),
    Calls("AcquireProcessingLock", "dynamodb:GetItem BatchWindows", PerBurst(burst=1, extension=1)),
    Calls("AcquireProcessingLock", "dynamodb:UpdateItem Conversations", ONE),
    Calls(STATE_MACHINE, "dynamodb:Query StagedMessages", ONE),  # Query Staged Messages
    Calls("MergeStagedMessages", "dynamodb:BatchGetItem StagedMessages", ONE, EACH_FRAGMENT),
    Calls("MergeStagedMessages", "dynamodb:PutItem Turns", ONE),
    Calls("GenerateReply", "dynamodb:GetItem Conversations", PerBurst(burst=1, tool_round=1)),
    Calls("GenerateReply", "dynamodb:GetItem BatchWindows", PerBurst(burst=2)),
    Calls("GenerateReply", "dynamodb:GetItem Turns", PerBurst(burst=2, tool_round=2)),
    # The batch's messages (and the request kept on the first), read again each round.
    Calls(
        "GenerateReply",
        "dynamodb:BatchGetItem StagedMessages",
        PerBurst(burst=1, tool_round=1),
        PerBurst(fragment=1, fragment_round=1),
    ),
    Calls("GenerateReply", "dynamodb:UpdateItem StagedMessages", PerBurst(burst=2, tool_round=3)),
    # The AI call counted (the tenant's counters, then everyone's) and its tokens, each
    # with its mark on the batch's first staged message; counters whose limit is off (the
    # tenant's and everyone's AI calls, by default) are not written. Each round sends the
    # two counts again (their marks found: nothing counted), counts its request as asked
    # again (the conversation's and the sender's calls) and its response's tokens.
    Calls(
        "GenerateReply",
        "dynamodb:TransactWriteItems StagedMessages+UsageCounters",
        PerBurst(burst=3, tool_round=4),
        PerBurst(burst=9, tool_round=12),
    ),
    # The round's call outputs (Call Tools recorded them).
    Calls("GenerateReply", "dynamodb:BatchGetItem ToolCalls", PerBurst(tool_round=2)),
    Calls("GenerateReply", "dynamodb:PutItem Turns", ONE),
    # The user turn's pinned assistant profile (the batch's first attempt), and the reply's turn.
    Calls("GenerateReply", "dynamodb:UpdateItem Turns", PerBurst(burst=2)),
    # Call Tools, each round: the calls the response asked for (kept on the batch's first
    # message), the conversation, the user turn's pinned profile version (read once per
    # instance and version: a cold start's cost), each call claimed and its outcome recorded.
    Calls("CallTools", "dynamodb:BatchGetItem StagedMessages", EACH_ROUND),
    Calls("CallTools", "dynamodb:GetItem Conversations", EACH_ROUND),
    Calls("CallTools", "dynamodb:GetItem Turns", EACH_ROUND),
    Calls("CallTools", "dynamodb:UpdateItem ToolCalls", PerBurst(tool_round=2)),
    Calls("SendReply", "dynamodb:GetItem Conversations", ONE),
    Calls("SendReply", "dynamodb:GetItem Turns", ONE),
    Calls("SendReply", "dynamodb:UpdateItem Turns", PerBurst(burst=2)),
    # Its sender's turn, booked before the part's create (functions/delivery/sender_budget.py).
    Calls("SendReply", "dynamodb:UpdateItem UsageCounters", ONE),
    Calls("RecordTurnsAndReleaseLock", "dynamodb:GetItem Conversations", ONE),
    Calls("RecordTurnsAndReleaseLock", "dynamodb:GetItem Turns", PerBurst(burst=2)),
    Calls(
        "RecordTurnsAndReleaseLock", "dynamodb:TransactWriteItems Conversations+Turns", ONE, PerBurst(burst=3)
    ),
    Calls("RecordTurnsAndReleaseLock", "dynamodb:BatchWriteItem StagedMessages", ONE, EACH_FRAGMENT),
    Calls("RecordTurnsAndReleaseLock", "events:PutEvents", ONE),
    Calls("CloseBatchWindow", "dynamodb:Query StagedMessages", ONE),
    Calls("CloseBatchWindow", "dynamodb:DeleteItem BatchWindows", ONE),
    # Each status callback: the conversation, then the part's status kept on its turn.
    Calls("StatusCallback", "dynamodb:GetItem Conversations", EACH_CALLBACK),
    Calls("StatusCallback", "dynamodb:UpdateItem Turns", EACH_CALLBACK),
)

# A staged message enters StagedMessages' sparse `pending` index when it is staged and
# leaves it when it is answered: one write unit each on the index (not an API call).
INDEX_WRITES_PER_FRAGMENT = 2


@dataclass(frozen=True)
class CachedRead:
    """A read a warm instance makes once per `setting` seconds (a settings model's field, or a number)."""

    function: str
    call: str
    every: str | float  # the setting that holds the cache's lifetime, or seconds
    per_tenant: bool = False  # one per tenant the instance serves


# (The key of conversation ids is read once per webhook instance, at its first new
# conversation, and never again: a cold start's cost, not a rate; functions/tenancy/id_key.py.)
CACHED_READS: tuple[CachedRead, ...] = (
    CachedRead("Webhook", "secretsmanager:GetSecretValue", "secrets_max_age_seconds", per_tenant=True),
    CachedRead("Webhook", "dynamodb:GetItem Tenants", "tenant_cache_seconds", per_tenant=True),
    CachedRead("StatusCallback", "secretsmanager:GetSecretValue", "secrets_max_age_seconds", per_tenant=True),
    # The OpenAI key, and the tenant's Twilio credentials (the typing indicator) through the
    # tenant reader's session, renewed a minute before its 15 minutes end
    # (functions/tenancy/tenant_sessions.py): each function's instances take their own.
    CachedRead("GenerateReply", "secretsmanager:GetSecretValue", "secrets_max_age_seconds"),
    CachedRead("GenerateReply", "secretsmanager:GetSecretValue", "secrets_max_age_seconds", per_tenant=True),
    CachedRead("GenerateReply", "sts:AssumeRole", SESSION_RENEWED_EVERY, per_tenant=True),
    # The tenant's (or its project's) assistant profile in force.
    CachedRead(
        "GenerateReply",
        "dynamodb:Query AssistantProfiles",
        "assistant_profile_cache_seconds",
        per_tenant=True,
    ),
    CachedRead("SendReply", "secretsmanager:GetSecretValue", "secrets_max_age_seconds", per_tenant=True),
    CachedRead("SendReply", "sts:AssumeRole", SESSION_RENEWED_EVERY, per_tenant=True),
    # The number's own sender rate (functions/tenancy/tenants.py: sender_mps), one number a tenant.
    CachedRead("SendReply", "dynamodb:GetItem Tenants", "tenant_cache_seconds", per_tenant=True),
    # The tenant's tool-signing key, through a session of the tool reader.
    CachedRead("CallTools", "secretsmanager:GetSecretValue", "secrets_max_age_seconds", per_tenant=True),
    CachedRead("CallTools", "sts:AssumeRole", SESSION_RENEWED_EVERY, per_tenant=True),
)

# The functions that assume a tenant reader only on a failure's path or for a person's
# command, none in the model's steady state: Record Failed Batch (the person told), Status
# Callback and the Reconciler (a part sent again, a template), Conversation Commands (a
# helpdesk's reply). Each warm instance of them takes at most one session per tenant every
# SESSION_RENEWED_EVERY seconds while they run.
TENANT_SESSIONS_ON_FAILURE = ("RecordFailedBatch", "StatusCallback", "Reconciler", "ConversationCommands")

# The calls the first burst of a new conversation adds: creating it, and storing its
# OpenAI conversation's id.
FIRST_BURST_OF_A_CONVERSATION: tuple[Calls, ...] = (
    Calls("Webhook", "dynamodb:PutItem Conversations", ONE),
    Calls("GenerateReply", "dynamodb:UpdateItem Conversations", ONE),
)


def label(service: str, operation: str, params: dict[str, Any]) -> str:
    """A call's label: `service:Operation`, and for DynamoDB the tables it names (by their
    logical names, whatever the deployment calls them)."""
    logical = {os.environ.get(t.env_var, t.logical_id): t.logical_id for t in ALL_TABLES}
    tables = set()
    if "TableName" in params:
        tables.add(params["TableName"])
    tables.update(params.get("RequestItems", {}))
    for item in params.get("TransactItems", []):
        tables.update(request["TableName"] for request in item.values())
    named = "+".join(sorted(logical.get(t, t) for t in tables))
    return f"{service}:{operation}" + (f" {named}" if named else "")


def items_of(operation: str, params: dict[str, Any]) -> int:
    """How many items a DynamoDB call reads or writes (what it is billed by)."""
    if operation == "BatchWriteItem":
        return sum(len(requests) for requests in params["RequestItems"].values())
    if operation == "BatchGetItem":
        return sum(len(table["Keys"]) for table in params["RequestItems"].values())
    if operation in ("TransactWriteItems", "TransactGetItems"):
        return len(params["TransactItems"])
    return 1


def expected(
    fragments: int, callbacks: int, extensions: float = 0, rounds: float = 0
) -> dict[tuple[str, str], tuple[float, float]]:
    """(function, call) -> (calls, items) in a burst of `fragments` with `callbacks`, its
    window extended `extensions` times and its reply `rounds` tool rounds (calls made 0 times:
    left out)."""
    counts = {
        (c.function, c.call): (
            c.count.at(fragments, callbacks, extensions, rounds),
            c.items_at(fragments, callbacks, extensions, rounds),
        )
        for c in CALLS
    }
    return {key: value for key, value in counts.items() if value != (0, 0)}
