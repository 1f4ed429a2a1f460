"""The items the service keeps, one typed model per table. The table modules take and
return these; nothing outside the table modules sees a raw DynamoDB item."""

from decimal import Decimal
from typing import Any, Literal, Protocol, Self, TypeVar

from pydantic import BaseModel, ConfigDict, field_validator

from functions import clock
from functions.intake.inbound import Attachment, Channel, Consent, MessageContent

ItemType = TypeVar("ItemType", bound="TableItem")


def from_dynamo(value: Any) -> Any:
    """Decimals become ints or floats."""
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, dict):
        return {k: from_dynamo(v) for k, v in value.items()}
    if isinstance(value, list):
        return [from_dynamo(v) for v in value]
    return value


class TableItem(BaseModel):
    """An item of one of the service's tables, typed. Attributes the item has and the model
    does not are ignored (an item written by a later version is still read)."""

    model_config = ConfigDict(extra="ignore", hide_input_in_errors=True, defer_build=True)

    def to_item(self) -> dict[str, Any]:
        """The item's attributes, without the ones that are None (absent, not NULL)."""
        return without_none(self.model_dump(mode="json"))

    @classmethod
    def from_item(cls: type[ItemType], item: dict[str, Any]) -> ItemType:
        """The model of an item read from its table (DynamoDB's Decimals become numbers)."""
        return cls.model_validate(from_dynamo(item))


def without_none(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: without_none(v) for k, v in value.items() if v is not None}
    if isinstance(value, list | tuple):
        return [without_none(v) for v in value]
    return value


class Conversation(TableItem):
    """One conversation between a user and one of our numbers (the parts the functions
    use; the processing lock and the totals are written by expressions only)."""

    conversation_id: str
    channel: Channel
    user_address: str  # the user's number ("whatsapp:+1555..." on WhatsApp)
    our_address: str  # our Twilio number the user wrote to
    created_at: str
    # The tenant (Twilio AccountSid) the conversation belongs to, recorded when it is
    # created: its replies go out with this tenant's credentials only.
    tenant_account_sid: str | None = None
    task_complete: bool = False
    openai_conversation_id: str | None = None
    # Names of Secrets Manager secrets with this tenant's credentials (the seeds'
    # channel_config / ai_config), which must lie under the tenant's own prefix
    # (functions/tenancy/secrets.py); empty means the tenant's Twilio account and the
    # deployment's OpenAI key.
    twilio_credentials_secret: str | None = None
    openai_api_key_secret: str | None = None
    ai_model: str | None = None
    ai_instructions: str | None = None
    # The seeds' conversation rules: a project that is not active, or a channel the
    # conversation is not allowed on, is answered with a configured reply, not staged.
    project_status: str = "active"
    allowed_channels: list[Channel] | None = None  # None: every channel
    project_id: str | None = None
    # Batching rules of this conversation (functions/batching/rules/debounce.py), partial.
    batching: dict[str, Any] | None = None
    # The user sent an opt-out keyword (STOP...) and no opt-in keyword since: its batches
    # are recorded, not answered (functions/guards/consent.py).
    opted_out: bool = False
    opted_out_by: str | None = None  # the user turn whose keyword last changed `opted_out`
    # `adaptive` batching (functions/batching/rules/adaptive.py): the learned quiet period, the
    # last answered burst's last fragment and when that burst was declared over (set with
    # the processing lock).
    learned_quiet_ms: int | None = None
    last_burst_ms: int | None = None
    burst_closed_ms: int | None = None
    # When the last reply was recorded sent (a fragment soon after it: SplitBursts).
    last_reply_at: str | None = None
    # Handed off to a person (functions/handoff/pausing.py): since when, until when
    # (None: until resumed), by whom (operator, helpdesk, keyword) and, by a keyword, its message.
    paused_at: str | None = None
    paused_until: str | None = None
    paused_by: str | None = None
    paused_by_message: str | None = None
    # Conversations of one person and number: the first is generation 0; a person who writes
    # again after theirs was forgotten opens the next (conversations.create).
    generation: int = 0
    # Forgetting the person (functions/personal_data/forgetting.py): since when (from then on,
    # done: `task_complete`), how many runs, what they did (counts), and when it was done.
    forget_started_at: str | None = None
    forget_runs: int = 0
    forget_counts: dict[str, int] = {}
    forgotten_at: str | None = None


class AskedCall(BaseModel):
    """A function call a response asked for (its `function_call` item): the arguments as
    the model wrote them (JSON text)."""

    model_config = ConfigDict(extra="ignore", frozen=True, defer_build=True)

    call_id: str
    name: str
    arguments: str


class ToolCall(TableItem):
    """A tool call, claimed before it is made and its outcome recorded
    (functions/assistant/tool_calls.py): `claimed` while an attempt makes it (found so by a
    later attempt: in doubt), `not_made` (no connection: may be made again), and the outcomes, final:
    `answered`, `refused`, `in_doubt` (sent, no answer: never made again when it has side
    effects), `unavailable` (a read-only call that never got an answer)."""

    conversation_id: str
    call_key: str
    name: str
    side_effects: bool = False
    status: Literal["claimed", "not_made", "answered", "refused", "in_doubt", "unavailable"] = "claimed"
    attempts: int = 0
    output: str | None = None  # what the model is told (the endpoint's JSON, or why none)
    window_id: str = ""
    claimed_at: str = ""
    finished_at: str | None = None
    expires_at: int = 0

    @property
    def finished(self) -> bool:
        return self.status in ("answered", "refused", "in_doubt", "unavailable")


class Confirmation(TableItem):
    """A call of a `confirm: true` tool the model proposed (ToolCalls, `confirm#...`): the
    batch that proposed it, until when the person may say yes, and the batch that used it."""

    conversation_id: str
    call_key: str
    name: str
    batch_key: str  # the proposing batch's first message
    window_id: str  # its window
    asked_at: str
    expires_at: int
    used_by: str | None = None  # the batch whose yes made the call


class AIRequest(TableItem):
    """The OpenAI response asked for a batch, kept on the batch's first staged message
    until the batch is answered (its tombstone drops it), so that every later attempt, and
    a later window for the same messages, finds it instead of asking again."""

    message_sids: list[str]  # the batch it answers, in arrival order
    window_id: str  # the window whose user turn was its input
    openai_conversation_id: str
    requested_at: str
    # None while its creation's outcome is unknown (asked, no answer): the conversation may
    # hold its turn, and is checked before asking again.
    response_id: str | None = None
    # Asked again after an unknown outcome: once answered, check for a stray earlier copy.
    recovered: bool = False
    # Asked without the batch's images, after OpenAI refused one of them.
    images_left_out: bool = False
    # Tool rounds (functions/states/call_tools.py): the rounds of tool outputs sent so
    # far for this batch (0: the request was the user turn), and the calls the response
    # `response_id` asked for, to be made and answered in the next round.
    tool_round: int = 0
    answering: list[AskedCall] = []  # the calls whose outputs this request sends
    called: list[str] = []  # the tools called in the rounds so far (names, in order)
    responses: list[str] = []  # every response asked for it, each round's (stored at OpenAI)
    calls: list[AskedCall] = []


class StagedMessage(MessageContent, TableItem):
    """A message accepted from the webhook and waiting for its batch: what the person
    sent (MessageContent: body, media, location, button, ad, reply, opt-out keyword)."""

    conversation_id: str
    message_sid: str
    received_at: str = ""  # ISO 8601, UTC, microseconds: arrival order (absent on a tombstone)
    answered_in: str | None = None  # a tombstone: answered by this window
    failed_in: str | None = None  # set aside by this window
    ai_response_id: str | None = None  # a forgotten message's batch's OpenAI response

    @classmethod
    def from_item(cls, item: dict[str, Any]) -> "StagedMessage":
        if "media" not in item and item.get("media_urls"):  # staged before media had types
            item = {**item, "media": [{"url": url} for url in item["media_urls"]]}
        return cls.model_validate(from_dynamo(item))

    @property
    def is_pending(self) -> bool:
        return self.answered_in is None and self.failed_in is None

    ai_request: AIRequest | None = None


class TurnMedia(Attachment):
    """A media item of a user turn: where its line is in the turn's body (the text the
    model is told in its place), and what kind of media it is (functions/answer/rules/content.py)."""

    kind: str
    number: int  # 1, 2, ... within the turn
    offset: int  # of its line in the body, in characters
    length: int  # of its line


class PendingKey(TableItem):
    """A pending staged message's key and arrival time (no body)."""

    message_sid: str
    received_at: str
    attempts: int = 0  # failed runs that count towards MAX_BATCH_ATTEMPTS
    transient_failures: int = 0  # failed runs in a row for a transient reason
    last_failed_at: str | None = None  # the last of them
    requeued_at: str | None = None  # the operator's last redrive: MAX_PENDING_SECONDS restarts

    def pending_since(self) -> str:
        """Since when it has waited for an answer: its arrival, or its last redrive."""
        return max(self.received_at, self.requeued_at or "")


class BatchWindow(TableItem):
    """The conversation's open batch window: its clock decides when the burst is over."""

    conversation_id: str
    window_id: str
    opened_at: str
    opened_ms: int
    last_message_ms: int
    previous_message_ms: int | None = None
    message_count: int = 1
    flush_requested: bool = False
    execution_name: str
    execution_input: str = ""
    expires_at: int = 0
    task_token: str | None = None

    @field_validator("previous_message_ms")
    @classmethod
    def _none_when_zero(cls, previous_ms: int | None) -> int | None:
        return previous_ms or None  # stored as 0 when the window opened with this message


class Resend(BaseModel):
    """A reply part sent again, by the reconciler, after Twilio reported it failed with 63018
    (the account's or sender's rate limit): who claimed sending it (the MessageSid whose
    callback said so), when, its SID."""

    model_config = TableItem.model_config

    owner: str
    since: str
    sid: str | None = None


class Delivery(BaseModel):
    """What Twilio last reported of one message we sent (its status callback): which
    message of the turn it is (a reply part's index, `template` or `fallback`), its
    status, its error code, and the status's rank (a callback never replaces a later
    status with an earlier one: `sent` arriving after `delivered` changes nothing)."""

    model_config = TableItem.model_config

    message: str
    status: str
    rank: int
    error_code: int | None = None
    at: str = ""


class OfWindow(Protocol):
    """What names a batch window's run (functions/contract.py's BatchRef and every task
    input): the conversation, the window, the run, and the window's turns."""

    @property
    def conversation_id(self) -> str: ...

    @property
    def window_id(self) -> str: ...

    @property
    def execution_name(self) -> str: ...

    @property
    def user_turn_id(self) -> str: ...

    @property
    def assistant_turn_id(self) -> str: ...


class Turn(TableItem):
    """A recorded turn: the merged user turn of a batch, or the assistant's reply. A new one
    is made by `Turn.user` or `Turn.assistant`, for the window of a run."""

    @classmethod
    def user(cls, of: OfWindow, **fields: Any) -> Self:
        """The user turn of `of`'s window (its merged batch), created now, with `fields`."""
        return cls._of_window(of, "user", of.user_turn_id, fields)

    @classmethod
    def assistant(cls, of: OfWindow, **fields: Any) -> Self:
        """The assistant turn of `of`'s window (its reply, a person's, or what a limit sends
        instead), created now, with `fields`."""
        return cls._of_window(of, "assistant", of.assistant_turn_id, fields)

    @classmethod
    def _of_window(cls, of: OfWindow, role: str, turn_id: str, fields: dict[str, Any]) -> Self:
        unknown = set(fields) - set(cls.model_fields)
        if unknown:  # the model ignores what it does not know: a misspelt field would vanish
            raise TypeError(f"a Turn has no field {', '.join(sorted(unknown))}")
        return cls.model_validate(
            {
                "conversation_id": of.conversation_id,
                "turn_id": turn_id,
                "role": role,
                "window_id": of.window_id,
                "execution_name": of.execution_name,
                "created_at": clock.iso(clock.now()),
                **fields,
            }
        )

    conversation_id: str
    turn_id: str
    role: Literal["user", "assistant"]
    status: str = ""
    window_id: str = ""
    execution_name: str = ""
    body: str = ""
    created_at: str = ""
    # user turns
    message_sids: list[str] = []
    media: list[TurnMedia] = []  # in the order of their lines in the body
    transcripts: dict[str, str] = {}  # voice notes' transcripts, by media number
    consent: Consent | None = None  # the batch's last opt-out or opt-in keyword
    message_count: int = 0
    first_message_sid: str | None = None
    first_received_at: str | None = None
    last_received_at: str | None = None
    # Each fragment's arrival after the first, in milliseconds (python -m infra.replay).
    arrival_offsets_ms: list[int] = []
    answered_at: str | None = None
    burst_ended_by: str | None = None  # why the batch's burst ended (debounce.burst_end_reason)
    error: str | None = None
    cause: str | None = None
    failed_at: str | None = None
    # Why a dead-lettered batch was set aside: max_batch_attempts or max_pending_seconds.
    dead_letter_reason: str | None = None
    fallback_message_sid: str | None = None  # the fallback reply sent for a batch set aside
    fallback_since: str | None = None  # when the first attempt to send it began
    # WhatsApp's typing indicator for the batch: when it was shown (claimed before it is
    # sent, so a retried attempt never shows it twice), and shown again (26 s later).
    typing_shown_at: str | None = None
    typing_refreshed_at: str | None = None
    # assistant turns (message_sids: the reply parts sent, in order)
    # When the first attempt to send began (set before its first message): a later
    # attempt looks in Twilio's list for the part that an earlier one may have sent.
    sending_since: str | None = None
    # When the latest attempt began, and the part whose create Twilio refused in it
    # (functions/answer/turns.py: a reply's parts are its Slot REPLY_PARTS).
    last_attempt_at: str | None = None
    refused_part: int | None = None
    refused_by: str | None = None
    # The parts sent again after a 63018, by part index (functions/delivery/part_resend.py).
    resends: dict[str, Resend] = {}
    # What Twilio reported of each message sent for this turn, by MessageSid.
    deliveries: dict[str, Delivery] = {}
    # The WhatsApp template sent once the 24-hour window was found closed (63016): who
    # claimed sending it (a MessageSid whose callback said 63016, or Send Reply), when,
    # and its SID once sent.
    template_owner: str | None = None
    template_since: str | None = None
    template_sid: str | None = None
    response_id: str | None = None
    # Every response asked for the batch (its tool rounds'), stored at OpenAI (a forget deletes them).
    response_ids: list[str] = []
    item_ids: list[str] = []  # the reply's items in the OpenAI conversation
    model: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0
    sent_at: str | None = None
    first_part_at: str | None = None  # when Twilio accepted the reply's first part
    processing_time_ms: int | None = None
    # The cost limit that applied to this batch, if any (functions/guards/limits.py).
    limited: str | None = None
    # An assistant turn a person wrote (a helpdesk's conversation.reply): "person".
    written_by: str | None = None
    # The assistant profile the batch was asked with (functions/assistant/assistant_profiles.py),
    # pinned on the user turn when it is first asked (every retry asks the same way), and the
    # tools the reply called (names, in order).
    profile_key: str | None = None
    profile_version: int | None = None
    tools_called: list[str] = []


class Tenant(TableItem):
    """A registered tenant: a Twilio account and the numbers it owns."""

    account_sid: str
    numbers: list[str] = []
    created_at: str = ""
    # The version of its credentials (token, signing keys) that its secret holds, written by
    # infra/tenants.py after the secret: a webhook holding another reads the secret again.
    token_version: str = ""
    # The webhook creates a conversation for an unknown sender of its numbers even when the
    # deployment's AUTO_CREATE_CONVERSATIONS is off (`python -m infra.tenants auto-create`).
    auto_create_conversations: bool = False
    # The OpenAI vector stores made for it (`python -m infra.assistants knowledge add`): the
    # only ones its assistant profiles may name.
    vector_store_ids: list[str] = []
    # Days after which its answered turns' texts are cut (`python -m infra.tenants retention`);
    # None: the deployment's TURN_TEXT_RETENTION_DAYS; 0: kept until forgotten.
    turn_text_retention_days: int | None = None
