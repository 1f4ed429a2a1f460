"""Opening a batch window: the conditional put decides, the winner starts the run."""

from __future__ import annotations

import hashlib
import json
import re
import secrets
from datetime import datetime
from functools import cache
from typing import Any

import boto3
from botocore.exceptions import ClientError

from functions.config import get_settings
from functions.dal import store
from functions.logic import clock
from functions.observability import count, logger

_NAME_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")
_MAX_EXECUTION_NAME = 80
# A window's item outlives its run by this much before TTL removes it (fallback only).
_WINDOW_TTL_MARGIN_SECONDS = 3600


@cache
def stepfunctions() -> Any:
    return boto3.client("stepfunctions")


def new_window_id(opened_at: datetime) -> str:
    """Sortable by opening time, unique per conversation."""
    return f"{int(opened_at.timestamp() * 1000):013d}-{secrets.token_hex(3)}"


def execution_name(conversation_id: str, window_id: str) -> str:
    """`<conversation>-<window>`: unique per window, so StartExecution is idempotent and
    never collides with the 90-day reservation of an earlier window's name."""
    conversation = _NAME_UNSAFE.sub("_", conversation_id)
    name = f"{conversation}-{window_id}"
    if len(name) > _MAX_EXECUTION_NAME:
        digest = hashlib.sha256(conversation_id.encode()).hexdigest()[:16]
        keep = _MAX_EXECUTION_NAME - len(window_id) - len(digest) - 2
        name = f"{conversation[:keep]}_{digest}-{window_id}"
    return name


def open_batch_window(
    conversation_id: str, wait_seconds: int | None = None, ensure_started: bool = False
) -> str | None:
    """Open a batch window for the conversation and start its execution, unless a window
    is already open. Returns the new window's id, or None when one was open.

    If StartExecution fails, the window is closed again and the error raised, so that
    the caller's retry (Twilio's, or the state machine's) can open it anew. A caller that
    may be such a retry passes `ensure_started`: if a window is open, its execution is
    started again with the same name and input, which AWS treats as the same request (a
    no-op if it runs) and which starts it if the opener died between the put and the start."""
    settings = get_settings()
    opened_at = clock.now()
    window_id = new_window_id(opened_at)
    wait = settings.batch_window_seconds if wait_seconds is None else wait_seconds
    expires_at = int(opened_at.timestamp()) + wait + settings.lock_lease_seconds + _WINDOW_TTL_MARGIN_SECONDS
    name = execution_name(conversation_id, window_id)
    run_input = json.dumps({"conversation_id": conversation_id, "window_id": window_id, "wait_seconds": wait})
    existing = store.open_window(
        conversation_id, window_id, clock.iso(opened_at), expires_at, name, run_input
    )
    if existing is not None:
        if ensure_started and existing.get("execution_input"):
            _start(existing["execution_name"], existing["execution_input"], already_open=True)
        return None
    try:
        _start(name, run_input)
    except Exception:
        logger.exception("StartExecution failed; closing the window again", extra={"execution_name": name})
        store.close_window(conversation_id, window_id)
        raise
    logger.info("Batch window opened", extra={"execution_name": name, "wait_seconds": wait})
    count("WindowsOpened")
    return window_id


def _start(name: str, run_input: str, already_open: bool = False) -> None:
    try:
        stepfunctions().start_execution(
            stateMachineArn=get_settings().state_machine_arn, name=name, input=run_input
        )
    except ClientError as error:
        # The open window's run has ended (its window is about to close): nothing to do.
        if not (already_open and error.response["Error"]["Code"] == "ExecutionAlreadyExists"):
            raise
