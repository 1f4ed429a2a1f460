"""`python -m infra.replay` on CSV files it has never seen: the figures of each policy,
worked out by hand from the arrival times, and clear errors for bad input."""

from __future__ import annotations

import json

import pytest

from infra.replay.__main__ import main

# Conversation a: a burst of three fragments (0, 1, 2.5 s) and, 100 s later, one more.
LABELLED = (
    "conversation,received_at,burst\na,1764150000,1\na,1764150001,1\na,1764150002.5,1\na,1764150100,2\n"
)
ISO = (
    "received_at,conversation\n"
    "2025-11-26T09:40:00Z,a\n2025-11-26T09:40:01+00:00,a\n2025-11-26T09:40:02.500,a\n2025-11-26T09:41:40Z,a\n"
)


def replay(tmp_path, capsys, text: str, *args: str) -> list[dict]:
    path = tmp_path / "arrivals.csv"
    path.write_text(text)
    assert main(["--csv", str(path), "--json", *args]) == 0
    return json.loads(capsys.readouterr().out)


def test_each_policy_is_replayed_with_the_figures_its_rules_give(tmp_path, capsys):
    quiet, fixed = replay(tmp_path, capsys, LABELLED, "--policies", "quiet:2,fixed:1")

    # quiet 2 s, checked at whole seconds: 2 s (not due, the 1 s fragment moved it), 3 s,
    # then 5 s: one batch, 2.5 s after the last fragment; the lone fragment 2 s after.
    assert quiet == {
        "policy": "quiet:2",
        "ai_calls_per_burst": 1.0,
        "replies_per_burst": 1.0,
        "split_bursts": 0,
        "delay_median_s": 2.25,
        "delay_p90_s": 2.5,
        "batches": 2,
        "bursts": 2,
    }
    # fixed 1 s: the burst in three batches (closed at 1, 2 and 3.5 s), each next fragment
    # within 3 s of the last close, so the person sees one reply per burst (on_newer: merge).
    assert (fixed["batches"], fixed["split_bursts"], fixed["ai_calls_per_burst"]) == (4, 1, 2.0)
    assert fixed["replies_per_burst"] == 1.0
    assert (fixed["delay_median_s"], fixed["delay_p90_s"]) == (1.0, 1.0)


def test_iso_times_and_unlabelled_bursts_give_the_same_figures(tmp_path, capsys):
    labelled = replay(tmp_path, capsys, LABELLED, "--policies", "quiet:2,fixed:1,adaptive,rules")
    unlabelled = replay(tmp_path, capsys, ISO, "--policies", "quiet:2,fixed:1,adaptive,rules")

    assert unlabelled == labelled
    assert [r["policy"] for r in unlabelled] == ["quiet:2", "fixed:1", "adaptive", "rules"]


def test_no_generation_time_means_no_merged_replies(tmp_path, capsys):
    [fixed] = replay(tmp_path, capsys, LABELLED, "--policies", "fixed:1", "--generation-seconds", "0")

    assert fixed["replies_per_burst"] == fixed["ai_calls_per_burst"] == 2.0


def test_the_frontier_is_drawn(tmp_path, capsys):
    replay(
        tmp_path,
        capsys,
        LABELLED,
        "--policies",
        "quiet:1,quiet:3,adaptive",
        "--plot",
        str(tmp_path / "f.png"),
    )

    assert (tmp_path / "f.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize(
    ("text", "args", "said"),
    [
        ("conversation,received_at\na,yesterday\n", (), "arrivals.csv:2: received_at 'yesterday'"),
        ("conversation,time\na,1\n", (), "no column received_at"),
        ("conversation,received_at,burst\na,1,x\na,2,\n", (), "some rows have a burst label"),
        ("conversation,received_at\n", (), "no rows"),
        ("conversation,received_at\na,1\n", ("--policies", "quiet:2:typing=x"), "policy 'quiet:2:typing=x'"),
        ("conversation,received_at\na,1\n", ("--policies", "sometimes"), "use fixed:W"),
    ],
)
def test_bad_input_gets_a_clear_error(tmp_path, capsys, text, args, said):
    path = tmp_path / "arrivals.csv"
    path.write_text(text)

    assert main(["--csv", str(path), *args]) == 2

    assert said in capsys.readouterr().err


def test_a_missing_file_is_named(tmp_path, capsys):
    assert main(["--csv", str(tmp_path / "nowhere.csv")]) == 2
    assert "nowhere.csv" in capsys.readouterr().err
