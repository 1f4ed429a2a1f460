from datetime import UTC, datetime

from functions.batching.windows import execution_name, new_window_id


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


def test_a_run_timeline_lists_states_with_durations_retries_and_waits():
    from datetime import timedelta

    from infra.runs import format_timeline, timeline

    t0 = datetime(2026, 1, 1, tzinfo=UTC)

    def event(i: int, kind: str, seconds: float, **details):
        return {"id": i, "type": kind, "timestamp": t0 + timedelta(seconds=seconds), **details}

    events = [
        event(1, "TaskStateEntered", 0, stateEnteredEventDetails={"name": "Wait For The Burst To End"}),
        event(2, "TaskTimedOut", 3, taskTimedOutEventDetails={"error": "States.Timeout", "cause": ""}),
        event(3, "TaskStateExited", 3, stateExitedEventDetails={"name": "Wait For The Burst To End"}),
        event(4, "TaskStateEntered", 3, stateEnteredEventDetails={"name": "Generate Reply"}),
        event(
            5,
            "TaskFailed",
            3.5,
            taskFailedEventDetails={
                "error": "AIRetryableError",
                "cause": '{"errorMessage": "OpenAI HTTP 503"}',
            },
        ),
        event(6, "TaskStateExited", 5, stateExitedEventDetails={"name": "Generate Reply"}),
    ]

    spans = timeline(events)
    lines = format_timeline(spans)

    assert [(s.name, s.duration_ms) for s in spans] == [
        ("Wait For The Burst To End", 3000),
        ("Generate Reply", 2000),
    ]
    assert "waited its full time" in lines[1]
    assert lines[3].endswith("attempt failed: AIRetryableError: OpenAI HTTP 503")
