"""Call Tools: the calls the model's response asked for, each made once.

Generate Reply keeps the calls a response asked for on the batch's OpenAI request (its first
staged message) and fails with ToolCallsRequested; the run catches it here. Each call is
claimed before it is made and its outcome recorded (functions/assistant/tool_calls.py), under a
key that a retry of this state, a rerun of the batch and a regenerated response share
(functions/assistant/rules/tools.py), and that the endpoint receives as its Idempotency-Key:
- a call found with its outcome recorded is not made again;
- a call found claimed by an earlier attempt that ended while making it is in doubt: made
  again if the tool is read-only, never if it has side effects (the model is told its
  outcome is unknown: ToolCallsInDoubt, alarmed);
- an endpoint that could not be reached, or a read-only call that got no answer, is tried
  again by the state's Retry (ToolCallRetryableError), at most MAX_ATTEMPTS times, then the
  model is told the tool was unavailable;
- a tool the profile does not have (the model's invention, or a profile edited since) is
  never called: only the pinned profile's `url` is;
- a `confirm: true` tool is not called when the model first asks: its proposal is recorded
  and the model told to ask the person. It is called when the model asks for the same call
  (tool and arguments) in the person's next batch, within CONFIRM_WITHIN_SECONDS, whose
  text is a short yes (CONFIRM_KEYWORDS), and only once.
Then Generate Reply asks again with the outputs. The outputs stay in DynamoDB: the run's
payload carries counts."""

from __future__ import annotations

import time

from functions import clock
from functions.answer import turns
from functions.assistant import assistant_profiles, tool_calls, tool_endpoints
from functions.assistant.assistant_profile import AssistantProfile, FunctionTool
from functions.assistant.rules import tools as tool_rules
from functions.assistant.settings import AssistantSettings
from functions.contract import CallToolsInput, ToolsSummary
from functions.errors import ToolCallRetryableError
from functions.intake import staged_messages
from functions.observability import count, logger
from functions.registry import BY_STATE
from functions.storage.models import AskedCall, Confirmation, Conversation, ToolCall
from functions.tenancy import conversations, secrets

MAX_ATTEMPTS = 3  # attempts at a call that could not be made, or a read-only call in doubt
_TIMEOUT_MARGIN_SECONDS = 5.0  # what an attempt keeps for recording after its last call


def call_tools(task: CallToolsInput) -> ToolsSummary:
    """Make the calls the batch's latest response asked for, once each."""
    started = time.monotonic()
    key = task.batch.message_sids[0] if task.batch.message_sids else ""
    request = staged_messages.ai_requests(task.conversation_id, [key]).get(key) if key else None
    if request is None or not request.calls:
        return ToolsSummary(calls=0, made=0, in_doubt=0, failed=0)
    conversation = conversations.require(task.conversation_id)
    round_ = _Round(task, conversation, key, _pinned_profile(task), started)
    for call in request.calls:
        round_.make_once(call)
    logger.info("Tool calls made", extra={"calls": len(request.calls), "made": round_.made})
    return ToolsSummary(
        calls=len(request.calls), made=round_.made, in_doubt=round_.in_doubt, failed=round_.failed
    )


def _pinned_profile(task: CallToolsInput) -> AssistantProfile:
    """The profile the batch was asked with (Generate Reply pinned it on the user turn)."""
    user_turn = turns.require(task.conversation_id, task.user_turn_id)
    if not user_turn.profile_key or not user_turn.profile_version:
        return AssistantProfile()
    found = assistant_profiles.get(user_turn.profile_key, user_turn.profile_version)
    return found.profile if found else AssistantProfile()


class _Round:
    """One attempt at a round's calls."""

    def __init__(
        self,
        task: CallToolsInput,
        conversation: Conversation,
        batch_key: str,
        profile: AssistantProfile,
        started: float,
    ) -> None:
        self.task = task
        self.conversation = conversation
        self.tenant = conversation.tenant_account_sid or ""
        self.batch_key = batch_key
        self.profile = profile
        self.started = started
        settings = AssistantSettings.get()
        self.timeout = min(
            settings.tool_timeout_seconds, profile.tool_timeout_seconds or settings.tool_timeout_seconds
        )
        self._signing_key: str | None = None
        self.made = self.in_doubt = self.failed = 0

    def make_once(self, asked: AskedCall) -> None:
        arguments = tool_rules.arguments_of(asked.arguments)
        if arguments is None:  # Generate Reply tells the model so (tools.bad_arguments)
            self.failed += 1
            return
        tool = self.profile.tool(asked.name)
        key = tool_rules.call_key(
            self.tenant, self.task.conversation_id, self.batch_key, asked.name, arguments
        )
        now = clock.now()
        claimed = tool_calls.claim(
            self.task.conversation_id,
            key,
            asked.name,
            bool(tool and tool.side_effects),
            self.task.window_id,
            clock.iso(now),
            int(now.timestamp()),
        )
        if claimed.finished:
            return  # made (or refused) by an earlier attempt, run or response
        if tool is None:
            self._finish(claimed, "refused", tool_rules.unknown_tool(asked.name))
            return
        if claimed.status == "claimed" and claimed.attempts > 1 and tool.side_effects:
            # An earlier attempt ended while making it: it may have been carried out.
            self._finish(claimed, "in_doubt", tool_rules.IN_DOUBT)
            return
        if claimed.attempts > MAX_ATTEMPTS:
            self._finish(claimed, "unavailable", tool_rules.UNAVAILABLE)
            return
        if tool.confirm and not self._confirmed(claimed, asked, arguments):
            return
        self._make(claimed, tool, asked, arguments)

    def _confirmed(self, claimed: ToolCall, asked: AskedCall, arguments: dict[str, object]) -> bool:
        """Whether the person said yes to this call, proposed in an earlier batch; if not, the
        call is finished for this batch with what the model is told (and proposed, if new)."""
        key = tool_rules.confirmation_key(self.tenant, self.task.conversation_id, asked.name, arguments)
        proposal = tool_calls.confirmation(self.task.conversation_id, key)
        now = clock.now()
        if proposal is not None and proposal.used_by == self.batch_key:
            return True  # this batch's yes used it: an earlier attempt at this very call
        earlier = (
            proposal is not None
            and proposal.batch_key != self.batch_key
            and proposal.used_by is None
            and proposal.expires_at > int(now.timestamp())
        )
        if (
            earlier
            and self._answers(proposal)
            and self._said_yes()
            and tool_calls.use_confirmation(self.task.conversation_id, key, self.batch_key)
        ):
            count("ToolCallsConfirmed")
            return True
        if earlier:  # the person's answer was no yes: proposed anew only if asked again
            tool_calls.use_confirmation(self.task.conversation_id, key, self.batch_key + "#declined")
            self._finish(claimed, "refused", tool_rules.NOT_CONFIRMED)
            return False
        if proposal is None or proposal.batch_key != self.batch_key:
            tool_calls.propose(
                Confirmation(
                    conversation_id=self.task.conversation_id,
                    call_key=key,
                    name=asked.name,
                    batch_key=self.batch_key,
                    window_id=self.task.window_id,
                    asked_at=clock.iso(now),
                    expires_at=int(now.timestamp()) + AssistantSettings.get().confirm_within_seconds,
                )
            )
        count("ToolCallsProposed")
        self._finish(claimed, "refused", tool_rules.NEEDS_CONFIRMATION, failed=False)
        return False

    def _answers(self, proposal: Confirmation | None) -> bool:
        """Whether this batch is the person's next after the one whose reply proposed the call
        (the last reply sent is that batch's)."""
        last = turns.last_reply(self.task.conversation_id)
        return proposal is not None and last is not None and last.window_id == proposal.window_id

    def _said_yes(self) -> bool:
        keywords = tuple(AssistantSettings.get().confirm_keywords.split(","))
        return tool_rules.said_yes(
            turns.require(self.task.conversation_id, self.task.user_turn_id).body, keywords
        )

    def _make(
        self, claimed: ToolCall, tool: FunctionTool, asked: AskedCall, arguments: dict[str, object]
    ) -> None:
        left = _time_left(self.started)
        if left < self.timeout + _TIMEOUT_MARGIN_SECONDS:
            tool_calls.record(claimed.conversation_id, claimed.call_key, "not_made", None, None)
            raise ToolCallRetryableError("this attempt's time is spent; the next attempt makes the rest")
        signing_key = self._signing_key or secrets.tool_signing_key(self.conversation)
        if signing_key is None:
            logger.error("The tenant has no tool-signing secret: its tools are not called")
            self._finish(claimed, "refused", tool_rules.UNAVAILABLE)
            return
        self._signing_key = signing_key
        if claimed.status == "not_made":
            tool_calls.mark_making(claimed.conversation_id, claimed.call_key)
        settings = AssistantSettings.get()
        answer = tool_endpoints.call(
            tool.url,
            tool_rules.request_body(asked.name, arguments, asked.call_id, self.task.conversation_id),
            idempotency_key=claimed.call_key,
            secret=signing_key,
            timeout=self.timeout,
            max_bytes=settings.tool_max_answer_bytes,
            loopback_http=settings.tool_loopback_http,
        )
        count("ToolCalls")
        if answer.outcome in ("answered", "refused"):
            self.made += answer.outcome == "answered"
            self._finish(claimed, answer.outcome, answer.output)
        elif answer.outcome == "in_doubt" and tool.side_effects:
            self._finish(claimed, "in_doubt", tool_rules.IN_DOUBT)
        elif claimed.attempts >= MAX_ATTEMPTS:  # not made, or read-only and in doubt: no more tries
            self._finish(claimed, "unavailable", tool_rules.UNAVAILABLE)
        else:
            tool_calls.record(claimed.conversation_id, claimed.call_key, "not_made", None, None)
            raise ToolCallRetryableError(
                f"tool {asked.name}: {answer.outcome} ({answer.status or 'no answer'})"
            )

    def _finish(self, claimed: ToolCall, status: str, output: str, failed: bool = True) -> None:
        tool_calls.record(claimed.conversation_id, claimed.call_key, status, output, clock.iso(clock.now()))
        if not failed:
            return
        if status == "in_doubt":
            self.in_doubt += 1
            count("ToolCallsInDoubt")
            logger.error("Tool call in doubt: not made again", extra={"tool": claimed.name})
        elif status in ("refused", "unavailable"):
            self.failed += 1
            count("ToolCallsFailed")
            logger.warning("Tool call failed", extra={"tool": claimed.name, "status": status})


def _time_left(started: float) -> float:
    """The seconds this attempt has left (the function's timeout, functions/registry.py)."""
    return BY_STATE["Call Tools"].timeout_seconds - (time.monotonic() - started)
