"""SMS segments as Twilio counts them (functions/delivery/rules/sms_segments.py), and a reply
cut to a number of them. The figures are Twilio's: 160 GSM-7 characters in one segment,
153 in each of a longer message; 70 and 67 in UCS-2 (UTF-16 code units)."""

import pytest

from functions.delivery.rules.replies import split_reply
from functions.delivery.rules.sms_segments import (
    Encoding,
    cap_segments,
    encoding,
    message_segments,
    reply_segments,
)

FAMILY = "\U0001f468\u200d\U0001f469\u200d\U0001f467"  # one emoji drawn from three and two joiners
SMILE = "\U0001f600"  # outside the Basic Multilingual Plane: 2 UTF-16 code units


@pytest.mark.parametrize(
    ("body", "segments"),
    [
        ("", 0),
        ("a" * 160, 1),
        ("a" * 161, 2),
        ("a" * 306, 2),
        ("a" * 307, 3),
        ("a" * 1530, 10),
        ("a" * 1531, 11),
    ],
)
def test_gsm7_fits_160_in_one_segment_and_153_in_each_of_a_longer_message(body, segments):
    assert encoding(body or "a") is Encoding.GSM7
    assert message_segments(body) == segments


def test_gsm7_covers_accents_greek_capitals_and_the_pound_but_not_c_cedilla_or_a_backtick():
    assert encoding("Café £5 à Zürich, ΔΩ ¿¡ Øresund @home") is Encoding.GSM7
    assert encoding("ça va") is Encoding.UCS2
    assert encoding("`code`") is Encoding.UCS2
    assert encoding("“quoted”") is Encoding.UCS2  # curly quotes: Smart Encoding is not assumed


def test_an_extension_character_counts_two_and_is_never_split_between_segments():
    assert message_segments("€" * 80) == 1  # 160 septets
    assert message_segments("€" * 81) == 2
    assert message_segments("[" * 76 + "a") == 1  # 153 septets
    # 306 septets would fill two segments exactly, but the euro sign cannot straddle the
    # first one's last free septet: it opens the second, and the last "a" needs a third.
    assert message_segments("a" * 152 + "€" + "a" * 152) == 3


def test_one_character_outside_gsm7_makes_the_whole_message_ucs2():
    assert message_segments("a" * 70) == 1
    assert message_segments("a" * 69 + "ç") == 1
    assert message_segments("a" * 70 + "ç") == 2  # 71 > 70
    assert message_segments("a" * 134) == 1  # in GSM-7
    assert message_segments("a" * 133 + "ç") == 2  # in UCS-2: 134 = 67 + 67
    assert message_segments("a" * 134 + "ç") == 3


def test_an_emoji_counts_its_utf16_code_units_and_stays_in_one_segment():
    assert message_segments(SMILE * 35) == 1  # 70 code units
    assert message_segments(SMILE * 36) == 2  # 72: 33 emoji and 3
    # 134 code units would fill two segments, but the emoji cannot straddle two.
    assert message_segments("a" * 66 + SMILE + "a" * 66) == 3
    # A sequence drawn as one symbol (8 code units) is kept whole, as Twilio's calculator keeps a grapheme.
    assert message_segments("a" * 62 + FAMILY + "a" * 64) == 3


def test_a_reply_over_1600_characters_counts_the_segments_of_each_message_it_is_sent_as():
    text = " ".join(["word"] * 600)  # 2,999 characters: two messages
    parts = split_reply(text)
    assert len(parts) == 2
    assert reply_segments(text) == message_segments(parts[0]) + message_segments(parts[1])
    assert reply_segments(text) > message_segments(text)  # the split costs a segment


def _sentences(count: int) -> str:
    return " ".join(
        f"Sentence {i} tells the customer something useful about the order." for i in range(count)
    )


def test_a_reply_within_the_cap_is_kept_whole_and_0_means_no_cap():
    text = _sentences(20)  # about 1,300 characters: 9 segments
    assert cap_segments(text, 10) == (text, False)
    long = _sentences(200)
    assert cap_segments(long, 0) == (long, False)


@pytest.mark.parametrize("cap", [1, 3, 10, 25])
def test_a_long_reply_is_cut_after_the_last_sentence_that_fits(cap):
    text = _sentences(200)  # about 13,000 characters: 90 segments

    capped, cut = cap_segments(text, cap)

    assert cut and text.startswith(capped) and capped.endswith("order.")
    assert reply_segments(capped) <= cap
    following = text[len(capped) :].split(". ")[0] + "."
    assert reply_segments(capped + following) > cap  # the next sentence would not have fitted


def test_a_long_sentence_is_cut_after_a_word_with_an_ellipsis():
    text = "This sentence goes on " + " ".join(["and on"] * 400) + "."

    capped, cut = cap_segments(text, 2)

    assert cut and capped.endswith("on...")
    assert text.startswith(capped.removesuffix("..."))
    assert reply_segments(capped) <= 2
    assert reply_segments(capped.removesuffix("...") + " and...") > 2


def test_a_ucs2_reply_is_cut_within_its_segments_with_a_ucs2_ellipsis():
    text = f"Great news {SMILE} your order ships today " + " ".join(["and it is on its way"] * 60)

    capped, cut = cap_segments(text, 2)

    assert cut and capped.endswith("…")
    assert encoding(capped) is Encoding.UCS2
    assert reply_segments(capped) <= 2
    assert len(capped.encode("utf-16-le")) // 2 > 67  # not a single segment's worth: both are used


def test_a_word_longer_than_the_cap_is_cut_between_symbols_never_inside_an_emoji():
    text = FAMILY * 40  # one "word" of 320 code units

    capped, cut = cap_segments(text, 1)

    kept = capped.removesuffix("…")
    assert cut and reply_segments(capped) <= 1
    assert kept and kept == FAMILY * (len(kept) // len(FAMILY))
