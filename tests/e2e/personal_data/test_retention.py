"""Turn-text retention over HTTP on the local stack (functions/personal_data/retention.py):
a burst answered, its turns made older than TURN_TEXT_RETENTION_DAYS (or the tenant's own
days, set with `python -m infra.tenants retention`), and the Reconciler run as its schedule
runs it: no item of any table holds what was written or answered in it, the OpenAI
conversation no longer holds its items, a later burst keeps its texts there and here, and
the person's next message is answered on the same conversation."""

from __future__ import annotations

import json
import secrets
import subprocess
import sys
from datetime import timedelta
from typing import Any

import pytest
import requests

from functions import clock
from functions.tenancy import tenants
from infra.local.lambdas import invoke
from tests.e2e.personal_data.test_personal_data import items_holding
from tests.support.operator_shell import ROOT, operator_shell
from tests.support.waiting import wait_until

pytestmark = pytest.mark.e2e


def reconcile() -> dict[str, Any]:
    """One pass of the Reconciler function (its AWS calls are evaluated against its role)."""
    summary, error = invoke("Reconciler", {})
    assert error is None, summary
    return summary  # type: ignore[no-any-return]


def answered(harness: Any, user: str, *fragments: str, runs: int) -> str:
    for fragment in fragments:
        assert harness.send(user, fragment).status_code == 200
    conversation_id = str(harness.conversation_of(user).conversation_id)
    assert harness.wait_until_quiet(conversation_id, runs=runs)[-1]["status"] == "SUCCEEDED"
    return conversation_id


def made_old(harness: Any, conversation_id: str, days: int) -> None:
    """Move the conversation's turns `days` back (instead of waiting them)."""
    long_ago = {"S": clock.iso(clock.now() - timedelta(days=days))}
    turns = harness.dynamodb.query(
        TableName="Turns",
        KeyConditionExpression="conversation_id = :c",
        ExpressionAttributeValues={":c": {"S": conversation_id}},
        ConsistentRead=True,
    )["Items"]
    assert turns
    for turn in turns:
        harness.dynamodb.update_item(
            TableName="Turns",
            Key={"conversation_id": turn["conversation_id"], "turn_id": turn["turn_id"]},
            UpdateExpression="SET created_at = :t",
            ExpressionAttributeValues={":t": long_ago},
        )


def turns_of(harness: Any, conversation_id: str) -> list[dict[str, Any]]:
    return list(
        harness.dynamodb.query(
            TableName="Turns",
            KeyConditionExpression="conversation_id = :c",
            ExpressionAttributeValues={":c": {"S": conversation_id}},
            ConsistentRead=True,
        )["Items"]
    )


def openai_items(harness: Any, conversation_id: str) -> list[dict[str, Any]]:
    """The OpenAI conversation's items, through the stand-in's control API."""
    openai_id = harness.conversation_item(conversation_id)["openai_conversation_id"]["S"]
    control = harness.stack.openai_url.removesuffix("/v1") + f"/_control/conversations/{openai_id}"
    shown = requests.get(control, timeout=5)
    shown.raise_for_status()
    return list(shown.json()["items"])


def expire_and_check(harness: Any, user: str, old: str, recent: str, days: int) -> None:
    """The burst with `old` made older than `days`, one with `recent` answered since: the
    reconciler cuts the first, keeps the second, and the conversation goes on."""
    conversation_id = answered(harness, user, f"about {old}", "and more", runs=1)
    made_old(harness, conversation_id, days + 1)
    assert answered(harness, user, f"now {recent}", runs=2) == conversation_id
    before = openai_items(harness, conversation_id)
    openai_id = harness.conversation_item(conversation_id)["openai_conversation_id"]
    assert old in json.dumps(before) and items_holding(harness, old)

    # Round the Turns table (other tests' turns in it too) until the old burst is cut: its own
    # turns looked at each round (a query), every table once at the end.
    def cut() -> bool:
        reconcile()
        return old not in json.dumps(turns_of(harness, conversation_id))

    wait_until(cut, timeout=60)

    assert items_holding(harness, old) == []
    assert items_holding(harness, recent)  # its turns keep their texts
    after = openai_items(harness, conversation_id)
    assert old not in json.dumps(after) and recent in json.dumps(after)
    assert [i["id"] for i in after] == [i["id"] for i in before][-len(after) :]  # the old ones only
    figures = harness.dynamodb.query(
        TableName="Turns",
        KeyConditionExpression="conversation_id = :c",
        ExpressionAttributeValues={":c": {"S": conversation_id}},
        ConsistentRead=True,
    )["Items"]
    cut = [t for t in figures if "texts_expired_at" in t]
    assert len(cut) == 2 and all("body" not in t and "created_at" in t and "status" in t for t in cut)

    assert answered(harness, user, "one more thing", runs=3) == conversation_id
    assert harness.replies_to(user)[-1] == "You said: one more thing"
    assert harness.conversation_item(conversation_id)["openai_conversation_id"] == openai_id
    assert "one more thing" in json.dumps(openai_items(harness, conversation_id))


def test_an_answered_burst_past_the_retention_loses_its_texts_here_and_at_openai(harness, configure):
    configure(BATCH_WINDOW_SECONDS="1", TURN_TEXT_RETENTION_DAYS="30")
    tag = secrets.token_hex(5)
    expire_and_check(harness, harness.new_user(), f"quince-{tag}", f"medlar-{tag}", days=30)


def tenants_command(harness: Any, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "infra.tenants", *args],
        cwd=ROOT,
        env=operator_shell(harness.stack),
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_a_tenants_own_retention_applies_where_the_deployment_keeps_texts(harness, configure):
    configure(BATCH_WINDOW_SECONDS="1", TURN_TEXT_RETENTION_DAYS="0", TENANT_CACHE_SECONDS="0")
    tenant = harness.stack.config.twilio_account_sid
    set_days = tenants_command(harness, "retention", tenant, "2")
    assert set_days.returncode == 0, set_days.stderr
    assert set_days.stdout.strip() == f"{tenant}: answered turns' texts kept 2 days"
    tenants.forget()  # what TENANT_CACHE_SECONDS does to a warm reconciler (the CLI ran apart)
    try:
        tag = secrets.token_hex(5)
        expire_and_check(harness, harness.new_user(), f"sloe-{tag}", f"rowan-{tag}", days=2)
    finally:
        dropped = tenants_command(harness, "retention", tenant, "default")
        tenants.forget()
    assert dropped.returncode == 0 and "the deployment's" in dropped.stdout
