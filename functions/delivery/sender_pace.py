"""Replies paced to their sender. Twilio sends from one WhatsApp sender at its rate, 80
messages a second by default (up to 400 for text, on request), and queues the rest
(https://www.twilio.com/docs/whatsapp/best-practices-and-faqs, "What is the MPS limit for
outbound WhatsApp messages?"); a message older than its ValidityPeriod in that queue is
failed with 30036 and never sent (https://www.twilio.com/docs/api/errors/30036, whose
remedy is "pacing traffic so your send rate is closer to your available throughput").
Every create carries a ValidityPeriod of a few seconds (twilio_messages.py), so a busy number
would lose every reply past a few seconds' worth of its rate.

So a reply part takes its sender's next turn before its create, at the sender's rate
(TWILIO_SENDER_MPS, or the number's own: `infra.tenants sender-mps`), booked in DynamoDB
across every conversation and Lambda (functions/delivery/sender_budget.py), and Send Reply
waits for it: created at most QUEUED_AHEAD_SECONDS before its turn, the part waits in
Twilio's queue no longer than that. A turn further ahead than the attempt can wait is not
booked: the attempt fails with TwilioRetryableError (nothing created), and the state
machine's Retry backs off (docs/adr/0142-replies-paced-to-their-sender.md).

A turn is booked only where a create follows (send_once.py's `send`): a part whose SID is
recorded, or that an earlier attempt is found to have sent, books none. A turn booked by an
attempt that dies before its create is lost: the sender sends one message fewer in that
second, nothing more."""

from __future__ import annotations

import zlib

from functions import clock
from functions.delivery import sender_budget
from functions.delivery.settings import DeliverySettings
from functions.delivery.twilio_messages import validity_period_seconds
from functions.errors import TwilioRetryableError
from functions.observability import count, logger, milliseconds
from functions.tenancy import tenants

# How long before its turn a part is created: Twilio's queue then holds at most this much of
# the sender's time (a quarter of the ValidityPeriod at most, the rest a margin for delays).
QUEUED_AHEAD_SECONDS = 1.0
# The most one Send Reply attempt waits for its sender's turns, its parts together: within its
# 60-second timeout, with the wait for a receipt (at most 20 s) and Twilio's calls.
WAIT_SECONDS = 20.0


def sender_rate(sender: str) -> float:
    """The messages a second `sender` (our number) sends at: its own, else TWILIO_SENDER_MPS."""
    own = tenants.sender_mps(sender)
    return own if own is not None else DeliverySettings.get().twilio_sender_mps


def wait_for_turn(sender: str, conversation_id: str, wait_at_most: float) -> float:
    """Book the sender's next turn and wait until a create may go (QUEUED_AHEAD_SECONDS before
    it); the seconds waited. TwilioRetryableError (refused: nothing was created) when the
    sender's turns are booked further ahead than `wait_at_most`. Not paced at rate 0."""
    mps = sender_rate(sender)
    if mps <= 0:
        return 0.0
    ahead = min(QUEUED_AHEAD_SECONDS, validity_period_seconds() / 4)
    now_us = int(clock.now().timestamp() * 1_000_000)
    latest_us = now_us + int((max(0.0, wait_at_most) + ahead) * 1_000_000)
    home = zlib.crc32(conversation_id.encode())  # a conversation's shard, if the sender has several
    turn = sender_budget.take_turn(sender, mps, now_us, latest_us, home)
    if turn is None:
        count("RepliesDeferredForSender")
        logger.warning("The sender's turns are booked too far ahead: retried later", extra={"mps": mps})
        raise TwilioRetryableError(
            f"the sender's turns are booked more than {wait_at_most:.1f} s ahead", refused=True
        )
    wait = max(0.0, (turn - now_us) / 1_000_000 - ahead)
    milliseconds("SenderWait", wait * 1000)
    if wait > 0:
        count("RepliesWaitingForSender")
        clock.sleep(wait)
    return wait
