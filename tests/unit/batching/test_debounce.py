from functions.batching.rules.debounce import (
    BatchingRules,
    due_ms,
    hold_ms,
    is_due_now,
    is_flush_keyword,
    resolve_rules,
    seconds_until_due,
)
from functions.intake.inbound import Channel
from functions.storage.models import BatchWindow


def window(**clock: int | bool) -> BatchWindow:
    return BatchWindow(conversation_id="c", window_id="w", opened_at="", execution_name="c-w", **clock)


QUIET = BatchingRules(
    mode="quiet", quiet_seconds=3, typing_gap_seconds=2, typing_quiet_seconds=6, max_wait_seconds=20
)


def test_fixed_mode_is_due_w_after_the_first_fragment_whatever_follows():
    rules = BatchingRules(mode="fixed", window_seconds=10, max_wait_seconds=60)
    assert due_ms(rules, opened_ms=0, last_ms=9_000, previous_ms=8_000) == 10_000


def test_quiet_mode_is_due_a_quiet_period_after_the_last_fragment():
    assert due_ms(QUIET, opened_ms=0, last_ms=5_000, previous_ms=None) == 8_000
    assert due_ms(QUIET, opened_ms=0, last_ms=5_000, previous_ms=2_000) == 8_000  # a 3 s gap: not typing


def test_fragments_closer_than_the_typing_gap_mean_the_user_is_still_typing():
    assert due_ms(QUIET, opened_ms=0, last_ms=5_000, previous_ms=4_000) == 11_000


def test_the_maximum_wait_caps_every_mode():
    assert due_ms(QUIET, opened_ms=0, last_ms=19_000, previous_ms=18_500) == 20_000
    fixed = BatchingRules(mode="fixed", window_seconds=30, max_wait_seconds=20)
    assert due_ms(fixed, opened_ms=0, last_ms=0, previous_ms=None) == 20_000


def test_max_messages_and_a_flush_request_make_a_window_due_now():
    rules = QUIET.model_copy(update={"max_messages": 3})
    two = window(opened_ms=0, last_message_ms=1_000, message_count=2)
    assert not is_due_now(rules, two, now_ms=1_500)
    assert is_due_now(rules, two.model_copy(update={"message_count": 3}), now_ms=1_500)
    assert is_due_now(rules, two.model_copy(update={"flush_requested": True}), now_ms=1_500)
    assert is_due_now(rules, two, now_ms=4_000)


def test_flush_keywords_match_whole_words_in_any_case():
    rules = BatchingRules(flush_keywords=("done", "that's all"))
    assert is_flush_keyword(rules, "OK, Done!")
    assert is_flush_keyword(rules, "that's all for now")
    assert not is_flush_keyword(rules, "undone business")


def test_waits_are_whole_seconds_that_end_before_the_due_time_and_at_least_one():
    one = window(opened_ms=0, last_message_ms=0, message_count=1)
    assert seconds_until_due(QUIET, one, now_ms=100) == 2  # 2.9 s left: 0.9 s held after it
    assert seconds_until_due(QUIET, one, now_ms=0) == 2  # 3 s left: the last second held
    assert seconds_until_due(QUIET, one, now_ms=10_000) == 1


def test_the_last_second_before_the_due_time_is_held_and_no_more():
    one = window(opened_ms=0, last_message_ms=0, message_count=1)
    assert hold_ms(QUIET, one, now_ms=2_100) == 900
    assert hold_ms(QUIET, one, now_ms=2_000) == 1_000
    assert hold_ms(QUIET, one, now_ms=1_999) == 0  # more than a second: waited for
    assert hold_ms(QUIET, one, now_ms=3_000) == 0  # due
    assert hold_ms(QUIET, window(opened_ms=0, last_message_ms=0, flush_requested=True), now_ms=2_500) == 0


def test_rules_resolve_conversation_over_project_over_defaults_with_channel_overrides():
    defaults = {"mode": "fixed", "window_seconds": 10, "quiet_seconds": 3}
    project = {"mode": "quiet", "channels": {"sms": {"quiet_seconds": 8}}}
    conversation = {"quiet_seconds": 5, "channels": {"whatsapp": {"max_messages": 4}}}

    whatsapp = resolve_rules(defaults, Channel.WHATSAPP, project, conversation)
    sms = resolve_rules(defaults, Channel.SMS, project, conversation)

    assert (whatsapp.mode, whatsapp.quiet_seconds, whatsapp.max_messages) == ("quiet", 5, 4)
    assert (sms.mode, sms.quiet_seconds, sms.max_messages) == ("quiet", 5, 0)
    assert resolve_rules(defaults, Channel.SMS, project, None).quiet_seconds == 8
    assert resolve_rules(defaults, Channel.SMS).mode == "fixed"
