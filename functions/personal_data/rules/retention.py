"""Turn-text retention, as pure rules (functions/personal_data/retention.py sweeps with them):
which turns' texts have expired, and which items of an OpenAI conversation go with them.

A turn's text expires once the turn is answered (its batch is over: never one pending, being
processed, or set aside to be tried again) and older than the retention in force for its
conversation: its tenant's own days (`python -m infra.tenants retention`), else the
deployment's TURN_TEXT_RETENTION_DAYS; 0 keeps it until the person is forgotten."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta

from functions import clock
from functions.answer.rules.openai_items import ConversationItem

# The statuses of a turn whose batch is over (functions/answer/turns.py record_answered_batch,
# functions/guards/limits.py): the user turn `answered`, `limited` or `handed_off`, the
# assistant turn `sent`, `limited`. Not `pending` (being processed), `generated` (a reply not
# sent yet), `failed` (set aside: a redrive answers it, with its text).
ANSWERED = frozenset({"answered", "limited", "handed_off", "sent"})


def retention_days(tenant_days: int | None, deployment_days: int) -> int:
    """The days in force for a conversation of this tenant (0: until forgotten)."""
    return deployment_days if tenant_days is None else tenant_days


def shortest_days(deployment_days: int, overrides: Iterable[int]) -> int | None:
    """The shortest retention in force anywhere (the sweep looks at turns older than it), or
    None when every text is kept until forgotten (no sweep)."""
    days = [d for d in (deployment_days, *overrides) if d > 0]
    return min(days) if days else None


def cutoff(now: datetime, days: int) -> str:
    """The `created_at` before which a turn's text has expired, after `days`."""
    return clock.iso(now - timedelta(days=days))


def expired(status: str, created_at: str, days: int, now: datetime) -> bool:
    """Whether a turn's text has expired: answered, and older than `days` (0: never)."""
    if days <= 0 or status not in ANSWERED or not created_at:
        return False
    return clock.parse(created_at) < now - timedelta(days=days)


def expired_items(items: list[ConversationItem], expired_ids: Iterable[str]) -> list[str]:
    """The items to delete from an OpenAI conversation (listed oldest first) for turns whose
    texts expired: every item up to the newest of `expired_ids` (their replies' items; each
    turn's user message and tool round came before its reply, and every older turn is older
    still), oldest first, each call after its output. The conversation goes on with the rest.
    A function call is never cut from its output: where an output falls after the cut, the
    cut moves back to before its call (the model is refused on a call without its output)."""
    wanted = set(expired_ids)
    end = max((n + 1 for n, item in enumerate(items) if item.id in wanted), default=0)
    kept_outputs = {i.call_id for i in items[end:] if i.kind == "function_call_output" and i.call_id}
    for n, item in enumerate(items[:end]):
        if item.kind == "function_call" and item.call_id in kept_outputs:
            end = n
            break
    return _calls_after_their_outputs(items[:end])


def _calls_after_their_outputs(items: list[ConversationItem]) -> list[str]:
    """The items' ids oldest first (a reasoning item before the reply that followed it), but
    each function call right after its output: a deletion cut short then leaves a call
    without its output, which the next request closes with a cancelled output, never an
    output without its call."""
    order: list[str] = []
    waiting: dict[str, str] = {}  # a call's id, by its call_id, until its output is deleted
    for item in items:
        if item.kind == "function_call" and item.call_id:
            waiting[item.call_id] = item.id
            continue
        order.append(item.id)
        if item.kind == "function_call_output" and item.call_id in waiting:
            order.append(waiting.pop(item.call_id))
    return order + list(waiting.values())
