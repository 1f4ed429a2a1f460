"""Opt-out: a user who types STOP (or another of Twilio's opt-out keywords,
functions/intake/inbound.py; a tapped button is never one) is answered no more until an opt-in
keyword (START...).

The keywords of a batch are applied in arrival order, after the state the conversation
was in: the last one holds. A batch that leaves the conversation opted out is recorded
like any other (its user turn, its messages answered as tombstones) but makes no AI call:
Generate Reply stores its assistant turn as limited with `limited: "opted_out"` (as a cost
limit does, functions/guards/limits.py), and the run ends SUCCEEDED. The batch that
opts back in is answered. Twilio itself confirms an SMS opt-out or opt-in to the user and
blocks our messages meanwhile (error 21610); on WhatsApp it does neither (unless a
Messaging Service's Advanced Opt-Out is on), so this is what keeps an opted-out WhatsApp
user from being answered, and the batch that opts a WhatsApp conversation out carries the
one message that tells the person so and how to resume (OPT_OUT_CONFIRMATION): the
assistant turn's body, which Send Reply sends as it sends a reply, once
(functions/delivery/send_once.py)."""

from __future__ import annotations

from enum import StrEnum

from functions import clock
from functions.contract import BatchRef
from functions.guards import limits
from functions.guards.settings import GuardSettings
from functions.intake.inbound import Channel
from functions.observability import count, logger
from functions.storage.models import Conversation, Turn
from functions.tenancy import conversations


class ConsentState(StrEnum):
    ANSWER = "answer"
    HOLD_BACK = "hold_back"  # opted out before this batch, or opted out and in again
    OPTED_OUT_NOW = "opted_out_now"  # this batch's keyword opted the conversation out


def held_back_turn(task: BatchRef, conversation: Conversation, user_turn: Turn) -> Turn | None:
    """The assistant turn of a batch that goes unanswered because the user opted out
    (stored, limited `opted_out`), or None when the batch is answered. The batch that opts
    a WhatsApp conversation out gets the confirmation as its body."""
    state = record_consent(conversation, user_turn)
    if state is ConsentState.ANSWER:
        return None
    confirm = state is ConsentState.OPTED_OUT_NOW and conversation.channel == Channel.WHATSAPP
    body = GuardSettings.get().opt_out_confirmation.strip() if confirm else ""
    return limits.store_limited_turn(task, limits.Limit.OPTED_OUT, body=body)


def record_consent(conversation: Conversation, user_turn: Turn) -> ConsentState:
    """What the batch's keywords make of the conversation, recorded when the batch changes
    it (idempotent: a retry finds the change made by its own user turn, `opted_out_by`)."""
    keyword = user_turn.consent
    opted_out = conversation.opted_out if keyword is None else keyword == "opt_out"
    if opted_out != conversation.opted_out:
        conversations.set_opted_out(
            conversation.conversation_id, opted_out, clock.iso(clock.now()), user_turn.turn_id
        )
        logger.info("Conversation opted out" if opted_out else "Conversation opted back in")
        count("OptOuts" if opted_out else "OptIns")
    if not opted_out:
        return ConsentState.ANSWER
    logger.info("Opted out: batch recorded, not answered")
    changed_here = not conversation.opted_out or conversation.opted_out_by == user_turn.turn_id
    return ConsentState.OPTED_OUT_NOW if changed_here and keyword == "opt_out" else ConsentState.HOLD_BACK


def unsubscribed_at_twilio(conversation: Conversation, user_turn_id: str) -> None:
    """Twilio refused a message because the person unsubscribed from our number (21610:
    they sent Twilio an opt-out keyword, on SMS or through a Messaging Service's opt-out,
    https://www.twilio.com/docs/api/errors/21610). The conversation is marked opted out, as
    if that batch had carried the keyword, so that later bursts are recorded without an AI
    call; an opt-in keyword opens it again, as it does at Twilio."""
    if conversation.opted_out:
        return
    conversations.set_opted_out(conversation.conversation_id, True, clock.iso(clock.now()), user_turn_id)
    logger.info("Conversation opted out: Twilio says the person unsubscribed (21610)")
    count("OptOuts")
