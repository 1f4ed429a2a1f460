"""The reply-parts limit: a reply is cut to the parts a batch may send."""

from functions.delivery.rules.replies import split_reply
from functions.guards.limits import cap_reply_parts


def _long_reply(sentences: int) -> str:
    return " ".join(f"Sentence number {i} says something useful about the order." for i in range(sentences))


def test_a_reply_within_the_limit_is_kept_whole():
    text = _long_reply(40)
    assert cap_reply_parts(text, max_parts=10) == (text, False)
    assert cap_reply_parts(text, max_parts=0) == (text, False)  # 0: no limit


def test_a_longer_reply_keeps_exactly_the_first_parts():
    text = _long_reply(200)  # about 11,000 characters: 7 parts
    parts = split_reply(text)
    assert len(parts) > 3

    capped, cut = cap_reply_parts(text, max_parts=3)

    assert cut is True
    assert split_reply(capped) == parts[:3]
    assert text.startswith(capped)


def test_paragraphs_are_cut_where_the_parts_end():
    text = "\n\n".join("x" * 1500 for _ in range(5))
    capped, cut = cap_reply_parts(text, max_parts=2)
    assert cut and split_reply(capped) == ["x" * 1500, "x" * 1500]
