"""Configuration of the functions, read once from the environment into a typed model.
The names of the resources the stack creates have no defaults: a function deployed
without them fails at cold start, not at its first request. A pydantic model, like every
model of the service (docs/adr/0059-models-are-pydantic-models-as-the-design-card.md)."""

import os
from functools import cache
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError

from functions import stack_names
from functions.default_model import DEFAULT_MODEL
from functions.public_url import PublicBase, public_base
from functions.setting_values import (  # noqa: F401 (read_flag: also for infra/names.py)
    BatchMode,
    Flag,
    Name,
    read_flag,
    read_template_variables,
)
from functions.stack_names import STACK_NAME

# The most messages a second a sender's rate can be (Twilio's WhatsApp senders: 400 for text;
# Meta's Cloud API: 1,000), as TWILIO_SENDER_MPS and as a number's own rate.
MAX_SENDER_MPS = 1000
MAX_RETENTION_DAYS = 36_500  # a tenant's or the deployment's turn-text retention, at most


class Settings(BaseModel):
    """Every setting a function reads. Each is the environment variable of its name in
    capitals (`conversations_table`: CONVERSATIONS_TABLE)."""

    # Numbers are read from their text ("20" is 20); a variable the model does not know
    # (PATH, AWS_REGION, ...) is ignored.
    model_config = ConfigDict(frozen=True, alias_generator=str.upper, extra="ignore", defer_build=True)

    conversations_table: Annotated[str, Field(min_length=1)]
    staged_messages_table: Annotated[str, Field(min_length=1)]
    batch_windows_table: Annotated[str, Field(min_length=1)]
    turns_table: Annotated[str, Field(min_length=1)]
    projects_table: Annotated[str, Field(min_length=1)]
    tenants_table: Annotated[str, Field(min_length=1)]
    usage_counters_table: Annotated[str, Field(min_length=1)]
    assistant_profiles_table: Annotated[str, Field(min_length=1)]
    tool_calls_table: Annotated[str, Field(min_length=1)]
    # Set on the functions that start or inspect runs.
    state_machine_arn: str = ""
    event_bus_name: Annotated[str, Field(min_length=1)]

    # The global batching rules (functions/batching/rules/debounce.py); a project's or a
    # conversation's own rules override them.
    batch_mode: BatchMode = "fixed"
    batch_window_seconds: Annotated[int, Field(ge=1, le=3600)] = 10
    quiet_seconds: Annotated[float, Field(gt=0)] = 3
    typing_gap_seconds: Annotated[float, Field(ge=0)] = 2
    typing_quiet_seconds: Annotated[float, Field(gt=0)] = 6
    # Adaptive mode's bounds (docs/adr/0127-adaptive-batchings-defaults-chosen-across-six.md).
    quiet_min_seconds: Annotated[float, Field(gt=0)] = 2.5
    quiet_max_seconds: Annotated[float, Field(gt=0)] = 20
    # At most 600 (functions/batching/rules/burst.py MAX_WAIT_LIMIT_SECONDS, which clamps a
    # conversation's own rules): the wait task's timeout (TimeoutSecondsPath), each wait that
    # new fragments extend adding events to a run's history, which Step Functions caps at 25,000.
    max_wait_seconds: Annotated[float, Field(gt=0, le=600)] = 60
    max_batch_messages: Annotated[int, Field(ge=0)] = 0
    # A fragment that arrives while the reply is being generated: `merge` answers it in
    # that reply (the reply is asked again, at most MAX_REGENERATIONS times), `next` in the
    # next window.
    on_newer: Literal["merge", "next"] = "merge"
    max_regenerations: Annotated[int, Field(ge=0, le=5)] = 2
    # A burst that begins this soon after a reply was split by the wait (SplitBursts); 0: none counted.
    split_seconds: Annotated[float, Field(ge=0)] = 30
    # A batch holds at most this many messages, and bodies of at most this many bytes (the
    # merged user turn is one DynamoDB item, at most 400 KB); the rest go to the next batch.
    max_batch_size: Annotated[int, Field(ge=1, le=100)] = 50
    max_batch_bytes: Annotated[int, Field(ge=12_000, le=300_000)] = 64_000
    flush_keywords: str = ""  # comma-separated
    # Typed words that hand a conversation to a person, and what it is told (handoff.py).
    handoff_keywords: str = ""
    handoff_reply: str = "A person will answer you here soon."
    lock_lease_seconds: Annotated[int, Field(ge=30)] = 600
    auto_create_conversations: Flag = False
    # Answered staged messages are kept as bodiless tombstones this long, so that a
    # late Twilio retry, or a replay of a signed request, of the same MessageSid is still
    # recognised as a duplicate: a year, so that a captured START or STOP replayed later
    # flips nothing and costs no AI call (about 230 bytes of storage each).
    answered_message_retention_seconds: Annotated[int, Field(ge=1)] = 365 * 24 * 3600
    # Answered turns' texts (the merged user turn, media lines, transcripts, the reply) are
    # cut to their figures this many days after the turn, and the OpenAI conversation's items
    # of those turns deleted (functions/personal_data/retention.py; a tenant's own days:
    # `python -m infra.tenants retention`). 0: kept until the person is forgotten, the
    # default: how long a business keeps its customers' messages is the business's decision,
    # and a retention also shortens what the assistant remembers (ADR 0147).
    turn_text_retention_days: Annotated[int, Field(ge=0, le=MAX_RETENTION_DAYS)] = 0

    # A batch whose run failed this many times for a reason that is not an outage (a bug,
    # bad data: functions/batching/rules/failures.py) is set aside (dead-lettered), not retried.
    max_batch_attempts: Annotated[int, Field(ge=1)] = 3
    # A batch whose runs failed for a transient reason (timeouts, throttling, 5xx, retries
    # exhausted) is tried again by the reconciler TRANSIENT_RETRY_FIRST_SECONDS after its
    # first such failure, twice as long after each further one, at most
    # TRANSIENT_RETRY_MAX_SECONDS apart; once its oldest message has been pending
    # MAX_PENDING_SECONDS (6 hours: well within WhatsApp's 24-hour window) it is set aside
    # at its next failure (dead-lettered, alarmed).
    max_pending_seconds: Annotated[int, Field(ge=1, le=24 * 3600)] = 6 * 3600
    transient_retry_first_seconds: Annotated[int, Field(ge=1)] = 60
    transient_retry_max_seconds: Annotated[int, Field(ge=1)] = 1800
    # The reconciler opens a window for messages pending longer than this with none open.
    reconcile_after_seconds: Annotated[int, Field(ge=10)] = 120

    # What the user is told, when set (empty: nothing is sent).
    fallback_reply: str = "Sorry, I can't answer right now. Please try again later."
    unknown_sender_reply: str = ""
    inactive_project_reply: str = ""
    channel_not_allowed_reply: str = ""
    # WhatsApp template (Content SID) sent when the 24-hour window has closed (63016),
    # through this Messaging Service (MG...), as Twilio sends Content Template Builder
    # templates; a template without a Messaging Service is not sent (logged as an error).
    whatsapp_template_content_sid: str = ""
    twilio_messaging_service_sid: str = ""
    # Its variables, sent as its ContentVariables (a JSON object, `{"1": "our shop"}`);
    # empty: none, and Twilio fills in the template's sample values.
    whatsapp_template_variables: Annotated[str, AfterValidator(read_template_variables)] = ""
    # WhatsApp: the one message that confirms an opt-out (Twilio confirms an SMS opt-out
    # itself); empty sends none.
    opt_out_confirmation: str = (
        "You won't get any more messages from us here. Send START to hear from us again."
    )

    # Secrets Manager: each tenant's Twilio credentials are the secret
    # <TWILIO_TENANT_SECRET_PREFIX><AccountSid>; a tenant's own OpenAI keys lie under
    # <OPENAI_TENANT_SECRET_PREFIX><AccountSid>; the deployment's OpenAI key is the default.
    # The defaults are the names of the stack named STACK_NAME (the local stack's).
    twilio_tenant_secret_prefix: Annotated[str, Field(min_length=1)] = (
        stack_names.twilio_tenant_secret_prefix(STACK_NAME)
    )
    openai_tenant_secret_prefix: Annotated[str, Field(min_length=1)] = (
        stack_names.openai_tenant_secret_prefix(STACK_NAME)
    )
    openai_secret_name: str = stack_names.openai_secret_name(STACK_NAME)
    # The key new conversation ids are drawn with (functions/tenancy/id_key.py): read by
    # the functions that create conversations, once per instance.
    conversation_id_key_secret_name: str = stack_names.conversation_id_key_secret_name(STACK_NAME)
    secrets_max_age_seconds: Annotated[int, Field(ge=0)] = 300  # Powertools' cache; 0: none
    # The functions that send for a conversation read its tenant's Twilio credentials through
    # a session of this role tagged with the tenant, which can read no other tenant's
    # secrets (infra/constructs/tenant_reader.py); empty: through their own roles.
    twilio_tenant_reader_role_arn: str = ""
    # Generate Reply and Conversation Commands read a tenant's own OpenAI key (a
    # conversation's `openai_api_key_secret`) through a session of this role tagged with the
    # tenant, as above; empty: through their own roles. The deployment's key: their own roles.
    openai_tenant_reader_role_arn: str = ""
    # Call Tools signs each call with the tenant's tool-signing secret,
    # <TOOL_TENANT_SECRET_PREFIX><AccountSid>, read through a session of this role tagged
    # with the tenant (as above); empty: through its own role.
    tool_tenant_secret_prefix: Annotated[str, Field(min_length=1)] = stack_names.tool_tenant_secret_prefix(
        STACK_NAME
    )
    tool_tenant_reader_role_arn: str = ""
    # The webhook keeps tenants in memory: a known one this long (a change made with
    # `infra.tenants` reaches a warm webhook within this time), an unknown AccountSid longer.
    tenant_cache_seconds: Annotated[float, Field(ge=0)] = 60
    unknown_tenant_cache_seconds: Annotated[float, Field(ge=0)] = 300

    # Cost limits (functions/guards/limits.py); 0 means no limit. Defaults that a normal
    # conversation never meets.
    max_ai_calls_per_hour_per_conversation: Annotated[int, Field(ge=0)] = 60
    max_ai_calls_per_hour_per_sender: Annotated[int, Field(ge=0)] = 120
    # Ceilings on a tenant's spend (whose senders may be invented) and on everyone's. Calls
    # and new conversations: off by default (a count is not a cost, and a fixed one silenced
    # a busy deployment); tokens (input and output, as OpenAI reports each response's usage):
    # sized to admit 1,000 messages a second at the context budget (docs/capacity.md).
    max_ai_calls_per_hour_per_tenant: Annotated[int, Field(ge=0)] = 0
    max_ai_calls_per_hour: Annotated[int, Field(ge=0)] = 0
    max_new_conversations_per_hour_per_tenant: Annotated[int, Field(ge=0)] = 0
    # A helpdesk's commands (conversation.pause, .resume, .reply) an hour, per conversation
    # and per tenant: past either, a command is refused (ConversationCommandsLimited).
    max_commands_per_hour_per_conversation: Annotated[int, Field(ge=0)] = 60
    max_commands_per_hour_per_tenant: Annotated[int, Field(ge=0)] = 100_000
    max_ai_tokens_per_hour_per_tenant: Annotated[int, Field(ge=0)] = 10_000_000_000
    max_ai_tokens_per_hour: Annotated[int, Field(ge=0)] = 10_000_000_000
    # Sent instead of a reply that a cost limit stopped, at most once an hour per
    # conversation (empty: nothing is sent; the batch is a metric and an alarm either way).
    limited_reply: str = ""
    max_reply_parts_per_batch: Annotated[int, Field(ge=0)] = 10
    # SMS is billed per segment (functions/delivery/rules/sms_segments.py): an SMS reply is cut
    # to this many segments in all (10: 1,530 GSM-7 characters, or 670 in UCS-2), and asked
    # for with at most OPENAI_MAX_OUTPUT_TOKENS_SMS tokens (or OPENAI_MAX_OUTPUT_TOKENS if
    # lower), reasoning included: 10 segments of text are about 400 tokens.
    max_sms_segments_per_reply: Annotated[int, Field(ge=0)] = 10
    openai_max_output_tokens_sms: Annotated[int, Field(ge=16)] = 1024

    # The batch.answered event carries keys and counts; texts and the user's address only
    # when this is on.
    event_includes_texts: Flag = False

    # What people send besides text (functions/answer/media.py): photos reach the model as
    # images, voice notes as their transcripts; each can be turned off (then the model is
    # told that a photo or a voice note was sent). Media are fetched from Twilio's media
    # hosts only (https), at most MEDIA_MAX_BYTES each and MEDIA_MAX_BATCH_BYTES a batch,
    # within MEDIA_TIME_BUDGET_SECONDS of Generate Reply's time.
    media_image_input: Flag = True
    media_voice_transcription: Flag = True
    transcription_model: str = "gpt-transcribe"
    media_max_bytes: Annotated[int, Field(ge=1)] = 10_000_000
    media_max_batch_bytes: Annotated[int, Field(ge=1)] = 20_000_000
    media_time_budget_seconds: Annotated[float, Field(gt=0, le=30)] = 20
    # The hosts of a media URL itself, the one request that carries the account's
    # credentials; and the hosts its redirect may go to, without them: mms.twiliocdn.com,
    # and s3-external-1.amazonaws.com where Twilio still serves media stored before HTTP
    # authentication was enforced (functions/answer/twilio_media.py).
    twilio_media_hosts: str = "api.twilio.com"
    media_redirect_hosts: str = "mms.twiliocdn.com,s3-external-1.amazonaws.com"

    # The model, unless the conversation names one (functions/answer/openai_models.py
    # lists OpenAI's announced shutdowns). When OpenAI does not serve it (404
    # model_not_found), the fallback model answers if one is set; otherwise the batch is
    # kept pending and the run fails with AIModelUnavailable (alarmed).
    openai_model: Annotated[str, Field(min_length=1)] = DEFAULT_MODEL
    openai_fallback_model: str = ""
    openai_instructions: str = (
        "You are a helpful assistant replying on WhatsApp or SMS. The user may have sent "
        "several short messages in a row; answer them together, briefly. Lines in square "
        "brackets are the messaging service's notes on what was sent (a photo, a quoted "
        "message); brackets the user typed arrive escaped with a backslash."
    )
    # The time one "Generate Reply" attempt spends on OpenAI: each request's timeout, and how
    # long it waits for a background response before the state machine's Retry takes over.
    # Below the function's 90-second timeout (functions/registry.py), with the media's time.
    openai_timeout_seconds: Annotated[float, Field(gt=0, le=45)] = 25.0
    # A conversation's context budget: once its input passes this many tokens, OpenAI
    # compacts what came before (server-side compaction), so that a call's input stays near
    # it however long the conversation (4,000 input tokens: $0.004 at the default model's
    # $1.00 per million; docs/adr/0097-a-context-budget-per-conversation-by-openais.md).
    # 0: no compaction (the input grows with the conversation up to the model's window,
    # where `truncation: auto` cuts it).
    openai_max_context_tokens: Annotated[int, Field(ge=0)] = 4_000
    # The cap on a reply's tokens, reasoning included; a response that spends it all on
    # reasoning is asked once more with twice the room (functions/answer/rules/output_room.py).
    openai_max_output_tokens: Annotated[int, Field(ge=16)] = 4096
    # `reasoning.effort`, sent to a model that takes one (openai_models.py); empty: its own.
    openai_reasoning_effort: Literal["", "none", "minimal", "low", "medium", "high", "xhigh"] = "low"
    # Each Twilio request's timeout, at most 10 s: inside the shortest Lambda timeout of a
    # function that calls Twilio (Status Callback's 12 s: functions/registry.py).
    twilio_timeout_seconds: Annotated[float, Field(gt=0, le=10)] = 10.0
    # The assistant's function tools (docs/assistants.md): at most this many rounds of calls
    # per batch (the last round's answer is asked for with no further call), each call given
    # this long, its answer at most this many bytes. A profile may set lower round and time
    # limits of its own.
    max_tool_rounds: Annotated[int, Field(ge=1, le=10)] = 3
    tool_timeout_seconds: Annotated[float, Field(ge=1, le=25)] = 10.0
    tool_max_answer_bytes: Annotated[int, Field(ge=256, le=65_536)] = 4096
    # Tool endpoints on a loopback address over http: the local stack's only (deployed, a
    # tool's url must be https to a public address: functions/assistant/tool_endpoints.py).
    tool_loopback_http: Flag = False
    # Generate Reply keeps the profiles in force in memory this long (a profile written with
    # `infra.assistants` reaches a warm function within this time).
    assistant_profile_cache_seconds: Annotated[float, Field(ge=0, le=3600)] = 30
    # A tool with `confirm: true` runs only if the person's next batch, within this long of
    # the proposal, is a short yes: one of these (comma-separated), and no "no", "not", "wait".
    confirm_keywords: str = (
        "yes,y,yeah,yep,yup,sure,ok,okay,confirm,confirmed,go ahead,do it,sí,si,oui,ja,sim"
    )
    confirm_within_seconds: Annotated[int, Field(ge=60, le=7 * 24 * 3600)] = 3600
    # WhatsApp: one "typing…" indicator per burst, on its last message, when the reply is
    # asked for (it marks the message read), refreshed once if the reply is still being
    # written 26 s later (functions/answer/typing_indicator.py). SMS has none.
    typing_indicator: Flag = True
    # How long an attempt that finds a message in doubt (an earlier attempt may have sent
    # it) waits for its delivery receipt, a status callback, when neither a recorded
    # callback nor Twilio's Messages list shows it, before sending it again
    # (functions/delivery/send_once.py). Inside the function: Send Reply's timeout is 60 s.
    # Every message's ValidityPeriod is this less 2 s (twilio_messages.validity_period_seconds).
    delivery_receipt_wait_seconds: Annotated[float, Field(ge=0, le=20)] = 10.0
    # The pause between the parts of one reply: Twilio limits the account's and the
    # WhatsApp sender's rate (63018; the Sandbox allows one message every 3 s).
    reply_part_interval_seconds: Annotated[float, Field(ge=0, le=5)] = 1.0
    # The rate our number's sender sends at, messages a second: Twilio sends from a WhatsApp
    # sender at 80 a second by default (up to 400 for text, on request) and queues the rest,
    # where a reply older than its ValidityPeriod is failed (30036). Send Reply takes its
    # sender's turn at this rate across all conversations (functions/delivery/sender_pace.py);
    # a number's own rate (`infra.tenants sender-mps`) overrides it. 0: not paced.
    twilio_sender_mps: Annotated[float, Field(ge=0, le=MAX_SENDER_MPS)] = 80
    # Only set to reach a Twilio stand-in; empty means Twilio's own API.
    twilio_api_base_url: str = ""
    # The public base URL Twilio calls, which its signatures cover (set by the stack; a
    # custom domain sets its own). Without it, the URL is rebuilt from the Host header and
    # the request's path; forwarded headers (X-Forwarded-Proto, -Host) only count when
    # trusted, behind a proxy that sets them.
    webhook_base_url: str = ""
    webhook_trust_forwarded_headers: Flag = False
    # Twilio's connection overrides, the fragment of every URL Twilio is given (the webhook
    # URLs to paste in its console, the StatusCallback of each message sent): without them
    # Twilio retries only a connection failure, once, never a 5xx
    # (https://www.twilio.com/docs/usage/webhooks/webhooks-connection-overrides).
    # A fragment on WEBHOOK_BASE_URL takes precedence.
    twilio_connection_overrides: str = "rc=5&rp=all"
    # What the webhook reads before anything else: larger or longer forms are refused.
    webhook_max_body_bytes: Annotated[int, Field(ge=1024)] = 128 * 1024
    webhook_max_fields: Annotated[int, Field(ge=10)] = 100

    def public_base(self) -> PublicBase:
        """WEBHOOK_BASE_URL without its fragment (empty: not set), and the connection
        overrides Twilio's URLs carry: WEBHOOK_BASE_URL's fragment, or the setting."""
        return public_base(self.webhook_base_url, self.twilio_connection_overrides)

    def batching_defaults(self) -> dict[str, Any]:
        return {
            "mode": self.batch_mode,
            "window_seconds": self.batch_window_seconds,
            "quiet_seconds": self.quiet_seconds,
            "typing_gap_seconds": self.typing_gap_seconds,
            "typing_quiet_seconds": self.typing_quiet_seconds,
            "quiet_min_seconds": self.quiet_min_seconds,
            "quiet_max_seconds": self.quiet_max_seconds,
            "max_wait_seconds": self.max_wait_seconds,
            "max_messages": self.max_batch_messages,
            "on_newer": self.on_newer,
            "max_regenerations": self.max_regenerations,
            "flush_keywords": tuple(k.strip() for k in self.flush_keywords.split(",") if k.strip()),
            "handoff_keywords": tuple(k.strip() for k in self.handoff_keywords.split(",") if k.strip()),
            "handoff_reply": self.handoff_reply,
        }


def read_settings(environ: dict[str, str]) -> Settings:
    """The settings in `environ` (a SettingsError names every one amiss)."""
    try:
        return Settings.model_validate(environ)
    except ValidationError as error:
        raise SettingsError(error) from None


class SettingsError(ValueError):
    """Settings amiss, named by their environment variables (pydantic's error locations);
    the values are not repeated, since a setting may hold a secret's name or a URL."""

    def __init__(self, error: ValidationError) -> None:
        self.names = tuple(dict.fromkeys(str(e["loc"][0]) for e in error.errors() if e["loc"]))
        reasons = "; ".join(f"{e['loc'][0]}: {e['msg']}" if e["loc"] else e["msg"] for e in error.errors())
        super().__init__(f"settings amiss: {reasons}")


@cache
def get_settings() -> Settings:
    return read_settings(dict(os.environ))
