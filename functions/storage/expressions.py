"""Every DynamoDB expression the service and its tools (infra.runs) write as a fixed string,
in one place. Those that the state machine's direct integrations also use reach the ASL
file through its definition substitutions (`SUBSTITUTIONS`), so Python and the ASL cannot
drift apart.

Not here, because they are built at the call: the SET/REMOVE of fields a caller names
(conversations.update, turns.mark_failed), and the conditions written with boto3's
condition builders (`Key(...)`, `Attr(...)`) in conversations.find and
functions/answer/turns.py."""

from __future__ import annotations

# --- conversations: the processing lock ------------------------------------------------
TAKE_LOCK = "SET lock_owner = :me, lock_expires_at = :exp, lock_acquired_at = :now"
LOCK_IS_FREE_OURS_OR_EXPIRED = (
    "attribute_exists(conversation_id) AND "
    "(attribute_not_exists(lock_owner) OR lock_owner = :me OR lock_expires_at < :now_epoch)"
)
RELEASE_LOCK = "REMOVE lock_owner, lock_expires_at, lock_acquired_at"
HOLDS_LOCK = "lock_owner = :me"

# --- conversations ----------------------------------------------------------------------
NEW_CONVERSATION = "attribute_not_exists(conversation_id)"
IS_A_CONVERSATION = "attribute_exists(conversation_id)"
SET_OPENAI_CONVERSATION = "SET openai_conversation_id = :o"
SET_OPTED_OUT = "SET opted_out = :o, opted_out_changed_at = :at, opted_out_by = :by"
# The notice that a limit stopped a reply (LIMITED_REPLY): at most once per period.
CLAIM_LIMITED_NOTICE = "SET limited_notice_at = :now"
LIMITED_NOTICE_DUE = "attribute_not_exists(limited_notice_at) OR limited_notice_at <= :due"
RECORD_DELIVERY_FAILURE = (
    "SET last_delivery_error = :code, last_delivery_error_at = :at ADD delivery_failures :one"
)
# Handed off to a person (functions/handoff/pausing.py); a keyword pauses only a
# conversation not paused already (or paused by this very message: a retry).
PAUSE = "SET paused_at = :at, paused_by = :by"
NOT_PAUSED = (
    "attribute_exists(conversation_id) AND (attribute_not_exists(paused_at) OR paused_until < :at"
    " OR paused_by_message = :paused_by_message)"
)
RESUME = "REMOVE paused_at, paused_by, paused_until, paused_by_message"

# --- staged messages --------------------------------------------------------------------
OF_CONVERSATION = "conversation_id = :conversation"
STAGED_KEYS = "message_sid, received_at"
IS_PENDING = "attribute_exists(pending_since)"
NEW_MESSAGE_SID = "attribute_not_exists(message_sid)"
PENDING_KEYS = "message_sid, received_at, attempts, transient_failures, last_failed_at, requeued_at"
KEEP_AI_REQUEST = "SET ai_request = :r"
DROP_AI_REQUEST = "REMOVE ai_request"
COUNT_ATTEMPT = "ADD attempts :one"
COUNT_TRANSIENT_FAILURE = "ADD transient_failures :one SET last_failed_at = :at"
# Set aside (a failed batch's messages) and requeued (the operator's redrive).
SET_ASIDE = "SET failed_in = :w, failure = :r REMOVE pending_since"
IS_SET_ASIDE = "attribute_exists(failed_in)"
REQUEUE = (
    "SET pending_since = :since, requeued_at = :now "
    "REMOVE failed_in, failure, attempts, transient_failures, last_failed_at"
)
# A configured answer to a sender: none given yet, or the last one before :since.
ANSWER_DUE = "attribute_not_exists(message_sid) OR answered_ms < :since"

# --- batch windows ----------------------------------------------------------------------
NO_OPEN_WINDOW = "attribute_not_exists(conversation_id)"
IS_THIS_WINDOW = "window_id = :window"
PARK_TOKEN = "SET task_token = :token, token_entered_ms = :entered"
PARK_IF_NEWER = (
    "window_id = :window AND (attribute_not_exists(token_entered_ms) OR token_entered_ms < :entered)"
)
# Count a message in the window, opening it if none is open ({open}: the opening fields,
# each `if_not_exists`); 0 stands for "no previous message". A flush request, once made,
# stays ({flush}: `:flush` for a message that flushes, else `if_not_exists`).
COUNT_MESSAGE = (
    "SET {open}, previous_message_ms = if_not_exists(last_message_ms, :none), last_message_ms = :now, "
    "flush_requested = {flush} ADD message_count :one"
)

# --- turns ------------------------------------------------------------------------------
IS_A_TURN = "attribute_exists(turn_id)"
# A person's reply (functions/answer/turns.py): written once, sent, its OpenAI item.
NEW_TURN = "attribute_not_exists(turn_id)"
PERSON_REPLY_SENT = "SET #status = :sent, sent_at = if_not_exists(sent_at, :at)"
CLAIM_ITEM = "SET item_since = if_not_exists(item_since, :now)"
RECORD_ITEM = "SET item_ids = :ids"
SET_TRANSCRIPTS = "SET transcripts = :t"
# A reply part's MessageSid, appended in part order (the condition is built in turns.py),
# and when Twilio accepted the turn's first part (ReplyDelay): a reply's parts are a Slot
# `in_order` (below).
APPEND_MESSAGE_SID = (
    "SET message_sids = list_append(if_not_exists(message_sids, :empty), :sid), "
    "first_part_at = if_not_exists(first_part_at, :at)"
)
# The turns `infra.runs stats` reads: keys, times and counts (no bodies), recorded or begun
# since `:early`.
TURN_FIGURES = (
    "conversation_id, turn_id, window_id, #role, #status, message_count, message_sids, first_received_at, "
    "last_received_at, answered_at, burst_ended_by, first_part_at, sent_at, #limited, written_by"
)
TURNS_SINCE = "answered_at >= :early OR sent_at >= :early OR first_received_at >= :early"
# A batch window's turns (infra.runs): `:w` is functions.storage.tables.turn_ids_of_window.
TURNS_OF_WINDOW = "conversation_id = :c AND begins_with(turn_id, :w)"
# An answered batch, in one transaction: its turns (`#s`: status), the conversation's totals,
# and the processing lock released (on condition HOLDS_LOCK).
ANSWER_USER_TURN = "SET #s = :status, answered_at = :at, burst_ended_by = :ended"
SEND_ASSISTANT_TURN = "SET #s = :sent, sent_at = :at, processing_time_ms = :ms"
_RECORD_ANSWER = "SET updated_at = :at, conversation_status = :status, last_assistant_message_sid = :sid"
_ADD_TOTALS = " ADD prompt_tokens :p, completion_tokens :c, total_tokens :t, turn_count :turns "
RECORD_ANSWER_AND_RELEASE_LOCK = _RECORD_ANSWER + _ADD_TOTALS + RELEASE_LOCK
# The same, when a message went to the user: when (the webhook counts a fragment soon after
# it as a split burst).
RECORD_REPLY_AND_RELEASE_LOCK = _RECORD_ANSWER + ", last_reply_at = :at" + _ADD_TOTALS + RELEASE_LOCK
# A message sent once (functions/delivery/send_once.py), where its turn keeps it (a Slot of
# functions/answer/turns.py): claimed by its first attempt (`#since`: when it began; `#owner`:
# who sends it, the first to claim it), its SID kept (`#sid`).
CLAIM_ONCE = "SET #since = if_not_exists(#since, :now)"
CLAIM_OWNED = CLAIM_ONCE + ", #owner = if_not_exists(#owner, :owner)"
RECORD_ONCE = "SET #sid = :sid"
# A reply's parts: each attempt's claim keeps when it began (`last_attempt_at`), and the part
# whose create Twilio refused in it.
BEGIN_SENDING = CLAIM_ONCE + ", deliveries = if_not_exists(deliveries, :none), last_attempt_at = :now"
REFUSE_PART = "SET refused_part = :part, refused_by = :attempt"
# A message kept in a map of its turn under its part (`#map`: a resend's, in `resends`),
# claimed as a whole: its owner and since.
MAKE_MAP = "SET #map = if_not_exists(#map, :none)"
CLAIM_IN_MAP = "SET #map.#part = if_not_exists(#map.#part, :claim)"
RECORD_IN_MAP = "SET #map.#part.#sid = :sid"
# A part due for a resend later (functions/delivery/due_resends.py): kept once.
NEW_DUE_RESEND = "attribute_not_exists(conversation_id)"
# A message's status callback: kept unless a status of the same or a later rank is.
RECORD_DELIVERY = "SET deliveries.#sid = :delivery"
LATER_DELIVERY = (
    "attribute_exists(turn_id) AND attribute_exists(deliveries) AND "
    "(attribute_not_exists(deliveries.#sid) OR deliveries.#sid.#rank < :rank)"
)
FIRST_DELIVERY = "SET deliveries = :deliveries"
NO_DELIVERIES_YET = "attribute_exists(turn_id) AND attribute_not_exists(deliveries)"
# WhatsApp's typing indicator (#f: typing_shown_at or typing_refreshed_at): the first to
# claim it shows it.
CLAIM_TYPING = "SET #f = :now"
UNCLAIMED_TYPING = "attribute_exists(turn_id) AND attribute_not_exists(#f)"

# --- tenants ----------------------------------------------------------------------------
REGISTER_ACCOUNT = "SET account_sid = :sid, created_at = if_not_exists(created_at, :now)"
ADD_NUMBERS = "ADD numbers :numbers"
DROP_NUMBERS = "DELETE numbers :numbers"
NUMBER_IS_FREE_OR_OURS = "attribute_not_exists(tenant_key) OR account_sid = :sid"
# A number's item, claimed or kept by its tenant: its other attributes (its sender's rate) stay.
OWN_NUMBER = "SET account_sid = :sid, address = :address"
SET_SENDER_MPS = "SET sender_mps = :mps"
DROP_SENDER_MPS = "REMOVE sender_mps"
SET_TURN_TEXT_RETENTION = "SET turn_text_retention_days = :days"
DROP_TURN_TEXT_RETENTION = "REMOVE turn_text_retention_days"
NUMBER_IS_OURS = "account_sid = :sid"
GIVE_NUMBER = "SET account_sid = :to"
NUMBER_IS_THEIRS = "account_sid = :from"
IS_A_TENANT = "attribute_exists(tenant_key)"
SET_TOKEN_VERSION = "SET token_version = :version"
SET_AUTO_CREATE = "SET auto_create_conversations = :on"
ADD_VECTOR_STORE = "SET vector_store_ids = list_append(if_not_exists(vector_store_ids, :none), :store)"
TENANT_ACCOUNTS = "begins_with(tenant_key, :account)"

# --- usage counters (cost limits) -------------------------------------------------------
# `#n`: the counter's attribute, calls or tokens; `:limit`: the share of its ceiling that its item holds.
COUNT = "ADD #n :amount SET expires_at = :expires"
BELOW_LIMIT = "attribute_not_exists(#n) OR #n < :limit"
COUNTER_SHARD = "counter_key, #n"  # what a shard holds, read when a shard is full
# The marks of what a batch has counted, on its first staged message (the batch's AI request
# is kept there too): a count is made with its mark, and not made again once the mark is there.
MARK_COUNTED = "ADD counted :marks"
NOT_COUNTED = "attribute_exists(message_sid) AND NOT contains(counted, :mark)"

# --- the senders' turns (functions/delivery/sender_budget.py) ---------------------------------
# `next_us`: when the sender's (shard's) next turn begins, epoch microseconds. Busy: take
# that turn and move it on by one gap, if it begins by :latest; idle (no turn booked ahead):
# the turn is now, the next one a gap later.
TAKE_NEXT_TURN = "ADD next_us :gap SET expires_at = :expires"
NEXT_TURN_BOOKED_BY = "next_us BETWEEN :now AND :latest"
TAKE_TURN_NOW = "SET next_us = :next, expires_at = :expires"
NO_TURN_BOOKED = "attribute_not_exists(next_us) OR next_us < :now"

# The `${Placeholder}`s of the ASL that are expressions, with their values.
SUBSTITUTIONS = {
    "ReleaseLockExpression": RELEASE_LOCK,
    "HoldsLockCondition": HOLDS_LOCK,
    "StagedOfConversation": OF_CONVERSATION,
    "StagedKeysProjection": STAGED_KEYS,
    "IsThisWindowCondition": IS_THIS_WINDOW,
}

# What the console (infra/console) reads of a batch set aside: its keys and status only.
SET_ASIDE_TURN_FIELDS = "conversation_id, turn_id, #r, #s, window_id, failed_at"

# A helpdesk's command as first received (usage_counters.receive_command): its time, kept
# for every delivery of the event, and whether the command limits admitted it.
RECEIVE_COMMAND = (
    "SET received_at = if_not_exists(received_at, :now), expires_at = if_not_exists(expires_at, :exp)"
)
ADMIT_COMMAND = "SET admitted = :admitted"

# --- assistant profiles (functions/assistant/assistant_profiles.py) -------------------------------
PROFILE_VERSIONS = "profile_key = :key"
NEW_PROFILE_VERSION = "attribute_not_exists(version)"
PROFILE_KEYS = "profile_key, version"
# A batch's profile version, pinned on its user turn by its first attempt.
PIN_PROFILE = "SET profile_key = :key, profile_version = :version"
PROFILE_NOT_PINNED = "attribute_exists(turn_id) AND attribute_not_exists(profile_version)"

# --- tool calls (functions/assistant/tool_calls.py) -----------------------------------------------
# Claimed for an attempt (counted), its first claim's fields kept.
CLAIM_TOOL_CALL = (
    "SET #name = if_not_exists(#name, :name), side_effects = if_not_exists(side_effects, :side),"
    " #status = if_not_exists(#status, :claimed), window_id = if_not_exists(window_id, :window),"
    " claimed_at = if_not_exists(claimed_at, :now), expires_at = :expires ADD attempts :one"
)
MARK_TOOL_CALL = "SET #status = :status"
RECORD_TOOL_CALL = "SET #status = :status, #output = :output, finished_at = :now"
# A proposal of a `confirm: true` call, used once: by the first batch that says yes to it.
USE_CONFIRMATION = "SET used_by = :batch"
UNUSED_CONFIRMATION = "attribute_exists(call_key) AND (attribute_not_exists(used_by) OR used_by = :batch)"

# --- forgetting a person (functions/personal_data/forgetting_store.py) -------------------------------------
# A forget begins (or goes on) only while no run holds the conversation: its processing lock is
# free or expired (and, checked beside it, no batch window is open). From then on no webhook
# finds it (`task_complete`), and the forget's record counts its runs.
BEGIN_FORGET = (
    "SET forget_started_at = if_not_exists(forget_started_at, :now), task_complete = :done, "
    "forget_last_run_at = :now ADD forget_runs :one"
)
NO_RUN_HOLDS_IT = (
    "attribute_exists(conversation_id) AND (attribute_not_exists(lock_owner) OR lock_expires_at < :now_epoch)"
)
RECORD_FORGET = "SET forget_counts = :counts"
STILL_FORGETTING = "forget_started_at = :started"
# What forget reads of the items it deletes, and of a tombstone it looks for: their keys.
TOOL_CALL_KEYS = "conversation_id, call_key"
WINDOW_KEY = "conversation_id"
MESSAGE_SID = "message_sid"


# --- retention (functions/personal_data/retention_store.py) -------------------------------------------------
def status_in(placeholders: list[str]) -> str:
    """A turn's status is one of these values (`#s` names `status`)."""
    return f"#s IN ({', '.join(placeholders)})"
