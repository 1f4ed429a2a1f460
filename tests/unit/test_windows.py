from datetime import UTC, datetime

from functions.logic.windows import execution_name, new_window_id


def test_window_ids_sort_by_opening_time():
    early = new_window_id(datetime(2026, 1, 1, tzinfo=UTC))
    late = new_window_id(datetime(2026, 1, 2, tzinfo=UTC))
    assert early < late


def test_execution_names_are_unique_per_window_and_valid():
    window = new_window_id(datetime(2026, 1, 1, tzinfo=UTC))
    name = execution_name("c0123", window)
    assert name == f"c0123-{window}"
    assert execution_name("c0123", new_window_id(datetime(2026, 1, 1, tzinfo=UTC))) != name


def test_long_or_unsafe_conversation_ids_still_give_valid_names():
    window = new_window_id(datetime(2026, 1, 1, tzinfo=UTC))
    first = execution_name("tenant/" + "x" * 100, window)
    second = execution_name("tenant/" + "x" * 99 + "y", window)
    for name in (first, second):
        assert len(name) <= 80
        assert all(ch.isalnum() or ch in "-_" for ch in name)
        assert name.endswith(window)
    assert first != second
