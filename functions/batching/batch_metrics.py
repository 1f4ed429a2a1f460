"""How an answered batch felt to the person, counted once it is recorded:

- `BurstEnd` (dimension `reason`: fixed, quiet, cap, flush, max_messages): why the wait
  ended (debounce.burst_end_reason, carried by the run from Acquire Processing Lock);
- `FragmentsPerReply`: the fragments one reply answered;
- `ReplyDelay`: from the batch's last fragment (its arrival at the webhook) to Twilio
  accepting the reply's first part (recorded by Send Reply).

`SplitBursts` is counted by the webhook (a fragment soon after a reply), and
`python -m infra.runs stats` computes the same figures from the tables."""

from __future__ import annotations

from aws_lambda_powertools.metrics import MetricUnit

from functions import clock
from functions.contract import RecordInput
from functions.observability import count_about, count_by
from functions.storage.models import Turn


def count_answered_batch(task: RecordInput, user_turn: Turn | None, assistant_turn: Turn | None) -> None:
    if task.ended_by:
        count_by("BurstEnd", "reason", task.ended_by, task.conversation_id)
    if task.reply.answered_by != "ai" or not task.sent.message_sids:
        return  # no reply to the batch: handed off, limited, or nothing sent
    count_about(task.conversation_id, "FragmentsPerReply", task.batch.message_count)
    delay = reply_delay_ms(user_turn, assistant_turn)
    if delay is not None:
        count_about(task.conversation_id, "ReplyDelay", delay, MetricUnit.Milliseconds)


def reply_delay_ms(user_turn: Turn | None, assistant_turn: Turn | None) -> int | None:
    """Last fragment received to first reply part accepted, in milliseconds; None when
    either time is unknown (a template sent instead of the reply has no first part)."""
    last = user_turn.last_received_at if user_turn else None
    first = assistant_turn.first_part_at if assistant_turn else None
    if not last or not first:
        return None
    return max(0, clock.iso_to_ms(first) - clock.iso_to_ms(last))
