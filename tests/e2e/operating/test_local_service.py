"""`make local` as a newcomer runs it (`python -m infra.local`, in a process of its own):
the lines it prints stay as they were, new ones are added after them, and the functions'
settings from the environment are honoured (TWILIO_TIMEOUT_SECONDS here)."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import boto3
import pytest
import requests

from infra.local.stack import LOCAL_ACCOUNT_SID, LOCAL_AUTH_TOKEN
from infra.local.webhooks import inbound_form
from tests.support.twilio_delivery import deliver_as_twilio

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).parents[3]
URL = r"http://127\.0\.0\.1:\d+"
CONTRACT = [  # in this order; lines are added at the end, never changed
    rf"Webhook \(WhatsApp\): {URL}/whatsapp",
    rf"Webhook \(SMS\): {URL}/sms",
    rf"AWS endpoint: {URL}",
    rf"Twilio API: {URL}",
    rf"OpenAI API: {URL}/v1",
    r"State machine: arn:aws:states:us-east-1:123456789012:stateMachine:BurstReply-BatchWindow",
    r"Batch window: 1s\. Ctrl-C to stop\.",
    rf"Tenant: {LOCAL_ACCOUNT_SID} with whatsapp:\+14155238886, \+14155238886",
    r"OpenAI: 25s per Generate Reply attempt \(OPENAI_TIMEOUT_SECONDS\)",
    rf"Status callback: {URL}/twilio/status/\{{conversation\}}/\{{window\}}/\{{message\}}#rc=5&rp=all",
    rf"Paste in Twilio \(WhatsApp\): {URL}/whatsapp#rc=5&rp=all",
    rf"Paste in Twilio \(SMS\): {URL}/sms#rc=5&rp=all",
    rf"Console: {URL}/\?token=[\w-]+",
]


def test_make_local_prints_its_contract_and_honours_the_twilio_timeout():
    environment = {
        **{
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("WEBHOOK_", "TWILIO_", "OPENAI_", "AWS_"))
        },
        "AWS_PORT": "0",
        "GATEWAY_PORT": "0",
        "CONSOLE_PORT": "0",
        "BATCH_WINDOW_SECONDS": "1",
        "TWILIO_TIMEOUT_SECONDS": "0.5",
    }
    service = subprocess.Popen(
        [sys.executable, "-m", "infra.local"], cwd=ROOT, env=environment, stdout=subprocess.PIPE, text=True
    )
    try:
        lines = [service.stdout.readline().rstrip("\n") for _ in CONTRACT]  # type: ignore[union-attr]
        for pattern, line in zip(CONTRACT, lines, strict=True):
            assert re.fullmatch(pattern, line), (pattern, line)
        printed = {line.split(": ", 1)[0]: line.split(": ", 1)[1] for line in lines}

        twilio = printed["Twilio API"]
        requests.post(f"{twilio}/_control/faults", json={"faults": [{"delay": 1.5}]}, timeout=3)
        user = "whatsapp:+15551230000"
        form = inbound_form("slow Twilio", user, "whatsapp:+14155238886", LOCAL_ACCOUNT_SID)
        assert deliver_as_twilio(printed["Paste in Twilio (WhatsApp)"], form, LOCAL_AUTH_TOKEN).status == 200
        sfn = boto3.client(
            "stepfunctions",
            endpoint_url=printed["AWS endpoint"],
            region_name="us-east-1",
            aws_access_key_id="local",
            aws_secret_access_key="local",
        )
        run = _finished_run(sfn, printed["State machine"])
        history = sfn.get_execution_history(executionArn=run["executionArn"], maxResults=1000)["events"]
        failed = [e["taskFailedEventDetails"]["error"] for e in history if e["type"] == "TaskFailed"]
        assert run["status"] == "SUCCEEDED" and failed == ["TwilioRetryableError"]  # 0.5 s, not 10 s
        sent = requests.get(f"{twilio}/_control/calls", timeout=3).json()["calls"]
        assert [c["body"] for c in sent] == ["You said: slow Twilio"]  # sent once
        console = requests.get(printed["Console"], timeout=10)  # it lists the conversation, linked
        conversation_id = run["name"].rsplit("-", 2)[0]  # the run's name: <conversation>-<window>
        assert console.status_code == 200 and f'href="/conversations/{conversation_id}"' in console.text
    finally:
        service.send_signal(signal.SIGTERM)
        rest, _ = service.communicate(timeout=20)
    assert rest.strip().endswith("Stopped.")


def _finished_run(sfn, state_machine_arn: str, timeout: float = 30) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        runs = sfn.list_executions(stateMachineArn=state_machine_arn)["executions"]
        if runs and runs[0]["status"] != "RUNNING":
            return runs[0]
        time.sleep(0.2)
    raise AssertionError("no finished run")
