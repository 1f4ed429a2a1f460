"""Counting an AI call is one DynamoDB transaction over several counters, some shared by
every conversation of a tenant or by everyone: two AI calls at the same moment make
DynamoDB cancel one with TransactionConflict. Nothing was counted then, and the task's
Retry (Generate Reply retries TransactionConflict) counts again."""

import json
from pathlib import Path

import pytest
from botocore.exceptions import ClientError

from functions.dal import dynamo, usage_counters
from functions.errors import TransactionConflict

DEFINITION = Path(__file__).resolve().parents[2] / "statemachines" / "batch_window.asl.json"


class CancellingClient:
    def __init__(self, *codes: str) -> None:
        self.codes = codes

    def transact_write_items(self, **_: object) -> None:
        reasons = [{"Code": code} for code in self.codes]
        raise ClientError(
            {"Error": {"Code": "TransactionCanceledException"}, "CancellationReasons": reasons},
            "TransactWriteItems",
        )


def _count(monkeypatch, *codes: str) -> str | None:
    monkeypatch.setattr(dynamo, "client", lambda: CancellingClient(*codes))
    return usage_counters.count_within({"tenant#AC1#h": 10, "all#h": 100}, expires_at=0)


def test_a_conflict_on_a_shared_counter_is_retried_by_the_task(monkeypatch):
    with pytest.raises(TransactionConflict):
        _count(monkeypatch, "None", "TransactionConflict")

    retried = {
        e
        for r in json.loads(DEFINITION.read_text())["States"]["Generate Reply"]["Retry"]
        for e in r["ErrorEquals"]
    }
    assert "TransactionConflict" in retried


def test_a_full_counter_is_named_not_retried(monkeypatch):
    assert _count(monkeypatch, "None", "ConditionalCheckFailed") == "all#h"
