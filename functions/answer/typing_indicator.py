"""WhatsApp's "typing…" indicator: once per burst, on its last message, when the reply is
asked for; shown again once if the reply is still being written 26 s later.

Twilio marks the message read and shows the indicator until the reply is delivered or for
25 s (https://www.twilio.com/docs/whatsapp/api/typing-indicators-resource), and one sent
again within those 25 s is reported ignored, so it is refreshed only after; Meta asks to
show one only when a reply will follow
(https://developers.facebook.com/documentation/business-messaging/whatsapp/typing-indicators/),
so Generate Reply shows it after the checks that may leave a batch unanswered (a human
answers, an opt-out, a cost limit). Each showing is claimed on the batch's user turn
before it is sent, so that a retried attempt never shows it again. It is a courtesy: a
failure is logged and counted (`TypingIndicatorsFailed`), and the batch goes on."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from functions import clock
from functions.answer import turns, twilio_typing
from functions.answer.settings import AnswerSettings
from functions.intake.inbound import Channel
from functions.observability import count, logger
from functions.storage.models import Conversation, Turn
from functions.tenancy import secrets

# Twilio's indicator lasts 25 s, and a repeat within them is ignored: shown again 26 s
# after, while the reply is still written.
REFRESH_AFTER = timedelta(seconds=26)


@dataclass
class TypingIndicator:
    conversation: Conversation
    user_turn: Turn

    def show(self) -> None:
        """Show it on the batch's last message, unless an earlier attempt did."""
        if self._wanted() and not self.user_turn.typing_shown_at:
            self._claim_and_send("typing_shown_at")

    def refresh_if_due(self) -> None:
        """While the reply is being written: show it again, once, 26 s after it was shown."""
        shown = self.user_turn.typing_shown_at
        if not self._wanted() or not shown or self.user_turn.typing_refreshed_at:
            return
        if clock.now() - clock.parse(shown) >= REFRESH_AFTER:
            self._claim_and_send("typing_refreshed_at")

    def _wanted(self) -> bool:
        return (
            AnswerSettings.get().typing_indicator
            and self.conversation.channel == Channel.WHATSAPP
            and bool(self.user_turn.message_sids)
        )

    def _claim_and_send(self, field: str) -> None:
        now = clock.iso(clock.now())
        # Tried once per attempt, whatever happens.
        self.user_turn = self.user_turn.model_copy(update={field: now})
        try:
            if not turns.claim_typing(self.conversation.conversation_id, self.user_turn.turn_id, field, now):
                return  # an earlier attempt showed it
            credentials = secrets.twilio_credentials_in_tenant_session(self.conversation)
            twilio_typing.show_typing(credentials, self.user_turn.message_sids[-1])
        except Exception as error:  # a courtesy: it never fails the batch
            reason = (
                str(error) if isinstance(error, twilio_typing.TypingIndicatorFailed) else type(error).__name__
            )
            logger.warning("Typing indicator not shown", extra={"reason": reason, "field": field})
            count("TypingIndicatorsFailed")
            return
        count("TypingIndicators")
