from functions.batching.rules.merge import arrival_order, merged_body
from functions.storage.models import StagedMessage


def _staged(sid: str, at: str, body: str = "", media: list[str] | None = None) -> StagedMessage:
    media_items = [{"url": url, "content_type": "image/jpeg"} for url in media or []]
    return StagedMessage.from_item(
        {"conversation_id": "c", "message_sid": sid, "received_at": at, "body": body, "media": media_items}
    )


def test_arrival_order_sorts_by_time_then_sid_and_removes_duplicates():
    items = [
        {"message_sid": "SMc", "received_at": "2026-01-01T00:00:02.000000+00:00"},
        {"message_sid": "SMb", "received_at": "2026-01-01T00:00:01.000000+00:00"},
        {"message_sid": "SMa", "received_at": "2026-01-01T00:00:01.000000+00:00"},  # tie: sid decides
        {"message_sid": "SMc", "received_at": "2026-01-01T00:00:02.000000+00:00"},  # duplicate
    ]
    assert arrival_order(items) == ["SMa", "SMb", "SMc"]


def test_arrival_order_reads_dynamodb_json_from_a_query_state():
    items = [
        {"message_sid": {"S": "SM2"}, "received_at": {"S": "2026-01-01T00:00:09.000000+00:00"}},
        {"message_sid": {"S": "SM1"}, "received_at": {"S": "2026-01-01T00:00:10.000000+00:00"}},
    ]
    assert arrival_order(items) == ["SM2", "SM1"]


def test_arrival_order_of_nothing_is_empty():
    assert arrival_order([]) == []


def test_merged_body_joins_in_the_given_order_and_names_media():
    messages = [
        _staged("SM2", "t2", "second"),
        _staged("SM1", "t1", "first"),
        _staged("SM3", "t3", "", ["https://media.example/1.jpg"]),
    ]
    assert merged_body(messages, ["SM1", "SM2", "SM3"]) == "first\nsecond\n[photo 1 (image/jpeg)]"


def test_merged_body_keeps_non_latin_text_and_emoji():
    messages = [_staged("SM1", "t1", "Привет 👋"), _staged("SM2", "t2", "مرحبا")]
    assert merged_body(messages, ["SM1", "SM2"]) == "Привет 👋\nمرحبا"
