"""Entry points of the state machine's task states, one line each: Powertools' parser
validates the input against its model in functions/contract.py, the logic does the
work, and its output model is the result. functions/registry.py names the states each
entry point serves."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar, get_type_hints

from aws_lambda_powertools.utilities.parser import event_parser
from aws_lambda_powertools.utilities.typing import LambdaContext
from pydantic import BaseModel

from functions.config import get_settings
from functions.contract import (
    BatchRef,
    CheckInput,
    FailedInput,
    MergeInput,
    OpenNextInput,
    ParkInput,
    RecordInput,
)
from functions.logic import answering, failure, recording, waiting
from functions.observability import lambda_entry_point, logger

get_settings()  # fail at cold start, not at the first run, if the stack left a setting out

Task = TypeVar("Task", bound=BatchRef)
Handler = Callable[[dict[str, Any], LambdaContext], dict[str, Any]]


def task(model: type[Task], step: Callable[[Task], BaseModel]) -> Handler:
    """A Lambda handler that parses the task's input into `model` and runs `step`."""

    @lambda_entry_point
    @event_parser(model=model)
    def handler(event: Task, context: LambdaContext) -> dict[str, Any]:
        logger.append_keys(conversation_id=event.conversation_id, execution_name=event.execution_name)
        return step(event).model_dump(mode="json")

    handler.contract = (model, get_type_hints(step)["return"])  # type: ignore[attr-defined]  # contract test
    return handler  # type: ignore[no-any-return]


park_until_due = task(ParkInput, waiting.park_until_due)
check_batch_window = task(CheckInput, waiting.check_batch_window)
acquire_processing_lock = task(BatchRef, answering.acquire_processing_lock)
merge_staged_messages = task(MergeInput, answering.merge_staged_messages)
generate_reply = task(BatchRef, answering.generate_reply)
send_reply = task(BatchRef, answering.send_reply)
record_turns = task(RecordInput, recording.record_turns)
announce_answered_batch = task(BatchRef, recording.announce_answered_batch)
close_batch_window = task(BatchRef, recording.close_batch_window)
open_next_window = task(OpenNextInput, recording.open_next_window)
record_failed_batch = task(FailedInput, failure.record_failed_batch)
