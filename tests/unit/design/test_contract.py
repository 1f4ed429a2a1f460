"""The contract between the ASL and the task functions, checked statically: on AWS a
path that finds no field raises States.Runtime, which no Catch catches (the emulator is
kinder), so every path is checked here against the handlers' typed models."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from pydantic import BaseModel, ValidationError
from pydantic.fields import FieldInfo

from functions.contract import RunInput
from functions.errors import NewerFragments
from functions.registry import TASKS
from infra.statemachine import DEFINITION_FILE

DEFINITION = json.loads(DEFINITION_FILE.read_text())
STATES: dict[str, dict[str, Any]] = DEFINITION["States"]
BY_PLACEHOLDER = {f.placeholder: f for f in TASKS}
CONTEXT_PATHS = {"$$.Execution.Name", "$$.Task.Token", "$$.State.EnteredTime", "$"}
CATCH_ERROR_FIELDS = {"Error", "Cause"}


def _lambda_tasks() -> dict[str, tuple[type[BaseModel], type[BaseModel]]]:
    """State name → (input model, output model) of the function it invokes."""
    tasks = {}
    for name, state in STATES.items():
        if state["Type"] == "Task" and state["Resource"].startswith("arn:aws:states:::lambda:invoke"):
            placeholder = re.fullmatch(r"\$\{(\w+)\}", state["Parameters"]["FunctionName"]).group(1)  # type: ignore[union-attr]
            function = BY_PLACEHOLDER[placeholder]
            assert function.state == name, (function.logical_id, name)  # one name per state
            tasks[name] = (function.input_model, function.output_model)
    return tasks


LAMBDA_TASKS = _lambda_tasks()


def _shape() -> dict[str, set[str] | None]:
    """Every field the run's state can hold at top level, and its sub-fields: the run's
    input, each ResultPath with its ResultSelector's keys, each Catch's error."""
    shape: dict[str, set[str] | None] = {
        name: set(_fields(field.annotation)) if _is_model(field.annotation) else None
        for name, field in _fields(RunInput).items()
    }
    for state in STATES.values():
        target = state.get("ResultPath")
        if target:
            kept = {k.removesuffix(".$") for k in state.get("ResultSelector", {})}
            shape[target.removeprefix("$.")] = (shape.get(target.removeprefix("$.")) or set()) | kept
        for catch in state.get("Catch", []):
            if catch.get("ResultPath"):
                shape[catch["ResultPath"].removeprefix("$.")] = set(CATCH_ERROR_FIELDS)
    return shape


def _is_model(annotation: Any) -> bool:
    return isinstance(annotation, type) and issubclass(annotation, BaseModel)


def _fields(model: Any) -> dict[str, FieldInfo]:
    """A model's fields by the name they have in JSON."""
    return {f.alias or name: f for name, f in model.model_fields.items()}


def _paths(value: Any) -> list[str]:
    """Every `.$` path in a Parameters or ResultSelector block, and every path an
    intrinsic function there reads (`States.MathAdd($.regenerations, 1)`)."""
    if isinstance(value, dict):
        return [p for k, v in value.items() for p in (_read_by(v) if k.endswith(".$") else _paths(v))]
    return []


def _read_by(expression: str) -> list[str]:
    if expression.startswith("States."):
        return re.findall(r"\$\$?(?:\.\w+)*", expression)
    return [expression]


def _state_paths(state: dict[str, Any]) -> list[str]:
    paths = _paths(state.get("Parameters", {}))
    paths += [state[k] for k in ("TimeoutSecondsPath", "ErrorPath", "CausePath", "InputPath") if k in state]
    paths += [rule["Variable"] for choice in state.get("Choices", []) for rule in _rules(choice)]
    return paths


def _rules(rule: dict[str, Any]) -> list[dict[str, Any]]:
    """The comparisons of a Choice rule, through And, Or and Not."""
    nested = rule.get("And") or rule.get("Or") or ([rule["Not"]] if "Not" in rule else [])
    return [r for n in nested for r in _rules(n)] if nested else [rule]


@pytest.mark.parametrize("name", sorted(STATES))
def test_every_path_a_state_reads_is_written_by_the_run(name):
    shape = _shape()
    for path in _state_paths(STATES[name]):
        if path in CONTEXT_PATHS:
            continue
        top, _, rest = path.removeprefix("$.").partition(".")
        assert top in shape, f"{name}: {path} reads a field no state writes"
        if rest:
            assert shape[top] is not None and rest in shape[top], f"{name}: {path} names no such field"


@pytest.mark.parametrize("name", sorted(LAMBDA_TASKS))
def test_each_task_passes_exactly_its_input_model(name):
    model, _ = LAMBDA_TASKS[name]
    payload = {k.removesuffix(".$") for k in STATES[name]["Parameters"]["Payload"]}
    required = {k for k, f in _fields(model).items() if f.is_required()}
    assert payload <= set(_fields(model)), f"{name}: unknown keys {payload - set(_fields(model))}"
    assert required <= payload, f"{name}: missing keys {required - payload}"


@pytest.mark.parametrize("name", sorted(LAMBDA_TASKS))
def test_each_task_keeps_every_field_of_its_output_model(name):
    _, output = LAMBDA_TASKS[name]
    selector = STATES[name].get("ResultSelector")
    if selector is None:
        assert STATES[name].get("ResultPath", "$") is None, f"{name} keeps the raw Lambda result"
        return
    assert {k.removesuffix(".$") for k in selector} == set(_fields(output)), name
    for key, path in selector.items():
        assert path == f"$.Payload.{key.removesuffix('.$')}", f"{name}: {key} reads {path}"


@pytest.mark.parametrize("name", sorted(LAMBDA_TASKS))
def test_a_field_passed_on_to_another_task_is_typed_the_same_there(name):
    """A Payload key that hands on a whole earlier result (e.g. `window.$: $.window`)
    must name a model whose fields that result holds."""
    model, _ = LAMBDA_TASKS[name]
    shape = _shape()
    for key, path in STATES[name]["Parameters"]["Payload"].items():
        field = _fields(model).get(key.removesuffix(".$"))
        annotation = field.annotation if field else None
        if not _is_model(annotation) or not isinstance(path, str) or path.count(".") != 1:
            continue
        held = shape.get(path.removeprefix("$."))
        wanted = {k for k, f in _fields(annotation).items() if f.is_required()}
        assert held is not None and wanted <= held, f"{name}: {key} needs {wanted}, the run holds {held}"


@pytest.mark.parametrize("name", sorted(n for n, s in STATES.items() if s["Type"] == "Choice"))
def test_every_choice_checks_that_its_field_is_present_before_comparing_it(name):
    """A Choice on a missing field raises States.Runtime on AWS: each comparison sits in
    an And with an IsPresent test of the same path."""
    for choice in STATES[name]["Choices"]:
        compared = {r["Variable"] for r in _rules(choice) if "IsPresent" not in r}
        guarded = {r["Variable"] for r in choice.get("And", []) if r.get("IsPresent") is True}
        assert compared <= guarded, f"{name}: {compared - guarded} compared without IsPresent"


def test_every_task_function_serves_states_that_exist():
    for function in TASKS:
        assert function.states and set(function.states) <= set(STATES), function.logical_id


# Transient errors of each integration, as AWS names them:
# https://docs.aws.amazon.com/step-functions/latest/dg/bp-lambda-serviceexception.html (Lambda),
# https://docs.aws.amazon.com/step-functions/latest/dg/supported-services-awssdk.html (AWS SDK
# integrations: `DynamoDb.<Exception>`), and DynamoDB's own error list for the optimized
# integration (`DynamoDB.<Exception>`), TransactionConflictException included.
TRANSIENT = {
    "arn:aws:states:::lambda:invoke": {
        "Lambda.ServiceException",
        "Lambda.AWSLambdaException",
        "Lambda.SdkClientException",
        "Lambda.ClientExecutionTimeoutException",
        "Lambda.TooManyRequestsException",
    },
    "arn:aws:states:::aws-sdk:dynamodb": {
        "DynamoDb.ProvisionedThroughputExceededException",
        "DynamoDb.ThrottlingException",
        "DynamoDb.InternalServerErrorException",
        "DynamoDb.RequestLimitExceededException",
    },
    "arn:aws:states:::dynamodb": {
        "DynamoDB.ProvisionedThroughputExceededException",
        "DynamoDB.ThrottlingException",
        "DynamoDB.InternalServerErrorException",
        "DynamoDB.RequestLimitExceededException",
        "DynamoDB.TransactionConflictException",
    },
}


@pytest.mark.parametrize("name", sorted(n for n, s in STATES.items() if s["Type"] == "Task"))
def test_every_task_retries_its_integrations_transient_errors(name):
    state = STATES[name]
    (wanted,) = [errors for prefix, errors in TRANSIENT.items() if state["Resource"].startswith(prefix)]
    retried = {error for retry in state.get("Retry", []) for error in retry["ErrorEquals"]}
    assert "States.ALL" in retried or wanted <= retried, f"{name} does not retry {wanted - retried}"


def test_a_reply_discarded_for_newer_fragments_is_caught_first_and_never_retried():
    """Generate Reply fails with NewerFragments when it discarded the reply: the run answers
    again (the only path that pays for it), and never retries the same batch or records it
    as failed. An answered reply goes straight on to Send Reply."""
    generate = STATES["Generate Reply"]
    retried = {e for r in generate["Retry"] for e in r["ErrorEquals"]}
    assert NewerFragments.__name__ not in retried and "States.ALL" not in retried
    first, *others = generate["Catch"]
    assert first["ErrorEquals"] == [NewerFragments.__name__]
    assert first["Next"] == "Answer Again With Newer Fragments"
    assert first["ResultPath"] not in (None, "$")  # the run's state is kept
    assert others and others[-1]["ErrorEquals"] == ["States.ALL"]
    assert generate["Next"] == "Send Reply"


def test_answering_again_hands_the_run_its_own_input_with_one_more_regeneration():
    """The Pass rebuilds the run's state as its input (RunInput): each field copied, the
    count of regenerations raised by one, which Generate Reply reads to stop at
    max_regenerations; what the discarded attempt left ($.batch, the error) is dropped."""
    again = STATES["Answer Again With Newer Fragments"]
    assert again["Type"] == "Pass" and again.get("ResultPath", "$") == "$"
    assert again["Next"] == "Query Staged Messages"
    parameters = {k.removesuffix(".$"): v for k, v in again["Parameters"].items()}
    assert set(parameters) == set(_fields(RunInput))
    assert parameters.pop("regenerations") == "States.MathAdd($.regenerations, 1)"
    assert all(path == f"$.{key}" for key, path in parameters.items()), parameters
    assert STATES["Generate Reply"]["Parameters"]["Payload"]["regenerations.$"] == "$.regenerations"


def test_a_conflicting_transaction_is_retried_where_the_turns_are_recorded():
    retried = {e for r in STATES["Record Turns And Release Lock"]["Retry"] for e in r["ErrorEquals"]}
    assert "TransactionConflict" in retried


# A Lambda timeout or out-of-memory surfaces as `Sandbox.Timedout` or as `Lambda.Unknown`
# ("Unhandled errors in Lambda are reported as Lambda.Unknown ... These include
# out-of-memory errors and function timeouts":
# https://docs.aws.amazon.com/step-functions/latest/dg/bp-lambda-serviceexception.html).
@pytest.mark.parametrize("name", sorted(n for n, s in STATES.items() if s["Type"] == "Task"))
def test_a_retrier_of_lambda_timeouts_retries_them_under_both_names(name):
    for retry in STATES[name].get("Retry", []):
        if "Sandbox.Timedout" in retry["ErrorEquals"]:
            assert "Lambda.Unknown" in retry["ErrorEquals"], f"{name} retries Sandbox.Timedout only"


def test_send_reply_retries_an_attempt_that_timed_out():
    retried = {e for r in STATES["Send Reply"]["Retry"] for e in r["ErrorEquals"]}
    assert {"Sandbox.Timedout", "Lambda.Unknown"} <= retried


def test_the_run_contract_is_read_strictly_and_its_errors_keep_no_values():
    """A value of another JSON type is an error (the string "3" is not the number 3), and so
    is a key the contract does not name; the error names the field, never the value."""
    run = {
        "conversation_id": "whatsapp#+15550001111#+15559990000",
        "window_id": "w1",
        "rules": {"mode": "quiet", "flush_keywords": ["now"], "max_wait_seconds": 30},
        "burst": {"over": False, "wait_seconds": 3},
        "batch_limit": 50,
    }
    assert RunInput.model_validate(run).rules.flush_keywords == ("now",)  # a JSON array
    for wrong, field in (
        ({"burst": {"over": False, "wait_seconds": "3"}}, "wait_seconds"),
        ({"extra": 1}, "extra"),
    ):
        with pytest.raises(ValidationError) as error:
            RunInput.model_validate({**run, **wrong})
        assert field in str(error.value) and "+15550001111" not in str(error.value)
