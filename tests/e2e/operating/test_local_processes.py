"""moto runs in a process of its own (DynamoDB, Step Functions' interpreter and Secrets
Manager on another core than the handlers), and that process never outlives the local
stack: stopped with it, when it fails to start, and when its process ends however it
ends. The handlers still run in the stack's process."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).parents[3]
SCRIPT = """
import sys
from infra.local.stack import LocalConfig, LocalStack

stack = LocalStack(LocalConfig(aws_port=0, gateway_port=0))
how = sys.argv[1]
if how == "fails":
    def provision():
        print(stack.aws.pid, flush=True)
        raise RuntimeError("provisioning failed")
    stack._provision = provision
    stack.start()
stack.start()
print(stack.aws.pid, flush=True)
if how == "stops":
    stack.stop()
    print("stopped", flush=True)
    sys.stdin.read()
elif how == "is killed":
    sys.stdin.read()
"""

OWNER = """
import sys
from infra.local.moto_process import MotoProcess

moto = MotoProcess("127.0.0.1", 0, "http://127.0.0.1:1").start()
print(moto.pid, flush=True)
if sys.argv[1] == "is killed":
    sys.stdin.read()
"""
OWNER_PIPES: dict[str, Any] = {
    "cwd": ROOT,
    "stdin": subprocess.PIPE,
    "stdout": subprocess.PIPE,
    "stderr": subprocess.DEVNULL,
    "text": True,
}


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"  # a zombie has ended (nothing may be left to reap it)


def gone_soon(pid: int, seconds: float = 10) -> bool:
    deadline = time.monotonic() + seconds
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    return not alive(pid)


def start_stack(how: str) -> tuple[subprocess.Popen[str], int]:
    process = subprocess.Popen(
        [sys.executable, "-c", SCRIPT, how],
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    pid = int(process.stdout.readline())  # type: ignore[union-attr]
    return process, pid


def test_moto_serves_from_another_process_and_the_handlers_run_in_this_one(harness, monkeypatch):
    from infra.local import lambdas

    assert harness.stack.aws.pid != os.getpid() and alive(harness.stack.aws.pid)
    invoked = []
    real = lambdas.invoke
    monkeypatch.setattr(lambdas, "invoke", lambda name, payload: invoked.append(name) or real(name, payload))
    conversation_id = harness.stage_directly(harness.new_user(), ["hello"])
    assert harness.wait_for_run(harness.start_run(conversation_id))["status"] == "SUCCEEDED"
    assert "GenerateReply" in invoked  # moto's interpreter invoked it here


def test_stopping_the_stack_stops_moto():
    process, pid = start_stack("stops")
    assert process.stdout.readline().strip() == "stopped"  # type: ignore[union-attr]
    assert not alive(pid)
    process.kill()
    process.wait()


def test_a_stack_that_fails_to_start_leaves_no_moto_behind():
    process, pid = start_stack("fails")
    assert process.wait(timeout=30) != 0
    assert not alive(pid)


def test_moto_ends_when_the_process_that_started_it_exits_or_is_killed():
    """What ends moto with its process is MotoProcess's alone (atexit, and its standard input
    closing), so a process that starts nothing else stands for the stack's: two at once."""
    exits = subprocess.Popen([sys.executable, "-c", OWNER, "exits"], **OWNER_PIPES)  # no stop()
    killed = subprocess.Popen([sys.executable, "-c", OWNER, "is killed"], **OWNER_PIPES)
    exits_pid, killed_pid = (int(p.stdout.readline()) for p in (exits, killed))  # type: ignore[union-attr]
    assert exits.wait(timeout=30) == 0 and gone_soon(exits_pid)
    assert alive(killed_pid)
    killed.send_signal(signal.SIGKILL)
    killed.wait()
    assert gone_soon(killed_pid)
