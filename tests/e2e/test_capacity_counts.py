"""The capacity model's per-burst counts (infra/capacity/burst.py) held to a real run: bursts
sent over HTTP to the local stack, every AWS call each function made counted (by function,
operation and table, with the items DynamoDB bills), with the invocations, the state
transitions, the state machine's own DynamoDB integrations and the status callbacks.

One conversation: a first burst with every cache cold (a new Lambda instance's reads),
then a returning burst of 1 fragment and one of 3, each answered with one reply part."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

import pytest
from aws_lambda_powertools.utilities.parameters.base import DEFAULT_PROVIDERS
from botocore.client import BaseClient

from functions.dal import assistant_profiles, tenants
from functions.registry import FunctionDefinition
from infra.capacity import burst
from infra.local.aws_calls import RECORDER, on_behalf_of
from tests.support.waiting import wait_until

pytestmark = pytest.mark.e2e

_function: ContextVar[str | None] = ContextVar("capacity_function", default=None)


@dataclass
class Recorded:
    """What one burst did."""

    calls: Counter[tuple[str, str]] = field(default_factory=Counter)
    items: Counter[tuple[str, str]] = field(default_factory=Counter)
    invocations: Counter[str] = field(default_factory=Counter)
    transitions: int = 0
    history_events: int = 0
    callbacks: int = 0
    parts: int = 0

    def per_call(self) -> dict[tuple[str, str], tuple[float, float]]:
        return {key: (float(n), float(self.items[key])) for key, n in self.calls.items()}


class Counting:
    """Counts each handler's invocations for one person's conversation and the AWS calls
    they make (a handler is loaded for each invocation: functions/registry.py,
    infra/local/lambdas.py); another test's late callback or the reconciler is left out."""

    def __init__(self) -> None:
        self.now = Recorded()
        self.ours: set[tuple[str, str]] = set()  # ("person", user), ("conversation", id)

    def install(self, monkeypatch: pytest.MonkeyPatch) -> None:
        counting, load, call = self, FunctionDefinition.load, BaseClient._make_api_call

        def loading(definition: FunctionDefinition) -> Any:
            handler = load(definition)

            def counted(event: Any, context: Any) -> Any:
                if on_behalf_of(event) not in counting.ours:
                    return handler(event, context)
                counting.now.invocations[definition.logical_id] += 1
                token = _function.set(definition.logical_id)
                try:
                    return handler(event, context)
                finally:
                    _function.reset(token)

            return counted

        def calling(client: BaseClient, operation: str, params: dict[str, Any]) -> Any:
            function = _function.get()
            if function is not None:
                service = client.meta.service_model.signing_name
                key = (function, burst.label(service, operation, params))
                counting.now.calls[key] += 1
                if service == "dynamodb":
                    counting.now.items[key] += burst.items_of(operation, params)
            return call(client, operation, params)

        monkeypatch.setattr(FunctionDefinition, "load", loading)
        monkeypatch.setattr(BaseClient, "_make_api_call", calling)


def _run_of_burst(harness, counting: Counting, user: str, fragments: int, runs: int) -> Recorded:
    counting.now = recorded = Recorded()
    callbacks_before = len(harness.stack.twilio.callbacks)
    sent_before = len(harness.replies_to(user))
    counting.ours.add(("person", user))
    for n in range(fragments):
        assert harness.send(user, f"fragment {n} of {fragments}").status_code == 200
    conversation_id = harness.conversation_of(user).conversation_id
    counting.ours.add(("conversation", conversation_id))  # before its window ends (1 s)
    run = harness.wait_until_quiet(conversation_id, runs=runs)[-1]
    recorded.parts = len(harness.replies_to(user)) - sent_before
    history = harness.history(run["executionArn"])
    recorded.history_events = len(history)
    recorded.transitions = _transitions(history)
    for event in history:  # the state machine's own integrations: not a function's calls
        details = event.get("taskScheduledEventDetails", {})
        if details and details["resourceType"] != "lambda":
            service = details["resourceType"].removeprefix("aws-sdk:")
            operation = details["resource"][0].upper() + details["resource"][1:]
            params = json.loads(details["parameters"])
            key = (burst.STATE_MACHINE, burst.label(service, operation, params))
            recorded.calls[key] += 1
            recorded.items[key] += 1
    # Twilio posts each status of each part (sent, delivered, read): wait until each one's
    # handler has answered.
    expected_callbacks = recorded.parts * 3

    def answered() -> bool:
        done = [c for c in harness.stack.twilio.callbacks[callbacks_before:] if c["status"]]
        return len(done) >= expected_callbacks

    assert wait_until(answered, timeout=15), "the status callbacks did not all come"
    recorded.callbacks = len(harness.stack.twilio.callbacks) - callbacks_before
    counting.now = Recorded()
    return recorded


def _transitions(history: list[dict[str, Any]]) -> int:
    entered = sum(1 for e in history if e["type"].endswith("StateEntered"))
    tasks = sum(1 for e in history if e["type"] == "TaskStateEntered")
    scheduled = sum(1 for e in history if e["type"] == "TaskScheduled")
    return entered + scheduled - tasks  # each retry of a task is a transition too


@pytest.fixture(scope="module")
def bursts(stack) -> Iterator[dict[str, Recorded]]:
    """A first burst with cold caches, then returning bursts of 1 and 3 fragments."""
    from tests.support.local_stack import Harness

    stack.openai.reset()
    stack.twilio.reset()
    harness, counting = Harness(stack), Counting()
    with pytest.MonkeyPatch.context() as monkeypatch:
        counting.install(monkeypatch)
        harness.wait_until_no_run_is_running()
        user = harness.new_user()
        if "secrets" in DEFAULT_PROVIDERS:  # a new instance: nothing cached
            DEFAULT_PROVIDERS["secrets"].clear_cache()
        tenants.forget()
        assistant_profiles.forget()
        recorded = {"first": _run_of_burst(harness, counting, user, 1, runs=1)}
        recorded["1"] = _run_of_burst(harness, counting, user, 1, runs=2)
        recorded["3"] = _run_of_burst(harness, counting, user, 3, runs=3)
    yield recorded
    stack.openai.reset()
    stack.twilio.reset()


@pytest.mark.parametrize("fragments", [1, 3])
def test_a_returning_bursts_aws_calls_per_function_are_the_models(bursts, fragments):
    recorded = bursts[str(fragments)]
    assert recorded.parts == 1
    assert recorded.callbacks == recorded.parts * 3  # sent, delivered, read

    assert recorded.per_call() == burst.expected(fragments, recorded.callbacks)


@pytest.mark.parametrize("fragments", [1, 3])
def test_a_returning_bursts_invocations_transitions_and_history_are_the_models(bursts, fragments):
    recorded = bursts[str(fragments)]
    callbacks = recorded.callbacks

    assert dict(recorded.invocations) == {
        f: n.at(fragments, callbacks) for f, n in burst.INVOCATIONS.items() if n.at(fragments, callbacks)
    }
    assert recorded.transitions == burst.TRANSITIONS.at(fragments, callbacks)
    assert recorded.history_events == burst.HISTORY_EVENTS.at(fragments, callbacks)


def test_a_cold_first_burst_adds_only_the_cached_reads_and_a_new_conversations_calls(bursts):
    first, warm = bursts["first"], bursts["1"]
    added = {key for key in first.calls if first.calls[key] > warm.calls.get(key, 0)}

    cached = {(r.function, r.call) for r in burst.CACHED_READS}
    new_conversation = {(c.function, c.call) for c in burst.FIRST_BURST_OF_A_CONVERSATION}
    assert added <= cached | new_conversation, added - cached - new_conversation
    assert new_conversation <= added  # the model's first-burst calls were all made
    # Each cached read the model names was made by its function (a cache hit included:
    # the recorder counts a read Powertools' cache answered as that function's own).
    seen = {(c.function, f"{c.service}:{c.operation}") for c in RECORDER.calls()}
    seen |= {key for key in first.calls}
    ran = set(first.invocations)
    assert {(r.function, r.call) for r in burst.CACHED_READS if r.function in ran} <= seen
