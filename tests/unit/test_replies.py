import pytest

from functions.logic.replies import MAX_MESSAGE_CHARS, split_reply


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
