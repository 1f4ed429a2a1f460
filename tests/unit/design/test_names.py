"""One name per state: a task state's name in the console leads to its function's logical
id, its handler module and its logic module and function by one rule (functions/registry.py),
and each logic function takes and returns the models its registry row names."""

from __future__ import annotations

import importlib
import json
from pathlib import Path
from typing import get_type_hints

import pytest

from functions.registry import ALL_FUNCTIONS, TASKS
from infra.statemachine import DEFINITION_FILE
from tests.support.naming import logic_module

ROOT = Path(__file__).resolve().parents[3]


@pytest.mark.parametrize("function", TASKS, ids=lambda f: f.logical_id)
def test_a_task_state_names_its_function_its_handler_and_its_logic(function):
    assert function.state is not None
    words = function.state.split(" ")
    assert function.logical_id == "".join(w[0].upper() + w[1:] for w in words)
    assert function.module == "_".join(w.lower() for w in words)
    assert function.handler == f"functions.handlers.{function.module}.handler"
    step = getattr(importlib.import_module(logic_module(function)), function.module)
    hints = get_type_hints(step)
    assert (hints["task"], hints["return"]) == (function.input_model, function.output_model)


def test_every_task_state_of_the_definition_has_its_row():
    states = json.loads(DEFINITION_FILE.read_text())["States"]
    invoked = {
        name
        for name, state in states.items()
        if state["Type"] == "Task" and state["Resource"].startswith("arn:aws:states:::lambda:invoke")
    }
    assert invoked == {f.state for f in TASKS}


def test_every_handler_and_logic_module_belongs_to_a_function():
    """No module outside the rule: each handler module is a function's (besides the shared
    task_handler.py and twilio_http.py), and so is each module of states/ and entry_points/."""
    handlers = {p.stem for p in (ROOT / "functions" / "handlers").glob("*.py")} - {
        "__init__",
        "task_handler",
        "twilio_http",
    }
    assert handlers == {f.module for f in ALL_FUNCTIONS}
    for folder, functions in (("states", TASKS), ("entry_points", [f for f in ALL_FUNCTIONS if not f.state])):
        modules = {p.stem for p in (ROOT / "functions" / folder).glob("*.py")} - {"__init__"}
        assert modules == {f.module for f in functions}
