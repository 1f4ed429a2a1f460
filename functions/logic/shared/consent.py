"""Opt-out: a user who sends STOP (or another of Twilio's opt-out keywords,
functions/inbound.py) is answered no more until an opt-in keyword (START...).

The keywords of a batch are applied in arrival order, after the state the conversation
was in: the last one holds. A batch that leaves the conversation opted out is recorded
like any other (its user turn, its messages answered as tombstones) but makes no AI call
and sends nothing: Generate Reply stores its assistant turn as limited with
`limited: "opted_out"` (as a cost limit does, functions/logic/shared/limits.py), and the run
ends SUCCEEDED. The batch that opts back in is answered. Twilio itself confirms an SMS
opt-out or opt-in to the user and blocks our messages meanwhile (error 21610); WhatsApp
has no such filter, so this is what keeps an opted-out WhatsApp user from being answered."""

from __future__ import annotations

from functions.dal import conversations
from functions.dal.models import Conversation, Turn
from functions.logic.rules import clock
from functions.observability import count, logger


def record_consent_and_hold_back(conversation: Conversation, user_turn: Turn) -> bool:
    """Whether the batch goes unanswered because the user has opted out; records the
    conversation's new state when the batch changes it (idempotent: a retry finds it)."""
    keyword = user_turn.consent
    opted_out = conversation.opted_out if keyword is None else keyword == "opt_out"
    if opted_out != conversation.opted_out:
        conversations.set_opted_out(conversation.conversation_id, opted_out, clock.iso(clock.now()))
        logger.info("Conversation opted out" if opted_out else "Conversation opted back in")
        count("OptOuts" if opted_out else "OptIns")
    if opted_out:
        logger.info("Opted out: batch recorded, not answered")
    return opted_out
