"""What N messages a second make per second: the model's assumptions, our settings, each
function's assumed duration, and the rates of invocations, AWS calls and DynamoDB units.

Everything scales with the burst rate B = N / K (K fragments a burst): the calls of one
burst (infra/capacity/burst.py, held to recorded runs, with its window's extensions and its
reply's tool rounds) times B. Lambda concurrency is each function's invocations a second
times its duration (Little's law)."""

from __future__ import annotations

from dataclasses import MISSING, dataclass, field, fields
from typing import Any

from functions.registry import ALL_SETTINGS
from infra.capacity import burst, quotas
from infra.stack_settings import StackSettings

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
    # Quiet and adaptive modes: how often a burst's window is extended past the wait's first
    # end (a fragment after the run began waiting moved it): Burst Over? sends the run back to
    # Wait For The Burst To End, 3 transitions each. 0 in fixed mode (the default).
    extensions_per_burst: float = 0
    tool_rounds: float = 0  # a reply's tool rounds (one call each): Call Tools, Generate Reply again
    tool_seconds: float = 1.0  # the business's endpoint answering one call
    senders: int = 1  # the WhatsApp senders (our numbers) the replies leave from, evenly
    openai_rpm: float = quotas.OPENAI_TIER.requests_per_minute  # the organisation's, for the model
    openai_tpm: float = quotas.OPENAI_TIER.tokens_per_minute
    # How long one DynamoDB transaction holds its items: another one on an item meanwhile is
    # cancelled (TransactionConflict). Not published; a transaction takes a few milliseconds.
    transaction_seconds: float = 0.010
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

    def per_burst(self, count: burst.PerBurst) -> float:
        """A count of one burst at these assumptions."""
        return count.at(
            self.fragments_per_burst, self.callbacks_per_burst, self.extensions_per_burst, self.tool_rounds
        )


def settings(overrides: dict[str, Any]) -> dict[str, Any]:
    """Every setting's default (the functions' settings models and StackSettings), with
    `overrides` (by field name or environment variable) over them."""
    values: dict[str, Any] = {
        name: info.default
        for model in ALL_SETTINGS
        for name, info in model.model_fields.items()
        if not info.is_required()
    }
    values.update(
        {f.name: f.default for f in fields(StackSettings) if f.default is not MISSING}  # type: ignore[misc]
    )
    for name, value in overrides.items():
        values[name.lower()] = type(values.get(name.lower(), value))(value)
    return values


def duration_seconds(function: str, a: Assumptions, values: dict[str, Any]) -> float:
    """One invocation's assumed duration: a base, plus each AWS call, plus the vendors' time
    (OpenAI for Generate Reply; Twilio, and the pause between parts, for Send Reply; the
    business's endpoint for Call Tools)."""
    calls = sum(a.per_burst(c.count) for c in burst.CALLS if c.function == function)
    invocations = a.per_burst(burst.INVOCATIONS[function])
    seconds = a.handler_base_seconds + (a.aws_call_seconds * calls / invocations if invocations else 0)
    if function == "GenerateReply":
        seconds += a.openai_seconds
    if function == "CallTools":
        seconds += a.tool_seconds
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
    ai_calls: float  # requests to OpenAI: one per burst, and one more per tool round
    reply_parts: float  # messages sent by Twilio
    new_conversations: float
    concurrency: dict[str, float]
    read_units: dict[str, float]  # table -> read request units/s
    write_units: dict[str, float]
    cached_reads: dict[tuple[str, str], float]  # (function, call) -> calls/s

    def of_call(self, call: str) -> float:
        """A call's rate, whichever functions make it."""
        return sum(rate for (_, c), rate in self.calls.items() if c == call)

    def cached(self, call: str) -> float:
        """A cached read's rate, whichever functions make it."""
        return sum(rate for (_, c), rate in self.cached_reads.items() if c == call)


def rates(a: Assumptions, values: dict[str, Any]) -> Rates:
    b = a.bursts_per_second
    invocations = {f: b * a.per_burst(n) for f, n in burst.INVOCATIONS.items()}
    durations = {f: duration_seconds(f, a, values) for f in invocations}
    concurrency = {f: rate * durations[f] for f, rate in invocations.items()}
    reads, writes = _dynamodb_units(a)
    return Rates(
        invocations=invocations,
        calls={(x.function, x.call): b * a.per_burst(x.count) for x in burst.CALLS},
        api_requests=invocations["Webhook"] + invocations["StatusCallback"],
        transitions=b * a.per_burst(burst.TRANSITIONS),
        history_events=b * a.per_burst(burst.HISTORY_EVENTS),
        ai_calls=b * (1 + a.tool_rounds),
        reply_parts=b * a.reply_parts,
        new_conversations=b / a.bursts_per_conversation,
        concurrency=concurrency,
        read_units=reads,
        write_units=writes,
        cached_reads=_cached_reads(a, values, invocations, durations),
    )


def _dynamodb_units(a: Assumptions) -> tuple[dict[str, float], dict[str, float]]:
    """Read and write request units a second, by table."""
    b, k = a.bursts_per_second, a.fragments_per_burst
    reads: dict[str, float] = {}
    writes: dict[str, float] = {}
    for x in burst.CALLS:
        if x.service != "dynamodb":
            continue
        items = x.items_at(k, a.callbacks_per_burst, a.extensions_per_burst, a.tool_rounds)
        units = b * items * (2 if x.operation.startswith("Transact") else 1)
        bucket = writes if x.operation in _WRITES else reads
        for table in x.tables:  # a call that names several tables is counted on each
            bucket[table] = bucket.get(table, 0.0) + units
    writes["StagedMessages"] = writes.get("StagedMessages", 0.0) + b * k * burst.INDEX_WRITES_PER_FRAGMENT
    return reads, writes


def _cached_reads(
    a: Assumptions, values: dict[str, Any], invocations: dict[str, float], durations: dict[str, float]
) -> dict[tuple[str, str], float]:
    """The reads warm instances make once per cache lifetime, a second, by function and call.

    As many warm instances as the function's concurrency c = r·d (r invocations a second of d
    seconds; linear in the rate: a quiet deployment's idle instance is left out), each serving
    every tenant's conversations alike: one instance sees a tenant's every 1/(d·T) seconds
    (T tenants), and reads again at the first one after its copy expired (every L seconds),
    once per L + d·T seconds. In all r·d·T / (L + d·T) a second: c·T/L while an instance sees
    each tenant often, and at most r (each invocation reads) when tenants outnumber what an
    instance serves in L. Lambda keeps more instances warm than c (idle ones between bursts):
    their reads come on top, up to one per invocation."""
    cached: dict[tuple[str, str], float] = {}
    for r in burst.CACHED_READS:
        every = float(values[r.every] if isinstance(r.every, str) else r.every)
        rate, seconds = invocations.get(r.function, 0.0), durations.get(r.function, 0.0)
        tenants = a.tenants if r.per_tenant else 1
        key = (r.function, r.call)
        cached[key] = cached.get(key, 0.0) + rate * seconds * tenants / (every + seconds * tenants)
    return cached
