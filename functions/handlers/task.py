"""How a task state's entry point is made: Powertools' parser validates the input
against its model in functions/contract.py, the logic does the work, and its output
model is the result. Each handler module imports only what its functions use, so that a
function's cold start loads no SDK it does not call."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar, get_type_hints

from aws_lambda_powertools.utilities.parser import event_parser
from aws_lambda_powertools.utilities.typing import LambdaContext
from pydantic import BaseModel

from functions.config import get_settings
from functions.contract import BatchRef
from functions.observability import lambda_entry_point, logger

Task = TypeVar("Task", bound=BatchRef)
Handler = Callable[[dict[str, Any], LambdaContext], dict[str, Any]]


def task(model: type[Task], step: Callable[[Task], BaseModel]) -> Handler:
    """A Lambda handler that parses the task's input into `model` and runs `step`."""
    get_settings()  # fail at cold start, not at the first run, if the stack left a setting out

    @lambda_entry_point
    @event_parser(model=model)
    def handler(event: Task, context: LambdaContext) -> dict[str, Any]:
        logger.append_keys(conversation_id=event.conversation_id, execution_name=event.execution_name)
        return step(event).model_dump(mode="json")

    handler.contract = (model, get_type_hints(step)["return"])  # type: ignore[attr-defined]  # contract test
    return handler  # type: ignore[no-any-return]
