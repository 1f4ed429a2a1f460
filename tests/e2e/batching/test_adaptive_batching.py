"""`adaptive` batching over HTTP: a conversation learns its quiet period from the person's
gaps, kept on its record with the processing lock; a fragment soon after the answer (a
split burst) makes the next window wait longer. Then `python -m infra.replay` reads the
same arrival times back from the local stack's Turns table."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from functions import clock
from functions.answer import turns
from functions.batching.rules.debounce import BatchingRules
from functions.contract import RunInput

pytestmark = pytest.mark.e2e

RULES = {"mode": "adaptive", "quiet_seconds": 1, "quiet_min_seconds": 0.5, "quiet_max_seconds": 20}


def _bounded(seconds: float) -> float:
    return min(max(seconds, RULES["quiet_min_seconds"]), RULES["quiet_max_seconds"])


def _taught_ms(first_ms: int, last_ms: int, count: int) -> int:
    """The rule as documented (docs/how-it-works.md), worked out here: the quiet period
    moves from quiet_seconds towards 1.75 times the burst's mean gap, by 1 - 0.75**gaps."""
    gaps = count - 1
    mean_gap = (last_ms - first_ms) / 1000 / gaps
    return int(1000 * _bounded(1 + (1 - 0.75**gaps) * (1.75 * mean_gap - 1)))


def _after_split(quiet: float, gap: float) -> float:
    """A split burst: half way towards 1.25 times the gap that split it."""
    return _bounded(quiet + 0.5 * (max(quiet, 1.25 * gap) - quiet))


def _run_rules(harness, run: dict) -> BatchingRules:
    described = harness.sfn.describe_execution(executionArn=run["executionArn"])
    return RunInput.model_validate(json.loads(described["input"])).rules


def _arrivals(conversation_id: str) -> list[list[int]]:
    """Each user turn's fragments' arrival times (epoch ms), oldest turn first."""
    user_turns = sorted(
        (t for t in turns.list_of(conversation_id) if t.role == "user"), key=lambda t: t.turn_id
    )
    return [
        [clock.iso_to_ms(t.first_received_at or "") + o for o in t.arrival_offsets_ms] for t in user_turns
    ]


def test_a_conversation_learns_its_quiet_period_and_waits_longer_after_a_split_burst(harness):
    user = harness.new_user()
    conversation_id = harness.stage_directly(user, [])
    harness.set_conversation(conversation_id, batching=RULES)

    for n, body in enumerate(("so", "about", "tomorrow")):
        time.sleep(0.3 if n else 0)
        assert harness.send(user, body).status_code == 200
    [first_run] = harness.wait_until_quiet(conversation_id, runs=1)

    [burst] = _arrivals(conversation_id)
    assert len(burst) == 3
    kept = harness.conversation_of(user)
    assert abs(kept.learned_quiet_ms - _taught_ms(burst[0], burst[-1], 3)) <= 1  # by the recorded gaps
    assert kept.learned_quiet_ms != 1000
    assert kept.last_burst_ms == burst[-1] and kept.burst_closed_ms > burst[-1]
    assert _run_rules(harness, first_run).quiet_seconds == 1

    assert harness.send(user, "at noon").status_code == 200  # soon after the answer: split
    second_run = harness.wait_until_quiet(conversation_id, runs=2)[1]

    [_, [late]] = _arrivals(conversation_id)
    waited = _run_rules(harness, second_run).quiet_seconds
    split_by = (late - kept.last_burst_ms) / 1000
    assert waited == pytest.approx(_after_split(kept.learned_quiet_ms / 1000, split_by))
    assert waited > kept.learned_quiet_ms / 1000  # nudged up by the split


def test_the_replay_reads_a_conversations_arrival_times_from_the_local_tables(harness):
    user = harness.new_user()
    for n, body in enumerate(("hello", "one more thing", "and this")):
        time.sleep(0.2 if n else 0)
        assert harness.send(user, body).status_code == 200
    conversation_id = harness.conversation_of(user).conversation_id
    harness.wait_until_quiet(conversation_id, runs=1)
    env = {"AWS_ENDPOINT_URL": harness.stack.aws.url, "PATH": os.environ.get("PATH", "")}

    result = subprocess.run(
        [sys.executable, "-m", "infra.replay", "--since", "1h", "--conversation", conversation_id]
        + ["--policies", "quiet:3,rules", "--json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )

    assert result.returncode == 0, result.stderr
    quiet, rules = json.loads(result.stdout)
    assert (quiet["policy"], quiet["bursts"], quiet["batches"], quiet["split_bursts"]) == ("quiet:3", 1, 1, 0)
    assert rules["policy"] == "rules" and rules["bursts"] == 1

    each = subprocess.run(  # no gap is 0 s or less: each fragment a burst of its own
        [sys.executable, "-m", "infra.replay", "--since", "1h", "--conversation", conversation_id]
        + ["--policies", "quiet:3", "--burst-gap", "0", "--json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert each.returncode == 0, each.stderr
    assert json.loads(each.stdout)[0]["bursts"] == 3


def test_a_fragment_sent_while_the_reply_is_written_opens_a_window_with_the_learned_quiet_period(harness):
    """With `on_newer: next`, the fragment goes to the next window, which Close Batch
    Window opens with what the conversation learned: it came after the burst was declared
    over, so the burst was split and the next window waits longer than `quiet_seconds`."""
    user = harness.new_user()
    conversation_id = harness.stage_directly(user, [])
    harness.set_conversation(conversation_id, batching={**RULES, "on_newer": "next"})

    harness.send_while_generating(user, "so about tomorrow", "and the day after", seconds=2)
    first, second = harness.wait_until_quiet(conversation_id, runs=2)

    assert len(_arrivals(conversation_id)) == 2  # two batches
    assert _run_rules(harness, first).quiet_seconds == 1
    assert _run_rules(harness, second).quiet_seconds > 1
