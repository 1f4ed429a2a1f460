"""Turn-text retention: the reconciler's last job each run
(functions/entry_points/reconciler.py). Answered turns older than their retention
(functions/personal_data/rules/retention.py) lose their texts, in our tables and at OpenAI:

1. One page of the Turns table is read (PAGE_TURNS items at most, filtered on the oldest
   cutoff in force and an answered status), from a cursor that goes round the table run
   after run (functions/personal_data/retention_store.py); nothing is read while no tenant
   and not the deployment keep texts for a limited time.
2. For each conversation with turns whose texts expired (its tenant's days, else the
   deployment's) and that no run holds: at OpenAI first, with the key its replies were asked
   with, the conversation's items up to the newest expired turn's reply (its user message and
   tool round before it, every older turn too: never a function call without its output);
   the conversation goes on with the rest, and keeps its id.
3. Then those turns are cut to their figures (the allow-list a forget keeps).
A conversation OpenAI stopped (5xx, a timeout, a refused key) keeps its turns' texts: the
cursor's next round finds them again. Counted: TurnTextsExpired (turns cut),
TurnTextRetentionProblems (conversations left for the next round)."""

from __future__ import annotations

import time
from collections import defaultdict
from datetime import datetime
from typing import Any

from aws_lambda_powertools.utilities.parameters import GetParameterError

from functions import clock
from functions.errors import AIPermanentError, AIRetryableError, SecretOutsideTenant
from functions.observability import count, logger
from functions.personal_data import forgetting_store, retention_store
from functions.personal_data.rules import retention as rules
from functions.personal_data.settings import RetentionSettings
from functions.storage.models import Conversation
from functions.tenancy import conversations, secrets, tenants

# What stops the OpenAI step (the conversation keeps its texts until the next round).
OPENAI_ERRORS = (AIRetryableError, AIPermanentError, SecretOutsideTenant, GetParameterError)

# Turns read per run, before the filter: a Scan page of a few hundred small items (a few
# hundred KB at most, under DynamoDB's 1 MB page), each run's bounded work.
PAGE_TURNS = 300
# Pages per run, while its time lasts: 3,000 turns a minute, some 4 million a day, looked at.
PAGES_PER_RUN = 10


def sweep(deadline: float) -> dict[str, int]:
    """One run's share of the retention: up to PAGES_PER_RUN pages, within `deadline`
    (time.monotonic())."""
    settings = RetentionSettings.get()
    overrides = tenants.retention_overrides()
    shortest = rules.shortest_days(settings.turn_text_retention_days, overrides.values())
    if shortest is None:
        return {"turn_texts_expired": 0}
    now = clock.now()
    before = rules.cutoff(now, shortest)
    expired = problems = 0
    after = retention_store.load_cursor()
    for _ in range(PAGES_PER_RUN):
        if time.monotonic() >= deadline:
            break
        page, following = retention_store.turns_page(before, rules.ANSWERED, after, PAGE_TURNS)
        done, stopped, finished = _expire(page, overrides, now, deadline)
        expired, problems = expired + done, problems + stopped
        if not finished:
            break  # out of time: this page again next run (what is cut is passed over)
        after = following
        if after is None:
            break  # round the whole table: the next run starts it again
    retention_store.save_cursor(after)
    count("TurnTextsExpired", expired)
    if problems:
        count("TurnTextRetentionProblems", problems)
    return {"turn_texts_expired": expired, "turn_text_problems": problems}


def _expire(
    page: list[dict[str, Any]], overrides: dict[str, int], now: datetime, deadline: float
) -> tuple[int, int, bool]:
    """Steps 2 and 3 for one page: turns cut, conversations OpenAI stopped, and whether the
    page was finished before the deadline."""
    settings = RetentionSettings.get()
    by_conversation: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for turn in page:
        if forgetting_store.texts_of(turn):
            by_conversation[str(turn["conversation_id"])].append(turn)
    expired = problems = 0
    for conversation_id, held in by_conversation.items():
        if time.monotonic() >= deadline:
            return expired, problems, False
        conversation = conversations.get(conversation_id)
        if conversation is None or conversation.forget_started_at:
            continue  # a forget takes it all
        own = overrides.get(conversation.tenant_account_sid or "")
        days = rules.retention_days(own, settings.turn_text_retention_days)
        due = [t for t in held if rules.expired(str(t["status"]), str(t["created_at"]), days, now)]
        if not due or forgetting_store.busy(conversation_id, int(now.timestamp())):
            continue  # nothing due, or a run holds it: the next round
        if not _at_openai(conversation, due, deadline):
            problems += 1
            continue
        at = clock.iso(clock.now())
        expired += sum(retention_store.cut_to_figures(turn, rules.ANSWERED, at) for turn in due)
    return expired, problems, True


def _at_openai(conversation: Conversation, due: list[dict[str, Any]], deadline: float) -> bool:
    """Delete the OpenAI conversation's items of the expired turns (step 2). False: stopped."""
    reply_items = [str(i) for turn in due for i in turn.get("item_ids") or ()]
    if not conversation.openai_conversation_id or not reply_items:
        return True
    # The OpenAI SDK only when a turn's texts expire: the reconciler's cold start loads none.
    from functions.answer import openai_responses

    try:
        client = openai_responses.client_for(secrets.openai_api_key_for(conversation))
        budget = openai_responses.Budget(max(deadline - time.monotonic(), 0.1))
        items = openai_responses.all_conversation_items(client, conversation.openai_conversation_id, budget)
        gone = rules.expired_items(items or [], reply_items)
        openai_responses.delete_items(client, conversation.openai_conversation_id, gone, budget)
    except OPENAI_ERRORS as error:
        logger.warning(
            "Retention: OpenAI stopped; the turns keep their texts until the next round",
            extra={"conversation_id": conversation.conversation_id, "error": str(error)},
        )
        return False
    logger.info(
        "Retention: OpenAI items deleted",
        extra={"conversation_id": conversation.conversation_id, "items": len(gone)},
    )
    return True
