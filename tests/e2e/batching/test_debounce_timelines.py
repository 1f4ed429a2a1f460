"""Scripted typing timelines over HTTP: when is a burst answered, and how many AI calls
does it take? Offsets are seconds, scaled down.

When a burst is over is asserted on what the system recorded, not on the test's clock:
the arrival times of the fragments (on the user turn) and the run's own decisions
("Acquire Processing Lock" answering `over`, with the history's timestamps). A burst must
be declared over at the first check at or after its due time, never before; a flush must
wake the waiting run instead of letting its wait time out. The reply delays the tests
print are for reading only."""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field

import pytest

from functions import clock
from functions.answer import turns
from functions.intake import staged_messages
from functions.tenancy import projects

pytestmark = pytest.mark.e2e


@dataclass
class Timeline:
    sent_at: list[float] = field(default_factory=list)
    replies: list[tuple[float, str]] = field(default_factory=list)

    @property
    def first_reply_after_last_fragment(self) -> float:
        return self.replies[0][0] - self.sent_at[-1]

    @property
    def first_reply_after_first_fragment(self) -> float:
        return self.replies[0][0] - self.sent_at[0]


def run_timeline(
    harness, rules: dict, fragments: list[tuple[float, str]], replies: int = 1
) -> tuple[Timeline, str]:
    """Give a new conversation `rules`, send `fragments` at their offsets over HTTP while
    watching for replies, until `replies` arrived and the conversation is quiet."""
    user = harness.new_user()
    conversation_id = harness.stage_directly(user, [])
    harness.set_conversation(conversation_id, batching=rules)
    timeline = Timeline()
    done = threading.Event()

    def watch_replies() -> None:
        seen = 0
        while not done.is_set():
            current = harness.replies_to(user)
            timeline.replies += [(time.monotonic(), body) for body in current[seen:]]
            seen = len(current)
            time.sleep(0.05)

    watcher = threading.Thread(target=watch_replies)
    watcher.start()
    start = time.monotonic()
    try:
        for offset, body in fragments:
            time.sleep(max(0.0, start + offset - time.monotonic()))
            timeline.sent_at.append(time.monotonic())
            assert harness.send(user, body).status_code == 200
        deadline = time.monotonic() + 30
        while len(timeline.replies) < replies and time.monotonic() < deadline:
            time.sleep(0.05)
        harness.wait_until_quiet(conversation_id, runs=1)
    finally:
        done.set()
        watcher.join()
    return timeline, conversation_id


@dataclass
class Decisions:
    """What the conversation's first run recorded about its burst."""

    first_fragment: float  # epoch seconds, as recorded on the user turn
    last_fragment: float
    checks: list[tuple[float, bool]]  # (when, over) of each Acquire Processing Lock
    woken: bool  # the last wait ended by a flush (its task token completed), not a timeout

    @property
    def answered_at(self) -> float:
        (when,) = [at for at, over in self.checks if over]
        return when

    def assert_answered_at_first_check_after(self, due: float) -> None:
        early = 0.005  # the history's timestamps have millisecond precision
        assert self.answered_at >= due - early, f"answered {due - self.answered_at:.3f}s before it was due"
        assert all(at < due for at, over in self.checks if not over), "waited again after the burst was due"


def decisions(harness, conversation_id: str) -> Decisions:
    first_run = harness.runs(conversation_id)[0]
    history = harness.history(first_run["executionArn"])
    checks = [
        (e["timestamp"].timestamp(), json.loads(e["stateExitedEventDetails"]["output"])["burst"]["over"])
        for e in history
        if e["type"] == "TaskStateExited"
        and e["stateExitedEventDetails"]["name"] == "Acquire Processing Lock"
    ]
    waits = [e["type"] for e in history if e["type"] in ("TaskTimedOut", "TaskSucceeded") and _is_wait(e)]
    window_id = first_run["name"].rsplit("-", 2)[-2] + "-" + first_run["name"].rsplit("-", 1)[-1]
    (user_turn,) = [
        t for t in turns.list_of(conversation_id) if t.window_id == window_id and t.role == "user"
    ]
    return Decisions(
        first_fragment=clock.parse(user_turn.first_received_at or "").timestamp(),
        last_fragment=clock.parse(user_turn.last_received_at or "").timestamp(),
        checks=checks,
        woken=waits[-1] == "TaskSucceeded",
    )


def _is_wait(event: dict) -> bool:
    details = event.get("taskTimedOutEventDetails") or event.get("taskSucceededEventDetails") or {}
    return details.get("resource") == "invoke.waitForTaskToken"


def report(capsys, name: str, harness, timeline: Timeline, conversation_id: str) -> None:
    """Print the timeline's figures: AI calls, reply delays, state transitions per run."""
    runs = harness.runs(conversation_id)
    transitions = [
        sum(1 for e in harness.history(r["executionArn"]) if e["type"].endswith("StateEntered")) for r in runs
    ]
    with capsys.disabled():
        print(
            f"\n{name}: {len(timeline.sent_at)} fragments, "
            f"{len(harness.ai_inputs(conversation_id))} AI call(s), "
            f"first reply {timeline.first_reply_after_last_fragment:.1f}s after the last fragment "
            f"({timeline.first_reply_after_first_fragment:.1f}s after the first), "
            f"state transitions per run {transitions}"
        )


def test_quiet_mode_answers_a_quick_burst_shortly_after_its_last_fragment(harness, capsys):
    rules = {
        "mode": "quiet",
        "quiet_seconds": 1,
        "typing_gap_seconds": 0.1,
        "window_seconds": 8,
        "max_wait_seconds": 20,
    }
    timeline, conversation_id = run_timeline(harness, rules, [(0, "hey"), (0.3, "my order"), (0.6, "#123")])
    report(capsys, "quiet, quick burst", harness, timeline, conversation_id)

    assert harness.ai_inputs(conversation_id) == ["hey\nmy order\n#123"]  # one AI call
    run = decisions(harness, conversation_id)
    run.assert_answered_at_first_check_after(run.last_fragment + 1.0)  # quiet for 1 s
    assert run.answered_at < run.first_fragment + 8  # not the fixed 8 s


def test_quiet_mode_answers_a_slow_typist_once(harness, capsys):
    # Gaps of 1.5 s: longer than a quick burst's, within the 2.5 s typing gap (1 s to spare
    # for a webhook slowed by the suite's load: 0.5 s was not always enough).
    rules = {
        "mode": "quiet",
        "quiet_seconds": 2,
        "typing_gap_seconds": 2.5,
        "typing_quiet_seconds": 3,
        "max_wait_seconds": 30,
    }
    fragments = [(0, "so"), (1.5, "I was thinking"), (3.0, "about my plan"), (4.5, "can I upgrade?")]
    timeline, conversation_id = run_timeline(harness, rules, fragments)
    report(capsys, "quiet, slow typist", harness, timeline, conversation_id)

    assert harness.ai_inputs(conversation_id) == ["so\nI was thinking\nabout my plan\ncan I upgrade?"]
    run = decisions(harness, conversation_id)
    run.assert_answered_at_first_check_after(run.last_fragment + 3.0)  # still typing: 3 s, not 2


def test_a_never_ending_stream_is_answered_at_the_maximum_wait(harness, capsys):
    rules = {
        "mode": "quiet",
        "quiet_seconds": 1,
        "typing_gap_seconds": 1.5,  # gaps of 0.7 s, with 0.8 s to spare for a slowed webhook
        "typing_quiet_seconds": 2,
        "max_wait_seconds": 4,
    }
    fragments = [(0.7 * i, f"part {i}") for i in range(11)]  # 7 s of fragments, never quiet
    timeline, conversation_id = run_timeline(harness, rules, fragments, replies=2)
    report(capsys, "quiet, never-ending stream", harness, timeline, conversation_id)

    run = decisions(harness, conversation_id)
    run.assert_answered_at_first_check_after(run.first_fragment + 4.0)  # the cap, though never quiet
    answered = harness.ai_inputs(conversation_id)
    assert len(answered) >= 2
    assert "\n".join(answered).split("\n") == [body for _, body in fragments]  # all, once, in order


def test_the_nth_fragment_flushes_at_once(harness, capsys):
    rules = {"mode": "quiet", "quiet_seconds": 8, "max_messages": 3, "max_wait_seconds": 30}
    timeline, conversation_id = run_timeline(harness, rules, [(0, "a"), (0.2, "b"), (0.4, "c")])
    report(capsys, "max messages flush", harness, timeline, conversation_id)

    assert harness.ai_inputs(conversation_id) == ["a\nb\nc"]
    run = decisions(harness, conversation_id)
    assert run.woken and run.checks == [(run.answered_at, True)]  # not after the 8 s quiet period


def test_a_flush_keyword_answers_at_once(harness, capsys):
    rules = {"mode": "fixed", "window_seconds": 10, "flush_keywords": ["over"], "max_wait_seconds": 30}
    timeline, conversation_id = run_timeline(harness, rules, [(0, "first"), (0.3, "second"), (0.6, "over")])
    report(capsys, "keyword flush", harness, timeline, conversation_id)

    assert harness.ai_inputs(conversation_id) == ["first\nsecond\nover"]
    run = decisions(harness, conversation_id)
    assert run.woken and run.answered_at < run.first_fragment + 10  # not after the 10 s window


def test_fixed_mode_answers_w_after_the_first_fragment_as_the_seeds_do(harness, capsys):
    rules = {"mode": "fixed", "window_seconds": 3, "max_wait_seconds": 30}
    timeline, conversation_id = run_timeline(harness, rules, [(0, "one"), (1.0, "two"), (2.4, "three")])
    report(capsys, "fixed window", harness, timeline, conversation_id)

    assert harness.ai_inputs(conversation_id) == ["one\ntwo\nthree"]
    run = decisions(harness, conversation_id)
    run.assert_answered_at_first_check_after(run.first_fragment + 3.0)
    assert len(run.checks) == 1  # later fragments do not move a fixed window


def test_a_conversation_handed_off_to_a_person_is_batched_and_recorded_without_a_reply(harness):
    rules = {"mode": "quiet", "quiet_seconds": 1, "answer": "human", "max_wait_seconds": 10}
    user = harness.new_user()
    conversation_id = harness.stage_directly(user, [])
    harness.set_conversation(conversation_id, batching=rules)
    for body in ("I want", "a person"):
        assert harness.send(user, body).status_code == 200

    runs = harness.wait_until_quiet(conversation_id, runs=1)

    assert [r["status"] for r in runs] == ["SUCCEEDED"]
    assert harness.ai_inputs(conversation_id) == [] and harness.replies_to(user) == []
    (turn,) = turns.list_of(conversation_id)
    assert (turn.role, turn.status, turn.body) == ("user", "handed_off", "I want\na person")
    assert staged_messages.pending(conversation_id) == []
    assert "lock_owner" not in harness.conversation_item(conversation_id)


def test_project_rules_apply_per_channel_unless_the_conversation_has_its_own(harness):
    projects.put(
        "p-timeline",
        {
            "mode": "quiet",
            "quiet_seconds": 1,
            "max_wait_seconds": 20,
            "channels": {"whatsapp": {"max_messages": 2}},
        },
    )
    user = harness.new_user()
    conversation_id = harness.stage_directly(user, [])
    harness.set_conversation(conversation_id, project_id="p-timeline")
    for body in ("x", "y"):
        assert harness.send(user, body).status_code == 200

    harness.wait_until_quiet(conversation_id, runs=1)

    assert harness.ai_inputs(conversation_id) == ["x\ny"]
    assert decisions(harness, conversation_id).woken  # flushed by the project's WhatsApp max_messages
