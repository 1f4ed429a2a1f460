import pytest

from functions.delivery.rules.replies import MAX_MESSAGE_CHARS, split_reply, utf16_units


def test_a_short_reply_is_one_part():
    assert split_reply("  Hello!  ") == ["Hello!"]


def test_an_empty_reply_has_no_parts():
    assert split_reply("   ") == []


def test_a_long_reply_splits_on_sentences_within_the_limit_and_keeps_everything():
    text = " ".join(f"Sentence number {i} ends here." for i in range(200))
    parts = split_reply(text)
    assert len(parts) > 1
    assert all(len(p) <= MAX_MESSAGE_CHARS for p in parts)
    assert all(p.endswith(".") for p in parts)
    assert " ".join(parts) == text


def test_without_sentences_it_splits_on_words():
    text = " ".join(["word"] * 1000)
    parts = split_reply(text, limit=100)
    assert all(len(p) <= 100 and not p.startswith(" ") for p in parts)
    assert " ".join(parts) == text


def test_paragraphs_are_preferred_boundaries():
    text = "a" * 50 + ". " + "b" * 20 + "\n\n" + "c" * 30
    assert split_reply(text, limit=80) == ["a" * 50 + ". " + "b" * 20, "c" * 30]


@pytest.mark.parametrize("limit", [5, 7])
def test_a_word_longer_than_the_limit_is_cut(limit):
    parts = split_reply("x" * 17, limit=limit)
    assert all(len(p) <= limit for p in parts)
    assert "".join(parts) == "x" * 17


# --- Twilio's count: UTF-16 code units (an emoji outside the BMP is two) -----------------


def test_emoji_count_two_so_a_reply_of_1000_emoji_is_two_parts():
    text = " ".join(["😀"] * 1000)  # 1,999 characters, 2,999 UTF-16 code units
    parts = split_reply(text)
    assert len(parts) == 2
    assert all(utf16_units(p) <= MAX_MESSAGE_CHARS for p in parts)
    assert " ".join(parts) == text


def test_a_reply_under_1600_characters_but_over_1600_units_is_split():
    text = "😀" * 900  # 900 characters, 1,800 code units: Twilio refuses it whole (21617)
    parts = split_reply(text)
    assert [utf16_units(p) for p in parts] == [1600, 200]
    assert "".join(parts) == text


def test_exactly_1600_units_is_one_part():
    assert split_reply("😀" * 800) == ["😀" * 800]
    assert split_reply("a" + "😀" * 800) == ["a" + "😀" * 799, "😀"]


def test_a_cut_does_not_split_a_joined_emoji():
    family = "👨\u200d👩\u200d👧"  # one symbol, five characters, eight code units
    parts = split_reply(family * 3, limit=12)
    assert "".join(parts) == family * 3
    assert all(utf16_units(p) <= 12 for p in parts)
    assert all(not p.startswith("\u200d") and not p.endswith("\u200d") for p in parts)


def test_non_bmp_text_mixed_with_words_splits_on_words_within_the_limit():
    text = " ".join(f"𝒳{i}" for i in range(600))  # mathematical script letters: two units each
    parts = split_reply(text, limit=100)
    assert all(utf16_units(p) <= 100 for p in parts)
    assert " ".join(parts) == text
