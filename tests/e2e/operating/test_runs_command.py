"""`python -m infra.runs` against the local stack as an operator runs it, in a shell of its
own: `redrive` answers set-aside messages with nothing but AWS_ENDPOINT_URL set (or the
state machine's ARN, as the command's help used to ask); an unknown run is one line and a
non-zero exit; `list` says when there are no runs."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from functions.intake import staged_messages
from infra import runs
from tests.support.operator_shell import ROOT, operator_shell

pytestmark = pytest.mark.e2e

# What the command's help asked for locally, besides the state machine's ARN: the Turns table
# (and any region and credentials: the local stack takes any).
AS_THE_HELP_SAID = {
    "TURNS_TABLE": "Turns",
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_ACCESS_KEY_ID": "local",
    "AWS_SECRET_ACCESS_KEY": "local",
}


@pytest.mark.parametrize("shell", ["endpoint only", "with the state machine, as the help said"])
def test_redrive_answers_the_set_aside_messages_from_an_operators_shell(harness, shell):
    user = harness.new_user()
    conversation_id = harness.stage_directly(user, ["set aside, then redriven"])
    sids = [item["message_sid"]["S"] for item in harness.staged(conversation_id)]
    staged_messages.set_aside(conversation_id, sids, "w0", "AIPermanentError: refused")
    assert staged_messages.pending(conversation_id) == []
    names = (
        {}
        if shell == "endpoint only"
        else AS_THE_HELP_SAID | {"STATE_MACHINE_ARN": harness.stack.state_machine_arn}
    )

    done = subprocess.run(
        [sys.executable, "-m", "infra.runs", "redrive", conversation_id],
        cwd=ROOT,
        env=operator_shell(harness.stack, **names),
        capture_output=True,
        text=True,
        timeout=60,
    )

    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.splitlines()[-1])["requeued"] == 1  # after the functions' log line
    (run,) = harness.wait_until_quiet(conversation_id, runs=1)
    assert run["status"] == "SUCCEEDED"
    assert harness.replies_to(user) == ["You said: set aside, then redriven"]


def test_an_unknown_run_is_one_line(harness, capsys):
    assert runs.main(["show", "no-such-conversation-w1"]) == 1
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith("infra.runs: DescribeExecution: ExecutionDoesNotExist: ")


def test_list_says_when_there_are_no_runs(harness, capsys):
    assert runs.main(["list", "--conversation", "c-never-written"]) == 0
    assert capsys.readouterr().out == "No runs (conversation c-never-written).\n"
    assert runs.main(["list", "--status", "ABORTED", "--conversation", "c-never-written"]) == 0
    assert capsys.readouterr().out == "No runs (status ABORTED, conversation c-never-written).\n"
