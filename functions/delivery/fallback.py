"""The fallback reply (FALLBACK_REPLY): what the user is told, once, when the AI cannot answer
a batch and it is set aside (functions/states/record_failed_batch.py). It is sent through
send_once.py (its FALLBACK_REPLY): the first attempt records when it began on the batch's
user turn (`fallback_since`), a later one looks for the fallback an earlier one may have sent
(a late answer, a crash: its status callback, Twilio's list, a bounded wait) before sending
it, and its SID is kept on the user turn (`fallback_message_sid`)."""

from __future__ import annotations

from functions.batching.settings import FailureSettings
from functions.contract import BatchRef
from functions.delivery.send_once import FALLBACK_REPLY, TurnMessage, send_once
from functions.errors import TwilioRetryableError
from functions.observability import logger
from functions.tenancy import conversations

# Twilio's REST client is loaded where the fallback is looked up or sent (send_once.py's
# TurnMessage): most failed batches are kept for a later window and send nothing, and Record
# Failed Batch's cold start skips the SDK.


def send_fallback(ref: BatchRef) -> None:
    """Tell the user of the batch `ref` that we cannot answer, once. A transient Twilio error
    is raised, so that the state retries, and so is a failure to record the SID of a
    fallback found or sent (the retry finds it); any other failure is logged (the batch is
    recorded either way)."""
    text = FailureSettings.get().fallback_reply
    if not text:
        return
    message: TurnMessage | None = None
    try:
        conversation = conversations.require(ref.conversation_id)
        message = TurnMessage(FALLBACK_REPLY, conversation, ref.window_id, text)
        send_once(message)
    except TwilioRetryableError:
        raise
    except Exception:
        if message is not None and message.sid:  # found or sent, and not recorded
            raise
        logger.exception("Fallback reply not sent")
