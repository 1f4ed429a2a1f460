"""How the burst felt to the person, over HTTP through the local stack: the metrics the
functions print (EMF) for each batch (BurstEnd by reason, FragmentsPerReply, ReplyDelay)
and the webhook's SplitBursts, and `python -m infra.runs stats` computing the same figures
from the tables.

Locally the metrics are not printed (POWERTOOLS_METRICS_DISABLED); these tests turn them on,
so the handlers print their Embedded Metric Format records as they do in Lambda."""

from __future__ import annotations

from typing import Any

import pytest

from functions import clock
from functions.answer import turns
from functions.storage.tables import assistant_turn_id, user_turn_id
from infra import runs
from infra.names import NAMESPACE, SERVICE
from tests.support.emf import emf_records

pytestmark = pytest.mark.e2e

QUIET = {"mode": "quiet", "quiet_seconds": 1, "typing_quiet_seconds": 1, "max_wait_seconds": 5}


def _values(records: list[dict[str, Any]], name: str, conversation_id: str, **dimensions: str) -> list[float]:
    """The values of metric `name` about the conversation (other tests' runs print too) with
    these dimensions (and service), in namespace BurstReply."""
    values: list[float] = []
    for record in records:
        if name not in record or record.get("conversation_id") != conversation_id:
            continue
        (directive,) = record["_aws"]["CloudWatchMetrics"]
        assert directive["Namespace"] == NAMESPACE and record["service"] == SERVICE
        if any(record.get(k) != v for k, v in dimensions.items()):
            continue
        assert sorted(directive["Dimensions"][0]) == sorted(["service", *dimensions])
        value = record[name]
        values += value if isinstance(value, list) else [value]
    return values


def _a_burst_then_a_fragment_soon_after_its_reply(harness) -> str:
    """Two fragments answered in one reply (quiet mode), then one more 0-2 s after that
    reply: a split burst, answered by a second reply."""
    user = harness.new_user()
    conversation_id = harness.stage_directly(user, [])
    harness.set_conversation(conversation_id, batching=QUIET)
    for body in ("so about my order", "it has not arrived"):
        assert harness.send(user, body).status_code == 200
    harness.wait_until_quiet(conversation_id, runs=1)
    assert harness.send(user, "and it was paid").status_code == 200
    harness.wait_until_quiet(conversation_id, runs=2)
    return conversation_id


def test_each_batch_counts_its_burst_end_fragments_and_delay_and_a_quick_follow_up_is_split(
    harness, monkeypatch, capfd, configure
):
    harness.wait_until_no_run_is_running()
    configure(SPLIT_SECONDS="30", POWERTOOLS_METRICS_DISABLED="false")
    capfd.readouterr()

    conversation_id = _a_burst_then_a_fragment_soon_after_its_reply(harness)

    records = emf_records(capfd.readouterr().out)
    assert _values(records, "BurstEnd", conversation_id, reason="quiet") == [1, 1]
    assert sorted(_values(records, "FragmentsPerReply", conversation_id)) == [1, 2]
    recorded = {t.turn_id: t for t in turns.list_of(conversation_id)}
    expected = [  # each batch's last fragment to its reply's first part, as recorded
        clock.iso_to_ms(recorded[assistant_turn_id(w)].first_part_at or "")
        - clock.iso_to_ms(recorded[user_turn_id(w)].last_received_at or "")
        for w in {t.window_id for t in recorded.values() if t.role == "user"}
    ]
    assert sorted(_values(records, "ReplyDelay", conversation_id)) == sorted(expected)
    assert all(delay >= 1000 for delay in expected)  # the quiet second, at least
    assert _values(records, "SplitBursts", conversation_id) == [1]


def test_infra_runs_stats_prints_the_same_figures_from_the_tables(harness, capfd, configure):
    configure(SPLIT_SECONDS="30")
    since = clock.iso(clock.now())

    _a_burst_then_a_fragment_soon_after_its_reply(harness)
    capfd.readouterr()

    assert runs.main(["stats", "--since", since]) == 0
    printed = capfd.readouterr().out.splitlines()
    assert printed[1:6] == [
        "  Batches recorded    2",
        "  BurstEnd            fixed 0, quiet 2, cap 0, flush 0, max_messages 0",
        "  FragmentsPerReply   mean 1.5, max 2 (2 replies)",
        printed[4],  # ReplyDelay: measured below
        "  SplitBursts         1 (begun within 30 s of a reply)",
    ]
    assert printed[4].startswith("  ReplyDelay          p50 ") and printed[4].endswith("(2 replies)")
    assert "RepliesDiscarded" in printed[6]

    assert runs.main(["stats", "--since", "1h"]) == 0  # the documented form
    assert "SplitBursts" in capfd.readouterr().out
    assert runs.main(["stats", "--since", "yesterday"]) == 2  # a clear error, nothing read
