"""SMS is billed per segment: over HTTP through the local stack, a long SMS reply reaches
the Twilio stand-in cut to MAX_SMS_SEGMENTS_PER_REPLY segments in all, ending at a
sentence, recorded and counted; and the model is asked for fewer tokens on SMS.

The OpenAI stand-in answers `You said: <the batch>`, so a long burst gets a long reply. The
segments are counted here with Twilio's plain GSM-7 arithmetic (the text is ASCII without
the extension table's characters): 160 characters in one segment, 153 in each of more."""

from __future__ import annotations

import math
import secrets

import pytest

from functions.answer import turns
from functions.config import get_settings
from infra.local.webhooks import inbound_form, post_webhook
from tests.support.emf import emf_records
from tests.support.local_stack import OUR_SMS, OUR_WHATSAPP

pytestmark = pytest.mark.e2e


def _gsm7_segments(body: str) -> int:
    assert body.isascii() and not set(body) & set("^{}\\[~]|")
    return 1 if len(body) <= 160 else math.ceil(len(body) / 153)


def _paragraph(fragment: int) -> str:
    """About 1,000 characters of sentences."""
    return " ".join(
        f"Fragment {fragment} sentence {i} describes the parcel that never came." for i in range(15)
    )


def _send_sms(harness, user: str, body: str) -> None:
    config = harness.stack.config
    form = inbound_form(body, user, OUR_SMS, config.twilio_account_sid)
    assert post_webhook(harness.stack.sms_url, form, config.twilio_auth_token).status_code == 200


def test_a_long_sms_reply_is_sent_within_the_segment_cap_ending_at_a_sentence(
    harness, configure, monkeypatch, capfd
):
    configure(BATCH_WINDOW_SECONDS="2")  # both fragments in one burst
    monkeypatch.setenv("POWERTOOLS_METRICS_DISABLED", "false")
    cap = get_settings().max_sms_segments_per_reply  # the default
    user = f"+1555{secrets.randbelow(10**7):07d}"
    fragments = [_paragraph(1), _paragraph(2)]
    uncapped = "You said: " + "\n".join(fragments)  # what the stand-in answers: 13 segments in two messages
    assert _gsm7_segments(uncapped[:1600]) + _gsm7_segments(uncapped[1600:]) > cap

    for fragment in fragments:
        _send_sms(harness, user, fragment)
    conversation = harness.conversation_of(user, OUR_SMS)
    harness.wait_until_quiet(conversation.conversation_id, runs=1)

    sent = harness.replies_to(user)
    assert sent and sum(_gsm7_segments(body) for body in sent) <= cap
    reply = "\n".join(sent)
    assert uncapped.startswith(reply) and reply.endswith("came.")
    assert len(reply) > (cap - 1) * 153 - 80  # cut at the last sentence that fits, not far before
    (assistant,) = [t for t in turns.list_of(conversation.conversation_id) if t.role == "assistant"]
    assert (assistant.status, assistant.limited) == ("sent", "sms_segments")
    printed = capfd.readouterr().out
    assert sum(_counted(printed, "SmsSegmentsCapped")) == 1
    assert _max_output_tokens(harness, user, OUR_SMS) == get_settings().openai_max_output_tokens_sms


def test_a_whatsapp_reply_of_the_same_length_is_not_cut(harness, configure):
    configure(BATCH_WINDOW_SECONDS="2")
    user = harness.new_user()
    fragments = [_paragraph(1), _paragraph(2)]
    for fragment in fragments:
        assert harness.send(user, fragment).status_code == 200
    conversation = harness.conversation_of(user, OUR_WHATSAPP)
    harness.wait_until_quiet(conversation.conversation_id, runs=1)

    sent = " ".join(harness.replies_to(user))  # two messages: WhatsApp is not billed per segment
    assert sent.split() == ("You said: " + "\n".join(fragments)).split()
    assert _max_output_tokens(harness, user, OUR_WHATSAPP) == get_settings().openai_max_output_tokens


def _max_output_tokens(harness, user: str, our_number: str) -> int:
    """The max_output_tokens of the conversation's one request to OpenAI."""
    openai_conversation = harness.conversation_of(user, our_number).openai_conversation_id
    (call,) = [c for c in harness.stack.openai.calls if c["conversation"] == openai_conversation]
    return call["max_output_tokens"]


def _counted(printed: str, metric: str) -> list[float]:
    values: list[float] = []
    for record in emf_records(printed):
        if metric in record:
            value = record[metric]
            values += value if isinstance(value, list) else [value]
    return values
