"""Replies paced to their sender, over HTTP on the local stack. Twilio sends from one
WhatsApp sender at its rate and queues the rest; a reply still queued when its
ValidityPeriod passes is failed with 30036 and never arrives
(https://www.twilio.com/docs/whatsapp/best-practices-and-faqs,
https://www.twilio.com/docs/api/errors/30036). The Twilio stand-in models that queue
(`POST /_control/sender_mps`, infra/local/standins/twilio_queue.py).

Twenty-four people write at once to one number whose sender sends 2 messages a second, every
create carrying a ValidityPeriod of 2 s (DELIVERY_RECEIPT_WAIT_SECONDS 4): paced at the
number's own rate, each gets exactly one reply and none expires; with the service's rate far
above the sender's, replies expire in Twilio's queue (the stand-in's queue is real)."""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
import requests

from functions.delivery import sender_pace
from infra.local.webhooks import inbound_form, post_webhook
from tests.support.waiting import wait_until

pytestmark = pytest.mark.e2e

PEOPLE = 24
SENDER_MPS = 2
EXPIRED = 30036
# A ValidityPeriod of 2 s (the wait for a receipt less Twilio's margin:
# functions/delivery/twilio_messages.py): 24 replies at 2 a second take 12 s, so most would
# expire in the sender's queue unpaced.
SHORT_VALIDITY = {"DELIVERY_RECEIPT_WAIT_SECONDS": "4"}


@pytest.fixture
def number(harness):
    """A number of its own (a tenant of its own), so that its sender's queue and turns are
    this test's alone; (AccountSid, token, number)."""
    ours = f"whatsapp:+1555008{secrets.randbelow(10**4):04d}"
    account_sid, token = harness.add_tenant(ours)
    yield account_sid, token, ours
    harness.stack.tenants.remove(account_sid)
    harness.forget_tenants()


@pytest.fixture
def counted(monkeypatch) -> list[tuple[str, float]]:
    """The metrics of the waits for the sender's turns (functions/delivery/sender_pace.py)."""
    seen: list[tuple[str, float]] = []
    for name in ("count", "milliseconds"):
        real = getattr(sender_pace, name)
        monkeypatch.setattr(
            sender_pace,
            name,
            lambda metric, value=1, real=real: (seen.append((metric, value)), real(metric, value)),
        )
    return seen


def _pace_the_stand_in(harness, ours: str, mps: float) -> None:
    """The sender's rate at Twilio, through the stand-in's control API."""
    url = f"{harness.stack.twilio_url}/_control/sender_mps"
    answer = requests.post(url, json={"from": ours, "mps": mps}, timeout=5)
    assert answer.status_code == 200 and answer.json() == {"from": ours, "mps": mps}


def _everyone_writes_at_once(harness, account_sid: str, token: str, ours: str) -> list[str]:
    people = [harness.new_user() for _ in range(PEOPLE)]

    def write(person: str) -> int:
        form = inbound_form(f"hello from {person[-4:]}", person, ours, account_sid)
        return post_webhook(harness.stack.whatsapp_url, form, token).status_code

    with ThreadPoolExecutor(max_workers=PEOPLE) as pool:
        assert list(pool.map(write, people)) == [200] * PEOPLE
    return people


def _answered(harness, people: list[str], account_sid: str, ours: str) -> None:
    """Until every person's conversation has had its run, and no run is running."""
    for person in people:
        conversation = wait_until(lambda p=person: harness.conversation_of(p, ours, account_sid), timeout=10)
        runs = harness.wait_until_quiet(conversation.conversation_id, runs=1, timeout=90)
        assert [run["status"] for run in runs] == ["SUCCEEDED"]


def _settled(harness, ours: str) -> list[dict[str, Any]]:
    """The messages from our number once none is still in Twilio's queue (its statuses after
    `queued` come by status callback, the last of them within a second or so)."""

    def done() -> list[dict[str, Any]] | None:
        ours_now = [m for m in harness.stack.twilio.messages if m["from"] == ours]
        waiting = [m for m in ours_now if m["status"] in ("accepted", "queued", "sent", "delivered")]
        return None if waiting or not ours_now else ours_now

    return wait_until(done, timeout=30, every=0.2)


def _expired_callbacks(harness, ours: str) -> list[dict[str, str]]:
    return [
        c["params"]
        for c in harness.stack.twilio.callbacks
        if c["params"]["From"] == ours and c["params"].get("ErrorCode") == str(EXPIRED)
    ]


def test_people_writing_at_once_to_a_number_paced_to_its_sender_each_get_one_reply_none_expired(
    harness, configure, number, counted
):
    account_sid, token, ours = number
    configure(**SHORT_VALIDITY)
    harness.stack.tenants.set_sender_mps(
        ours, SENDER_MPS
    )  # the number's own rate: `infra.tenants sender-mps`
    _pace_the_stand_in(harness, ours, SENDER_MPS)

    people = _everyone_writes_at_once(harness, account_sid, token, ours)
    _answered(harness, people, account_sid, ours)
    messages = _settled(harness, ours)

    assert sorted(m["to"] for m in messages) == sorted(people)  # one message each
    assert {m["status"] for m in messages} == {"read"}  # every one delivered and read
    assert [m for m in messages if m["error_code"] == EXPIRED] == [] and _expired_callbacks(
        harness, ours
    ) == []
    # They waited their turns in the service, not in Twilio's queue.
    waiting = [value for metric, value in counted if metric == "RepliesWaitingForSender"]
    waits = [value for metric, value in counted if metric == "SenderWait"]
    # (How long the last one waited depends on how fast the machine books the turns: a
    # loaded one books them later, so they wait less. The count of those that waited does not.)
    assert len(waits) == PEOPLE and len(waiting) >= PEOPLE - 2 * SENDER_MPS


def test_unpaced_the_same_replies_expire_in_the_senders_queue(harness, configure, number):
    account_sid, token, ours = number
    configure(TWILIO_SENDER_MPS="1000", **SHORT_VALIDITY)  # far above the sender's 2 a second
    _pace_the_stand_in(harness, ours, SENDER_MPS)

    people = _everyone_writes_at_once(harness, account_sid, token, ours)
    _answered(harness, people, account_sid, ours)
    messages = _settled(harness, ours)

    assert sorted(m["to"] for m in messages) == sorted(people)  # each reply created once
    expired = [m for m in messages if m["status"] == "failed" and m["error_code"] == EXPIRED]
    reached = [m for m in messages if m["status"] == "read"]
    assert len(expired) + len(reached) == PEOPLE
    assert len(expired) >= PEOPLE // 2, f"{len(expired)} expired"  # these people never hear back
    # Each expiry reported by its status callback (answered once Status Callback has run).
    reported = wait_until(
        lambda: len(_expired_callbacks(harness, ours)) >= len(expired) and _expired_callbacks(harness, ours),
        timeout=10,
    )
    assert sorted(c["To"] for c in reported) == sorted(m["to"] for m in expired)


def test_the_cli_gives_a_number_its_own_rate_and_drops_it(harness, number):
    _, _, ours = number
    env = {"AWS_ENDPOINT_URL": harness.stack.aws.url, "PATH": os.environ.get("PATH", "")}

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-m", "infra.tenants", "sender-mps", *args]
        return subprocess.run(command, env=env, capture_output=True, text=True)

    assert cli(ours).stdout.strip() == f"{ours}: no rate of its own (the deployment's TWILIO_SENDER_MPS)"
    assert cli(ours, "2.5").stdout.strip() == f"{ours}: 2.5 messages a second"
    assert harness.stack.tenants.sender_mps(ours) == 2.5
    assert cli(ours, "default").returncode == 0 and harness.stack.tenants.sender_mps(ours) is None
    refused = cli(harness.new_user(), "2")  # no tenant's number (another test may own a fixed one)
    assert refused.returncode == 1 and "Refused" in refused.stderr
    assert cli(ours, "fast").returncode != 0
