"""`make smoke` (`python -m infra.smoke`) against the local stack, the same code as on AWS
with the endpoint overridden: a message signed as the tenant that owns the number, posted to
the webhook, its run followed state by state to the reply and Twilio's report of it. A
failed run names the state and the cause. Neither the auth token nor, unless asked, a text
is printed."""

from __future__ import annotations

import re
import subprocess
import sys
from datetime import date
from urllib.parse import urlsplit

import pytest

from infra import smoke
from infra.local.stack import LOCAL_AUTH_TOKEN
from infra.smoke import follow
from infra.smoke.message import DEFAULT_TEXT
from tests.support.local_stack import OUR_WHATSAPP
from tests.support.operator_shell import ROOT, operator_shell

pytestmark = pytest.mark.e2e


def test_the_first_message_is_followed_to_its_delivered_reply(harness):
    user = harness.new_user()
    port = str(urlsplit(harness.stack.gateway.url).port)  # `make local`'s webhook, on its port

    done = subprocess.run(
        [sys.executable, "-m", "infra.smoke", "--from", user, "--to", OUR_WHATSAPP, "--text", "smoke hello"],
        cwd=ROOT,
        env=operator_shell(harness.stack, GATEWAY_PORT=port),
        capture_output=True,
        text=True,
        timeout=120,
    )

    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    account = harness.stack.config.twilio_account_sid
    assert lines[0] == f"Posted a message signed by {account} to {harness.stack.whatsapp_url}: HTTP 200"
    (run,) = harness.runs(harness.conversation_of(user).conversation_id)
    assert lines[1].endswith(f", run {run['name']}")
    entered = [line.split("entered ", 1)[1] for line in lines if re.match(r"\s+\+\s*[\d.]+s  entered ", line)]
    exited = [line.split("exited  ", 1)[1] for line in lines if re.match(r"\s+\+\s*[\d.]+s  exited  ", line)]
    assert entered == harness.states_entered(run["executionArn"])  # each state, in order
    assert [re.sub(r" \(\d+ ms\)$", "", name) for name in exited] == entered
    assert any(re.fullmatch(r"Run SUCCEEDED after [\d.]+ s", line) for line in lines)
    assert "Reply sent: 1 part(s), 21 characters" in lines
    assert re.fullmatch(r"  SM[0-9a-f]{32}: (delivered|read)", lines[-1])  # WhatsApp reports `read` too
    printed = done.stdout + done.stderr
    assert LOCAL_AUTH_TOKEN not in printed
    assert "smoke hello" not in printed  # neither the message nor the reply ("You said: ...")
    assert harness.replies_to(user) == ["You said: smoke hello"]


def test_the_reply_is_printed_when_asked(harness, capsys):
    user = harness.new_user()
    arguments = [
        "--from",
        user,
        "--to",
        OUR_WHATSAPP,
        "--text",
        "show me",
        "--url",
        harness.stack.whatsapp_url,
    ]

    assert smoke.main([*arguments, "--show-text"]) == 0

    assert capsys.readouterr().out.splitlines()[-1] == "  | You said: show me"


def test_a_failed_run_names_the_state_and_the_cause(harness, configure, monkeypatch, capsys):
    configure(OPENAI_MODEL="gpt-5-mini")
    monkeypatch.setattr(harness.stack.openai, "today", lambda: date(2026, 12, 11))  # past its shutdown
    user = harness.new_user()

    status = smoke.main(["--from", user, "--to", OUR_WHATSAPP, "--url", harness.stack.whatsapp_url])

    assert status == 1
    lines = capsys.readouterr().out.splitlines()
    (ended,) = [line for line in lines if line.startswith("Run ")]
    assert re.fullmatch(r"Run FAILED after [\d.]+ s, in Generate Reply: AIModelUnavailable: .+", ended)
    assert "gpt-5-mini" in ended and "model_not_found" in ended
    assert lines[-1] == "No reply sent."


def test_an_unknown_sender_is_told_the_command_that_opens_their_conversation(
    harness, configure, monkeypatch, capsys
):
    """With AUTO_CREATE_CONVERSATIONS off (the deployed default) the first smoke message
    finds no conversation: the error names the command that opens it, which works as named."""
    configure(AUTO_CREATE_CONVERSATIONS="false", UNKNOWN_SENDER_REPLY="")
    monkeypatch.setattr(follow, "FIND_SECONDS", 1.0)  # not the 15 s an eventually consistent index gets
    user = harness.new_user()
    arguments = ["--from", user, "--to", OUR_WHATSAPP, "--url", harness.stack.whatsapp_url]

    assert smoke.main(arguments) == 1

    (error,) = capsys.readouterr().err.splitlines()
    named = re.search(r"create it with (python -m infra\.conversations create \S+ --number \S+)", error)
    assert named is not None, error
    assert named.group(1) == f"python -m infra.conversations create {user} --number {OUR_WHATSAPP}"
    opened = subprocess.run(
        [sys.executable, *named.group(1).split()[1:]],
        cwd=ROOT,
        env=operator_shell(harness.stack),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert opened.returncode == 0 and opened.stdout.startswith("Created "), opened.stderr
    assert smoke.main(arguments) == 0
    assert harness.replies_to(user) == [f"You said: {DEFAULT_TEXT}"]
