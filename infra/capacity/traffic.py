"""What N messages a second make per second: the model's assumptions, our settings, each
function's assumed duration, and the rates of invocations, AWS calls and DynamoDB units.

Everything scales with the burst rate B = N / K (K fragments a burst): the calls of one
burst (infra/capacity/burst.py, held to a recorded run) times B. Lambda concurrency is
each function's invocations a second times its duration (Little's law)."""

from __future__ import annotations

from dataclasses import MISSING, dataclass, field, fields
from typing import Any

from functions.config import Settings
from infra.capacity import burst
from infra.names import StackSettings

SECONDS_PER_MONTH = 30 * 24 * 3600
SECONDS_PER_HOUR = 3600
_WRITES = {"PutItem", "UpdateItem", "DeleteItem", "BatchWriteItem", "TransactWriteItems"}


@dataclass(frozen=True)
class Assumptions:
    """What the model is told about the traffic, and what it assumes about time."""

    messages_per_second: float
    fragments_per_burst: float = 3
    reply_parts: float = 1
    callbacks_per_part: float = 3  # WhatsApp: sent, delivered, read (SMS: 2)
    tenants: int = 1
    bursts_per_conversation: float = 10  # a new conversation every this many bursts
    openai_seconds: float = 3.0  # one Generate Reply's wait on OpenAI
    twilio_seconds_per_part: float = 0.3
    aws_call_seconds: float = 0.01  # one DynamoDB, Step Functions or EventBridge call from Lambda
    handler_base_seconds: float = 0.01
    ai_input_tokens: int = 2_000  # per AI call (as make bench assumes)
    ai_output_tokens: int = 200
    log_bytes_per_invocation: int = 1_500  # START/END/REPORT, our JSON lines, EMF metrics
    log_bytes_per_history_event: int = 400  # the state machine's log (level ALL, no payloads)
    overrides: dict[str, Any] = field(default_factory=dict)  # settings: NAME or name -> value

    @property
    def bursts_per_second(self) -> float:
        return self.messages_per_second / self.fragments_per_burst

    @property
    def callbacks_per_burst(self) -> float:
        return self.reply_parts * self.callbacks_per_part


def settings(overrides: dict[str, Any]) -> dict[str, Any]:
    """Every setting's default (Settings and StackSettings), with `overrides` (by field name
    or environment variable) over them."""
    values: dict[str, Any] = {
        name: info.default for name, info in Settings.model_fields.items() if info.default is not None
    }
    values.update(
        {f.name: f.default for f in fields(StackSettings) if f.default is not MISSING}  # type: ignore[misc]
    )
    for name, value in overrides.items():
        values[name.lower()] = type(values.get(name.lower(), value))(value)
    return values


def duration_seconds(function: str, a: Assumptions, values: dict[str, Any]) -> float:
    """One invocation's assumed duration: a base, plus each AWS call, plus the vendors' time
    (OpenAI for Generate Reply; Twilio, and the pause between parts, for Send Reply)."""
    calls = sum(
        c.count.at(a.fragments_per_burst, a.callbacks_per_burst)
        for c in burst.CALLS
        if c.function == function
    )
    invocations = burst.INVOCATIONS[function].at(a.fragments_per_burst, a.callbacks_per_burst)
    seconds = a.handler_base_seconds + a.aws_call_seconds * calls / invocations
    if function == "GenerateReply":
        seconds += a.openai_seconds
    if function == "SendReply":
        pause = float(values["reply_part_interval_seconds"])
        seconds += a.twilio_seconds_per_part * a.reply_parts + pause * max(0.0, a.reply_parts - 1)
    return seconds


@dataclass(frozen=True)
class Rates:
    """What N messages a second make per second."""

    invocations: dict[str, float]
    calls: dict[tuple[str, str], float]  # (function, call) -> calls/s
    api_requests: float
    transitions: float
    history_events: float
    ai_calls: float
    new_conversations: float
    concurrency: dict[str, float]
    read_units: dict[str, float]  # table -> read request units/s
    write_units: dict[str, float]
    cached_reads: dict[str, float]  # call -> calls/s

    def of_call(self, call: str) -> float:
        """A call's rate, whichever functions make it."""
        return sum(rate for (_, c), rate in self.calls.items() if c == call)


def rates(a: Assumptions, values: dict[str, Any]) -> Rates:
    b, k, c = a.bursts_per_second, a.fragments_per_burst, a.callbacks_per_burst
    invocations = {f: b * n.at(k, c) for f, n in burst.INVOCATIONS.items()}
    concurrency = {f: rate * duration_seconds(f, a, values) for f, rate in invocations.items()}
    reads, writes = _dynamodb_units(a)
    return Rates(
        invocations=invocations,
        calls={(x.function, x.call): b * x.count.at(k, c) for x in burst.CALLS},
        api_requests=invocations["Webhook"] + invocations["StatusCallback"],
        transitions=b * burst.TRANSITIONS.at(k, c),
        history_events=b * burst.HISTORY_EVENTS.at(k, c),
        ai_calls=b,
        new_conversations=b / a.bursts_per_conversation,
        concurrency=concurrency,
        read_units=reads,
        write_units=writes,
        cached_reads=_cached_reads(a, values, concurrency),
    )


def _dynamodb_units(a: Assumptions) -> tuple[dict[str, float], dict[str, float]]:
    """Read and write request units a second, by table."""
    b, k, c = a.bursts_per_second, a.fragments_per_burst, a.callbacks_per_burst
    reads: dict[str, float] = {}
    writes: dict[str, float] = {}
    for x in burst.CALLS:
        if x.service != "dynamodb":
            continue
        units = b * x.items_at(k, c) * (2 if x.operation.startswith("Transact") else 1)
        bucket = writes if x.operation in _WRITES else reads
        for table in x.tables:  # a call that names several tables is counted on each
            bucket[table] = bucket.get(table, 0.0) + units
    writes["StagedMessages"] = writes.get("StagedMessages", 0.0) + b * k * burst.INDEX_WRITES_PER_FRAGMENT
    return reads, writes


def _cached_reads(a: Assumptions, values: dict[str, Any], concurrency: dict[str, float]) -> dict[str, float]:
    """The reads warm instances make once per cache lifetime, a second, by call."""
    cached: dict[str, float] = {}
    for r in burst.CACHED_READS:
        every = float(values[r.every] if isinstance(r.every, str) else r.every)
        # As many warm instances as the function's concurrency (linear in the rate: a quiet
        # deployment's idle instance refreshing its cache is left out, and costs nothing).
        instances = concurrency.get(r.function, 0.0)
        cached[r.call] = cached.get(r.call, 0.0) + instances * (a.tenants if r.per_tenant else 1) / every
    return cached
