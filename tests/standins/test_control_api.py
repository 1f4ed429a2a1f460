"""The stand-ins' `/_control/*` API over plain HTTP: the old calls keep their meaning, the
new ones shape conversations and show status callbacks."""

from __future__ import annotations

import time
from typing import Any

import requests

from functions.answer.openai_models import DEFAULT_MODEL as MODEL
from tests.standins.conftest import ACCOUNT_SID, AUTH_TOKEN, OPENAI_KEY
from tests.support.waiting import wait_until

OURS, USER = "+15550000001", "+15557654321"
KEY = {"Authorization": f"Bearer {OPENAI_KEY}"}


def create_message(url: str, **form: str) -> requests.Response:
    return requests.post(
        f"{url}/2010-04-01/Accounts/{ACCOUNT_SID}/Messages.json",
        data={"From": OURS, "To": USER, "Body": "hi", **form},
        auth=(ACCOUNT_SID, AUTH_TOKEN),
        timeout=3,
    )


def create_response(url: str, conversation: str | None = None, **body: Any) -> requests.Response:
    return requests.post(
        f"{url}/v1/responses",
        json={"model": MODEL, "input": "hi", "conversation": conversation, **body},
        headers=KEY,
        timeout=3,
    )


def test_faults_calls_and_reset_over_http(openai_standin, twilio_standin):
    for standin, url, call, ok, endpoint in (
        (*openai_standin, create_response, 200, "create_response"),
        (*twilio_standin, create_message, 201, "messages_api"),
    ):
        queued = requests.post(f"{url}/_control/faults", json={"faults": [{}, {"status": 503}]}, timeout=3)
        assert queued.json() == {"queued": 2}
        assert [call(url).status_code for _ in range(3)] == [ok, 503, ok]
        listed = requests.get(f"{url}/_control/calls", timeout=3).json()
        calls = listed["calls"]
        assert [c["status"] for c in calls] == [ok, 503, ok] == [c["status"] for c in standin.calls]
        assert listed["requests"] == {endpoint: 3}  # per endpoint, the control API not counted
        assert requests.post(f"{url}/_control/reset", timeout=3).json() == {"reset": True}
        assert requests.get(f"{url}/_control/calls", timeout=3).json() == {"calls": [], "requests": {}}


def test_chaos_over_http_may_use_outcome_faults(twilio_standin):
    standin, url = twilio_standin
    chaos = {"rate": 1, "faults": [{"outcome": "failed", "error_code": 30006}], "seed": 3}
    assert requests.post(f"{url}/_control/chaos", json=chaos, timeout=3).ok

    assert create_message(url).status_code == 201
    wait_until(lambda: standin.messages[0]["status"] == "failed")
    assert standin.messages[0]["error_code"] == 30006
    requests.post(f"{url}/_control/chaos", json={"rate": 0}, timeout=3)
    assert create_message(url).status_code == 201
    wait_until(lambda: standin.messages[1]["status"] == "delivered")


def test_the_context_window_and_conversations_over_http(openai_standin):
    standin, url = openai_standin
    conversation = requests.post(f"{url}/v1/conversations", json={}, headers=KEY, timeout=3).json()["id"]
    assert create_response(url, conversation).status_code == 200

    shown = requests.get(f"{url}/_control/conversations/{conversation}", timeout=3).json()
    assert [i["role"] for i in shown["items"]] == ["user", "assistant"] and shown["busy_with"] is None
    assert shown["conversation"]["id"] == conversation

    window = requests.post(f"{url}/_control/context_window", json={"max_items": 2}, timeout=3)
    assert window.json() == {"max_items": 2, "max_chars": None}
    refused = create_response(url, conversation)
    assert refused.status_code == 400 and refused.json()["error"]["code"] == "context_length_exceeded"
    assert create_response(url, conversation, truncation="auto").status_code == 200
    requests.post(f"{url}/_control/context_window", json={"max_items": None}, timeout=3)
    assert create_response(url, conversation).status_code == 200

    assert requests.delete(f"{url}/_control/conversations/{conversation}", timeout=3).json() == {
        "forgotten": conversation
    }
    assert requests.get(f"{url}/_control/conversations/{conversation}", timeout=3).status_code == 404
    assert create_response(url, conversation).status_code == 404
    assert [c["status"] for c in standin.calls] == [200, 400, 200, 200, 404]


def test_status_callbacks_are_listed(twilio_standin, receiver):
    _, url = twilio_standin
    _, callback_url = receiver
    sid = create_message(url, StatusCallback=callback_url).json()["sid"]

    callbacks = wait_until(
        lambda: (
            (c := requests.get(f"{url}/_control/callbacks", timeout=3).json()["callbacks"])
            and len(c) == 2
            and c
        )
    )

    assert [c["params"]["MessageStatus"] for c in callbacks] == ["sent", "delivered"]
    assert all(c["params"]["MessageSid"] == sid and c["status"] == 204 and c["signature"] for c in callbacks)


def list_messages(url: str) -> list[dict[str, Any]]:
    listed = requests.get(
        f"{url}/2010-04-01/Accounts/{ACCOUNT_SID}/Messages.json",
        params={"To": USER, "From": OURS},
        auth=(ACCOUNT_SID, AUTH_TOKEN),
        timeout=3,
    )
    return list(listed.json()["messages"])


def test_list_lag_keeps_a_created_message_out_of_the_list_for_a_while(twilio_standin):
    standin, url = twilio_standin
    assert requests.post(f"{url}/_control/list_lag", json={"seconds": 0.8}, timeout=3).json() == {
        "seconds": 0.8
    }

    sid = create_message(url).json()["sid"]

    assert list_messages(url) == []  # created, not listed yet
    wait_until(lambda: [m["sid"] for m in list_messages(url)] == [sid])
    requests.post(f"{url}/_control/reset", timeout=3)
    assert standin.list_lag_seconds == 0  # off by default, and after a reset


def test_a_rate_per_recipient_refuses_at_create_or_reports_63018_by_callback(twilio_standin):
    standin, url = twilio_standin
    rate = {"per_recipient_seconds": 0.6, "at": "create"}
    assert requests.post(f"{url}/_control/rate", json=rate, timeout=3).json() == rate

    assert create_message(url).status_code == 201
    refused = create_message(url)
    assert create_message(url, To="+15559990000").status_code == 201  # another recipient
    time.sleep(0.6)
    assert create_message(url).status_code == 201

    assert (refused.status_code, refused.json()["code"]) == (400, 63018)
    requests.post(f"{url}/_control/rate", json={"per_recipient_seconds": 5, "at": "callback"}, timeout=3)
    assert [create_message(url).status_code for _ in range(2)] == [201, 201]
    wait_until(lambda: [m["status"] for m in standin.messages[-2:]] == ["delivered", "failed"])
    assert standin.messages[-1]["error_code"] == 63018
    bad = requests.post(f"{url}/_control/rate", json={"per_recipient_seconds": 1, "at": "later"}, timeout=3)
    assert bad.status_code == 400
