"""How a task state's entry point is made: Powertools' parser validates the input against
its model in functions/contract.py (strictly: a key or a JSON type the contract does not
name is an error), the logic does the work, and its output model is the result.
Each handler module imports only what its functions use, so that a function's cold
start loads no SDK it does not call."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from aws_lambda_powertools.utilities.parser import parse
from aws_lambda_powertools.utilities.typing import LambdaContext
from pydantic import BaseModel

from functions.contract import BatchRef
from functions.observability import lambda_entry_point, logger
from functions.registry import BY_STATE

Handler = Callable[[dict[str, Any], LambdaContext], dict[str, Any]]


def task_handler[Task: BatchRef](state: str, step: Callable[[Task], BaseModel]) -> Handler:
    """The Lambda handler of a task state: it parses the input into the state's input
    model (functions/registry.py names it) and runs `step`."""
    definition = BY_STATE[state]
    definition.read_settings()  # fail at cold start, not at the first run, if the stack left a setting out
    model: type[Task] = definition.input_model  # type: ignore[assignment]

    @lambda_entry_point
    def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
        task_input = parse(event=event, model=model)
        logger.append_keys(
            conversation_id=task_input.conversation_id, execution_name=task_input.execution_name
        )
        return step(task_input).model_dump(mode="json")

    return handler  # type: ignore[no-any-return]
