"""The capacity model's per-burst counts (infra/capacity/burst.py) held to a real run: bursts
sent over HTTP to the local stack, every AWS call each function made counted (by function,
operation and table, with the items DynamoDB bills), with the invocations, the state
transitions, the state machine's own DynamoDB integrations and the status callbacks.

One conversation: a first burst with every cache cold (a new Lambda instance's reads),
then a returning burst of 1 fragment and one of 3, each answered with one reply part; then,
in quiet mode, a burst of 2 fragments sent together and one whose second fragment extends its
window once (what an extension adds). A second tenant's conversation, whose assistant profile
has a function tool: a burst answered without calling it and one whose reply calls it once
(what a tool round adds). Each function keeps its own tenant sessions, as its own Lambda
instances do on AWS."""

from __future__ import annotations

import json
import os
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

import pytest
from aws_lambda_powertools.utilities.parameters.base import DEFAULT_PROVIDERS
from botocore.client import BaseClient

from functions.assistant import assistant_profiles
from functions.assistant.assistant_profile import AssistantProfile
from functions.registry import FunctionDefinition
from functions.storage.tables import ASSISTANT_PROFILES, TENANTS
from functions.tenancy import tenant_sessions, tenants
from functions.tenancy.settings import ToolSecretSettings
from infra.assistants import PREFIX, AssistantAdmin
from infra.capacity import burst
from infra.local.aws_calls import RECORDER, on_behalf_of
from infra.local.webhooks import inbound_form, post_webhook
from tests.support.tool_endpoint import ToolEndpoint
from tests.support.waiting import wait_until

pytestmark = pytest.mark.e2e

_function: ContextVar[str | None] = ContextVar("capacity_function", default=None)
_invocation: ContextVar[Counter[tuple[str, str]] | None] = ContextVar("capacity_invocation", default=None)
# Acquire Processing Lock reads the window again after holding for a burst due within a
# second: whether it holds depends on when the wait ended (moto's waits end up to a second
# late), not on the burst, so two bursts are compared without those second reads.
WINDOW_READ = ("AcquireProcessingLock", "dynamodb:GetItem BatchWindows")


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
    held: int = 0  # Acquire Processing Lock's second reads of a window it held for
    history_types: Counter[str] = field(default_factory=Counter)  # said when a count differs

    def per_call(self) -> dict[tuple[str, str], tuple[float, float]]:
        return {key: (float(n), float(self.items[key])) for key, n in self.calls.items()}

    def events_beside(self, other: Recorded) -> str:
        """The kinds of history event this run had more and fewer of than `other`'s."""
        more, fewer = self.history_types - other.history_types, other.history_types - self.history_types
        return f"history events more: {dict(more)}, fewer: {dict(fewer)}"

    def added_to(self, other: Recorded) -> dict[str, Any]:
        """What this burst did more than `other` (less: negative), by kind; nothing equal."""
        keys = set(self.calls) | set(other.calls)
        calls = {k: (self.calls[k] - other.calls[k], self.items[k] - other.items[k]) for k in keys}
        if WINDOW_READ in calls:
            held = self.held - other.held
            calls[WINDOW_READ] = (calls[WINDOW_READ][0] - held, calls[WINDOW_READ][1] - held)
        functions = set(self.invocations) | set(other.invocations)
        invocations = {f: self.invocations[f] - other.invocations[f] for f in functions}
        return {
            "calls": {k: v for k, v in calls.items() if v != (0, 0)},
            "invocations": {f: n for f, n in invocations.items() if n},
            "transitions": self.transitions - other.transitions,
            "history_events": self.history_events - other.history_events,
        }


class _SessionsPerFunction(dict[Any, Any]):
    """tenant_sessions' cache, kept apart for each function (by the one running): on AWS each
    function's instances take their own sessions, here the handlers share one process."""

    def get(self, key: Any, default: Any = None) -> Any:
        return super().get((_function.get(), key), default)

    def __setitem__(self, key: Any, value: Any) -> None:
        super().__setitem__((_function.get(), key), value)


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
                token, calls = _function.set(definition.logical_id), _invocation.set(Counter())
                try:
                    return handler(event, context)
                finally:
                    made = _invocation.get()
                    counting.now.held += max(0, (made or Counter())[WINDOW_READ] - 1)
                    _function.reset(token)
                    _invocation.reset(calls)

            return counted

        def calling(client: BaseClient, operation: str, params: dict[str, Any]) -> Any:
            function = _function.get()
            if function is not None:
                service = client.meta.service_model.signing_name
                key = (function, burst.label(service, operation, params))
                counting.now.calls[key] += 1
                (_invocation.get() or Counter())[key] += 1
                if service == "dynamodb":
                    counting.now.items[key] += burst.items_of(operation, params)
            return call(client, operation, params)

        monkeypatch.setattr(FunctionDefinition, "load", loading)
        monkeypatch.setattr(BaseClient, "_make_api_call", calling)


def _run_of_burst(
    harness,
    counting: Counting,
    user: str,
    fragments: int,
    runs: int,
    send: Callable[[str, str], Any] | None = None,
    conversation_of: Callable[[str], Any] | None = None,
    rest_after: float = 0.0,
) -> Recorded:
    """One burst of `fragments` from `user` (by `send`: to the default tenant's number unless
    given), answered; the fragments after the first `rest_after` seconds after it."""
    send = send or (lambda who, body: harness.send(who, body))
    conversation_of = conversation_of or harness.conversation_of
    counting.now = recorded = Recorded()
    callbacks_before = len(harness.stack.twilio.callbacks)
    sent_before = len(harness.replies_to(user))
    counting.ours.add(("person", user))
    started = time.monotonic()
    for n in range(fragments):
        if n == 1 and rest_after:
            time.sleep(max(0.0, started + rest_after - time.monotonic()))
        assert send(user, f"fragment {n} of {fragments}").status_code == 200
        conversation_id = conversation_of(user).conversation_id
        counting.ours.add(("conversation", conversation_id))  # before its window ends (1 s)
    run = harness.wait_until_quiet(conversation_id, runs=runs)[-1]
    recorded.parts = len(harness.replies_to(user)) - sent_before
    # moto says a run ended a moment before its history gets its last event.
    history: list[dict[str, Any]] = []

    def ended() -> bool:
        history[:] = harness.history(run["executionArn"])
        return history[-1]["type"] in ("ExecutionSucceeded", "ExecutionFailed", "ExecutionAborted")

    assert wait_until(ended, timeout=5), "the run's history has no end"
    recorded.history_events = len(history)
    recorded.history_types = Counter(event["type"] for event in history)
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
    # handler has answered. Only this person's: another test's late callbacks share the stand-in.
    expected_callbacks = recorded.parts * 3

    def theirs() -> list[dict[str, Any]]:
        return [c for c in harness.stack.twilio.callbacks[callbacks_before:] if c["params"].get("To") == user]

    def answered() -> bool:
        return len([c for c in theirs() if c["status"]]) >= expected_callbacks

    assert wait_until(answered, timeout=15), "the status callbacks did not all come"
    recorded.callbacks = len(theirs())
    counting.now = Recorded()
    return recorded


def _transitions(history: list[dict[str, Any]]) -> int:
    entered = sum(1 for e in history if e["type"].endswith("StateEntered"))
    tasks = sum(1 for e in history if e["type"] == "TaskStateEntered")
    scheduled = sum(1 for e in history if e["type"] == "TaskScheduled")
    return entered + scheduled - tasks  # each retry of a task is a transition too


# Quiet mode: answered 2.5 s after the last fragment (the wait's first timeout, 2 s, ends
# before; no typing period). A second fragment 1.6 s after the first moves the burst's end
# past that timeout by more than a second: the run waits once more (one extension).
QUIET = {"mode": "quiet", "quiet_seconds": 2.5, "typing_gap_seconds": 0, "max_wait_seconds": 30}
EXTENDING_AFTER = 1.6


@pytest.fixture(scope="module")
def bursts(stack) -> Iterator[dict[str, Recorded]]:
    """A first burst with cold caches, returning bursts of 1 and 3 fragments, two quiet-mode
    bursts (one extended once), and a tool tenant's bursts without and with a tool round."""
    from tests.support.local_stack import Harness

    stack.openai.reset()
    stack.twilio.reset()
    harness, counting = Harness(stack), Counting()
    endpoint = ToolEndpoint(answer=b'{"order": "12345", "status": "shipped Monday"}')
    with pytest.MonkeyPatch.context() as monkeypatch:
        counting.install(monkeypatch)
        monkeypatch.setattr(tenant_sessions, "_sessions", _SessionsPerFunction())  # none taken yet
        harness.wait_until_no_run_is_running()
        user = harness.new_user()
        if "secrets" in DEFAULT_PROVIDERS:  # a new instance: nothing cached
            DEFAULT_PROVIDERS["secrets"].clear_cache()
        tenants.forget()
        assistant_profiles.forget()
        recorded = {"first": _run_of_burst(harness, counting, user, 1, runs=1)}
        recorded["1"] = _run_of_burst(harness, counting, user, 1, runs=2)
        recorded["3"] = _run_of_burst(harness, counting, user, 3, runs=3)
        harness.set_conversation(harness.conversation_of(user).conversation_id, batching=QUIET)
        recorded["quiet"] = _run_of_burst(harness, counting, user, 2, runs=4)
        recorded["extended"] = _run_of_burst(harness, counting, user, 2, runs=5, rest_after=EXTENDING_AFTER)
        recorded.update(_tool_bursts(harness, counting, endpoint))
    endpoint.close()
    yield recorded
    stack.openai.reset()
    stack.twilio.reset()


def _tool_bursts(harness, counting: Counting, endpoint: ToolEndpoint) -> dict[str, Recorded]:
    """A tenant whose profile has a function tool: a first burst, a returning one answered
    without calling the tool, then one whose response calls it once (one round, one call)."""
    number = "whatsapp:+1555" + "".join(str(int(c, 16) % 10) for c in os.urandom(4).hex()[:7])
    account_sid, token = harness.add_tenant(number)
    tool = "lookup_order_" + os.urandom(3).hex()  # the stand-in's queued call is for this test's tool
    names = {name: os.environ[name] for name in (ASSISTANT_PROFILES.env_var, TENANTS.env_var)}
    names[PREFIX] = ToolSecretSettings.get().tool_tenant_secret_prefix
    profile = {
        "instructions": "Look orders up before answering.",
        "tools": [
            {
                "type": "function",
                "name": tool,
                "description": "Where an order is",
                "parameters": {
                    "type": "object",
                    "properties": {"order": {"type": "string"}},
                    "required": ["order"],
                    "additionalProperties": False,
                },
                "url": endpoint.url,
            }
        ],
    }
    admin = AssistantAdmin(names, harness.stack.client("secretsmanager"))
    admin.put(account_sid, None, AssistantProfile.model_validate(profile))
    assistant_profiles.forget()

    def send(user: str, body: str) -> Any:
        return post_webhook(harness.stack.whatsapp_url, inbound_form(body, user, number, account_sid), token)

    def conversation_of(user: str) -> Any:
        return harness.conversation_of(user, number, account_sid)

    user = harness.new_user()
    _run_of_burst(harness, counting, user, 1, runs=1, send=send, conversation_of=conversation_of)
    plain = _run_of_burst(harness, counting, user, 1, runs=2, send=send, conversation_of=conversation_of)
    harness.stack.openai.queue_tool_calls({"name": tool, "arguments": {"order": "12345"}})
    rounds = _run_of_burst(harness, counting, user, 1, runs=3, send=send, conversation_of=conversation_of)
    assert len(endpoint.received) == 1, "the tool was not called once"
    return {"tool plain": plain, "tool round": rounds}


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


def _model_added(fragments: int, callbacks: int, **more: float) -> dict[str, Any]:
    """What the model says `more` (extensions=1, rounds=1) adds to a burst."""
    without, with_more = burst.expected(fragments, callbacks), burst.expected(fragments, callbacks, **more)
    nothing = (0.0, 0.0)
    calls = {
        key: tuple(m - w for m, w in zip(with_more.get(key, nothing), without.get(key, nothing), strict=True))
        for key in set(with_more) | set(without)
    }
    invocations = {
        f: n.at(fragments, callbacks, **more) - n.at(fragments, callbacks)
        for f, n in burst.INVOCATIONS.items()
    }
    return {
        "calls": {k: v for k, v in calls.items() if v != (0, 0)},
        "invocations": {f: n for f, n in invocations.items() if n},
        "transitions": burst.TRANSITIONS.at(fragments, callbacks, **more)
        - burst.TRANSITIONS.at(fragments, callbacks),
        "history_events": burst.HISTORY_EVENTS.at(fragments, callbacks, **more)
        - burst.HISTORY_EVENTS.at(fragments, callbacks),
    }


def test_a_quiet_mode_extension_adds_what_the_model_says(bursts):
    quiet, extended = bursts["quiet"], bursts["extended"]
    assert quiet.parts == extended.parts == 1

    added, expected = extended.added_to(quiet), _model_added(2, extended.callbacks, extensions=1)
    # Acquire Processing Lock reads the window again on each attempt: whether the burst
    # without an extension needed a second attempt too depends on moto's wait timing, so
    # that one read may or may not show as added.
    recheck = ("AcquireProcessingLock", "dynamodb:GetItem BatchWindows")
    assert added["calls"].pop(recheck, (0, 0)) in ((0, 0), expected["calls"].pop(recheck, (0, 0)))

    assert added == expected, extended.events_beside(quiet)
    assert added["transitions"] == 3  # Burst Over?, Wait For The Burst To End, Acquire Processing Lock


def test_a_tool_round_adds_what_the_model_says(bursts):
    plain, rounds = bursts["tool plain"], bursts["tool round"]
    assert plain.parts == rounds.parts == 1

    added = rounds.added_to(plain)
    # Call Tools' first round for the tenant reads what its instance then keeps (cached reads).
    cached = {(r.function, r.call) for r in burst.CACHED_READS if r.function == "CallTools"}
    made_once = {key for key in added["calls"] if key in cached}
    added["calls"] = {k: v for k, v in added["calls"].items() if k not in cached}

    assert added == _model_added(1, rounds.callbacks, rounds=1), rounds.events_beside(plain)
    assert added["transitions"] == 2  # Call Tools, Generate Reply again
    assert made_once == cached
