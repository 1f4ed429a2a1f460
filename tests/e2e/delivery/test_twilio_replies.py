"""Replies as Twilio takes them, over HTTP: parts within Twilio's own length rule."""

from __future__ import annotations

import pytest

from functions.delivery.rules.replies import MAX_MESSAGE_CHARS, utf16_units

pytestmark = pytest.mark.e2e


def test_a_reply_of_emoji_is_split_by_twilios_count_and_every_part_is_accepted(harness):
    user = harness.new_user()
    emoji = "😀" * 900  # 900 characters, 1,800 UTF-16 code units
    assert harness.send(user, emoji).status_code == 200

    conversation_id = harness.conversation_of(user).conversation_id
    runs = harness.wait_until_quiet(conversation_id, runs=1)

    assert [r["status"] for r in runs] == ["SUCCEEDED"]
    parts = harness.replies_to(user)
    assert parts == ["You said:", "😀" * 800, "😀" * 100]  # the word, then cut at 1,600 units
    assert all(utf16_units(p) <= MAX_MESSAGE_CHARS for p in parts)
    assert [c["status"] for c in harness.stack.twilio.calls] == [201, 201, 201]  # no 21617
