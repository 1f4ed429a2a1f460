"""One burst of a conversation as the console draws it: the fragments as they arrived, the
batch window and why it ended, each run state by state, the AI call, the tool calls (names
and outcomes, never what they were asked or answered), each reply part with
its delivery status (a person's reply among them), opt-outs, and what other batching rules
would have done with the same arrival times. Built from what infra/console/reading.py read; no I/O here."""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace

from functions.batching.rules.burst import BatchingRules
from functions.delivery.rules.replies import split_reply
from functions.handoff.rules.pause import PERSON
from functions.storage.models import BatchWindow, Confirmation, Delivery, StagedMessage, Turn
from infra.console.fragments import Fragment, merged_preview, of_staged, of_turn, split_body
from infra.console.reading import ConversationRow, Run, ToolCallRow
from infra.replay.simulate import batches_of
from infra.replay.sources import epoch_ms
from infra.runs import StateSpan, short_cause, timeline

WAIT_STATE = "Wait For The Burst To End"
GENERATE_STATE = "Generate Reply"
CALL_TOOLS_STATE = "Call Tools"
PERSONS_REPLY = "a person's reply"
# Why a message sent for a turn has no text on the console: none is recorded.
UNTOLD = {
    "template": "its text is the WhatsApp template's (Twilio's Content), not recorded",
    "fallback": "its text is the deployment's FALLBACK_REPLY, not recorded",
}
_WINDOW_ID = re.compile(r"(\d{13})-[0-9a-f]+$")


def window_of_run(run: Run) -> str:
    """The batch window a run serves: its input's, else the end of its name."""
    found = run.run_input.get("window_id") or _WINDOW_ID.search(run.name)
    return str(found if isinstance(found, str) else found.group(0) if found else "")


def window_opened_ms(window_id: str) -> int | None:
    match = _WINDOW_ID.search(window_id)
    return int(match.group(1)) if match else None


def console_url(run: Run, region: str) -> str:
    """The run in the AWS console."""
    return (
        f"https://{region}.console.aws.amazon.com/states/home?region={region}"
        f"#/v2/executions/details/{run.arn}"
    )


# A tool call's outcome in words, by its status (functions/storage/models.py ToolCall), and a
# refused one's by who refused it (infra/console/reading.py).
OUTCOMES = {
    "answered": "answered",
    "in_doubt": "outcome unknown — not made again",
    "claimed": "being made",
    "not_made": "not made yet: to be tried again",
    "unavailable": "unavailable: no answer",  # after its attempts (Call Tools' MAX_ATTEMPTS)
}
REFUSALS = {
    "endpoint": "refused by the endpoint",
    "not_confirmed": "not made: the person did not say yes",
    "unknown_tool": "not made: the assistant profile has no such tool",
    "no_signing_secret": "not made: the tenant has no tool-signing secret",
}
TROUBLE = ("in_doubt", "unavailable")  # drawn red


@dataclass(frozen=True)
class ToolCallView:
    """One tool call of a run's window: its tool, its outcome in words, its attempts and
    when it was claimed and finished; never its arguments or its output."""

    name: str
    outcome: str
    attempts: int
    claimed_ms: int | None
    finished_ms: int | None
    trouble: bool = False


@dataclass
class RunView:
    run: Run
    window_id: str
    states: list[StateSpan]
    failed_state: str | None = None
    console_url: str | None = None
    ai_model: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    tool_calls: list[ToolCallView] = field(default_factory=list)


@dataclass(frozen=True)
class WindowBand:
    window_id: str
    opened_ms: int
    ended_ms: int | None
    ended_by: str | None


@dataclass(frozen=True)
class ReplyPart:
    window_id: str
    label: str  # part 1, part 2, ..., template, fallback, a person's reply
    message_sid: str
    at_ms: int | None
    status: str
    error_code: int | None = None
    by_person: bool = False  # a person's reply (a helpdesk's conversation.reply)
    sent_ms: int | None = None
    # Its text (split from the turn's body as Send Reply splits it), shown only when the
    # operator asks; `untold`: why a message sent has none (a template's is Twilio's).
    text: str = ""
    untold: str = ""


@dataclass(frozen=True)
class Mark:
    at_ms: int
    label: str  # opt-out, opt-in, typing…, handed off


@dataclass(frozen=True)
class RuleBatch:
    opened_ms: int
    closed_ms: int
    fragments: int


@dataclass
class BurstView:
    """What the conversation page draws, between `start_ms` and `end_ms`."""

    conversation: ConversationRow
    start_ms: int
    end_ms: int
    fragments: list[Fragment] = field(default_factory=list)
    bands: list[WindowBand] = field(default_factory=list)
    runs: list[RunView] = field(default_factory=list)
    parts: list[ReplyPart] = field(default_factory=list)
    marks: list[Mark] = field(default_factory=list)
    other_rules: dict[str, list[RuleBatch]] = field(default_factory=dict)
    merged_previews: dict[str, str] = field(default_factory=dict)  # by window, when not split
    in_flight: bool = False


def run_view(run: Run, turns: list[Turn], region: str | None) -> RunView:
    """A described run: its states, where it failed, its AI call (from its assistant turn)."""
    window_id = window_of_run(run)
    view = RunView(
        run, window_id, timeline(run.events), console_url=console_url(run, region) if region else None
    )
    for span in view.states:  # a Fail or Succeed state is never exited: it ends the run
        span.exited = span.exited or run.stopped
    if run.status == "FAILED":
        view.failed_state = failed_state(view.states, run.error)
        run.cause = short_cause(run.cause or "")
    for turn in turns:
        if turn.window_id == window_id and turn.role == "assistant":
            view.ai_model, view.prompt_tokens = turn.model, turn.prompt_tokens
            view.completion_tokens = turn.completion_tokens
    return view


def tool_calls_of(
    window_id: str, calls: list[ToolCallRow], proposals: list[Confirmation], turns: list[Turn], now_ms: int
) -> list[ToolCallView]:
    """The calls the window made (claimed first in it), in the order they were claimed."""
    batch = next((t for t in turns if t.window_id == window_id and t.role == "user"), None)
    batch_key = batch.message_sids[0] if batch and batch.message_sids else None
    views = []
    for call in sorted((c for c in calls if c.window_id == window_id), key=lambda c: c.claimed_at):
        outcome = _outcome(call, proposals, now_ms)
        if any(p.name == call.name and batch_key and p.used_by == batch_key for p in proposals):
            outcome += ", after the person's yes"
        claimed = epoch_ms(call.claimed_at) if call.claimed_at else None
        finished = epoch_ms(call.finished_at) if call.finished_at else None
        trouble = call.status in TROUBLE or call.refused_by not in (None, "proposed", "not_confirmed")
        views.append(ToolCallView(call.name, outcome, call.attempts, claimed, finished, trouble))
    return views


def _outcome(call: ToolCallRow, proposals: list[Confirmation], now_ms: int) -> str:
    if call.status != "refused":
        return OUTCOMES.get(call.status, call.status)
    if call.refused_by != "proposed":
        return REFUSALS.get(call.refused_by or "endpoint", "refused")
    # A `confirm: true` tool's first ask: proposed (in this window), and what became of it.
    proposal = next((p for p in proposals if p.window_id == call.window_id and p.name == call.name), None)
    if proposal is None:
        return "proposed: the person's yes was asked"
    if proposal.used_by is None:
        waiting = proposal.expires_at * 1000 > now_ms
        return "proposed, awaiting the person's yes" if waiting else "proposed, no yes in time"
    if proposal.used_by.endswith("#declined"):
        return "proposed, the person did not say yes"
    return "proposed, confirmed by the next burst"


def failed_state(states: list[StateSpan], error: str | None) -> str | None:
    """The state whose error ended the run: the last whose attempt failed with the run's
    error, else the last that failed at all, else the last entered."""
    failed = [s for s in states if s.failed_attempts]
    matching = [s for s in failed if any(e == error for e, _ in s.failed_attempts)]
    chosen = matching or failed or states
    return chosen[-1].name if chosen else None


def band_of(view: RunView, turns: list[Turn], window: BatchWindow | None) -> WindowBand | None:
    """The run's batch window: from its opening to the end of the run's last wait."""
    opened = window_opened_ms(view.window_id)
    if window and window.window_id == view.window_id:
        opened = window.opened_ms
    if opened is None:
        return None
    waits = [s for s in view.states if s.name == WAIT_STATE]
    ended = int(waits[-1].exited.timestamp() * 1000) if waits and waits[-1].exited else None
    ended_by = next(
        (t.burst_ended_by for t in turns if t.window_id == view.window_id and t.role == "user"), None
    )
    return WindowBand(view.window_id, opened, ended, ended_by)


def reply_parts(turns: list[Turn]) -> list[ReplyPart]:
    """Every message sent for the turns' batches: the reply's parts in order, then the
    template or fallback, with what Twilio last reported of each; and each person's reply
    (`written_by: person`), sent or not."""
    parts: list[ReplyPart] = []
    for turn in turns:
        sent_at = turn.first_part_at or turn.sent_at
        sent_ms = epoch_ms(sent_at) if sent_at else None
        listed = turn.message_sids if turn.role == "assistant" else []
        if turn.written_by == PERSON:
            parts += _persons_reply(turn, sent_ms)
            continue
        texts = split_reply(turn.body) if listed else []
        for n, sid in enumerate(listed):
            part = _part(turn, f"part {n + 1}", sid, turn.deliveries.get(sid), sent_ms)
            parts.append(replace(part, text=texts[n] if n < len(texts) else ""))
        extra = {turn.template_sid, turn.fallback_message_sid} | set(turn.deliveries)
        for sid in sorted(s for s in extra if s and s not in listed):
            delivery = turn.deliveries.get(sid)
            label = delivery.message if delivery else "message"
            label = "template" if sid == turn.template_sid else label
            part = _part(turn, label, sid, delivery, sent_ms)
            parts.append(replace(part, untold=UNTOLD.get(label, "")))
    return parts


def _persons_reply(turn: Turn, sent_ms: int | None) -> list[ReplyPart]:
    """A person's reply, a part per message sent (one part, "not sent", before any is)."""
    sent_ms = sent_ms or (epoch_ms(turn.created_at) if turn.created_at else None)
    sids = turn.message_sids
    texts = split_reply(turn.body)
    made = []
    for n, sid in enumerate(sids):
        label = PERSONS_REPLY + f", part {n + 1}" * (len(sids) > 1)
        part = _part(turn, label, sid, turn.deliveries.get(sid), sent_ms)
        made.append(replace(part, text=texts[n] if n < len(texts) else ""))
    made = made or [ReplyPart(turn.window_id, PERSONS_REPLY, "-", sent_ms, "not sent", text=turn.body)]
    return [replace(p, by_person=True, sent_ms=sent_ms) for p in made]


def _part(turn: Turn, label: str, sid: str, delivery: Delivery | None, sent_ms: int | None) -> ReplyPart:
    at = epoch_ms(delivery.at) if delivery and delivery.at else sent_ms
    status = delivery.status if delivery else ("sent" if turn.status == "sent" else "accepted")
    code = delivery.error_code if delivery else None
    return ReplyPart(turn.window_id, label, sid, at, status, code)


def marks_of(turns: list[Turn]) -> list[Mark]:
    """Opt-outs and opt-ins, the typing indicator, hand-offs and cost limits."""
    marks: list[Mark] = []
    for turn in (t for t in turns if t.role == "user"):
        moments = {
            "opt-out": turn.last_received_at if turn.consent == "opt_out" else None,
            "opt-in": turn.last_received_at if turn.consent == "opt_in" else None,
            "typing… shown": turn.typing_shown_at,
            "handed off": turn.answered_at if turn.status == "handed_off" else None,
            f"limited ({turn.limited})": turn.answered_at if turn.limited else None,
        }
        marks += [Mark(epoch_ms(at), label) for label, at in moments.items() if at]
    return marks


def other_rules(times: list[int], rules: BatchingRules) -> dict[str, list[RuleBatch]]:
    """What fixed:W, quiet:Q and adaptive (W and Q: the run's own) would have done with
    the same arrival times (infra/replay: the production rules, the recorded clock)."""
    from infra.replay.__main__ import parse_policy

    configured = rules.model_dump()
    policies = [f"fixed:{rules.window_seconds:g}", f"quiet:{rules.quiet_seconds:g}", "adaptive"]
    rows: dict[str, list[RuleBatch]] = {}
    for policy in policies:
        made = batches_of(parse_policy(policy, configured), sorted(times))
        ordered = sorted(times)
        rows[policy] = [RuleBatch(ordered[b.first], b.closed_ms, b.last - b.first + 1) for b in made]
    return rows


def all_fragments(turns: list[Turn], staged: list[StagedMessage]) -> tuple[list[Fragment], dict[str, str]]:
    """Every fragment, in arrival order (a staged message's own record first), and the
    merged texts of the batches whose fragments could not be told apart."""
    found = {f.message_sid: f for t in turns for f in of_turn(t)}
    found.update({m.message_sid: of_staged(m) for m in staged})
    merged = {
        t.window_id: merged_preview(t)
        for t in turns
        if t.role == "user" and t.body and split_body(t.body, len(t.message_sids)) is None
    }
    return sorted(found.values(), key=lambda f: (f.at_ms, f.message_sid)), merged
