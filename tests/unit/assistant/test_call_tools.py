"""Call Tools' once-only rules (functions/states/call_tools.py), on an in-memory
ToolCalls table and a stand-in endpoint: a call found finished is not made; one an earlier
attempt was making when it ended is in doubt, made again only when read-only; a call that
could not be made is tried again by the state's Retry, at most three times."""

from __future__ import annotations

from typing import Any

import pytest

from functions.assistant.assistant_profile import AssistantProfile
from functions.assistant.rules import tools as tool_rules
from functions.assistant.tool_endpoints import EndpointAnswer
from functions.contract import BatchSummary, CallToolsInput
from functions.errors import ToolCallRetryableError
from functions.intake.inbound import Channel
from functions.states import call_tools as module
from functions.storage.models import AIRequest, AskedCall, Confirmation, Conversation, ToolCall, Turn

TENANT = "AC" + "1" * 32
SCHEMA = {"type": "object", "properties": {}, "required": [], "additionalProperties": False}


class Ledger:
    """The ToolCalls table, in memory, with the real module's claim semantics."""

    def __init__(self) -> None:
        self.items: dict[str, ToolCall] = {}
        self.proposals: dict[str, Confirmation] = {}

    def propose(self, confirmation: Confirmation) -> None:
        self.proposals[confirmation.call_key] = confirmation

    def confirmation(self, conversation_id: str, key: str) -> Confirmation | None:
        return self.proposals.get(key)

    def use_confirmation(self, conversation_id: str, key: str, batch_key: str) -> bool:
        found = self.proposals[key]
        if found.used_by not in (None, batch_key):
            return False
        self.proposals[key] = found.model_copy(update={"used_by": batch_key})
        return True

    def claim(
        self, conversation_id: str, key: str, name: str, side: bool, window: str, now: str, now_s: int
    ) -> ToolCall:
        found = self.items.get(key) or ToolCall(
            conversation_id=conversation_id, call_key=key, name=name, side_effects=side, claimed_at=now
        )
        self.items[key] = found.model_copy(update={"attempts": found.attempts + 1})
        return self.items[key]

    def mark_making(self, conversation_id: str, key: str) -> None:
        self.items[key] = self.items[key].model_copy(update={"status": "claimed"})

    def record(
        self, conversation_id: str, key: str, status: str, output: str | None, now: str | None
    ) -> None:
        self.items[key] = self.items[key].model_copy(update={"status": status, "output": output})


@pytest.fixture
def world(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    ledger, made = Ledger(), []
    answers: list[EndpointAnswer] = []
    profile = AssistantProfile.model_validate(
        {
            "tools": [
                {"name": "lookup", "description": "d", "parameters": SCHEMA, "url": "https://shop.example/l"},
                {
                    "name": "cancel",
                    "description": "d",
                    "parameters": SCHEMA,
                    "url": "https://shop.example/c",
                    "side_effects": True,
                },
                {
                    "name": "refund",
                    "description": "d",
                    "parameters": SCHEMA,
                    "url": "https://shop.example/r",
                    "side_effects": True,
                    "confirm": True,
                },
            ]
        }
    )
    calls: list[AskedCall] = []
    request = AIRequest(message_sids=["SM1"], window_id="w1", openai_conversation_id="conv", requested_at="t")
    conversation = Conversation(
        conversation_id="c1", channel=Channel.WHATSAPP, user_address="u", our_address="o", created_at="t",
        tenant_account_sid=TENANT,
    )  # fmt: skip

    def endpoint(url: str, body: bytes, **_: Any) -> EndpointAnswer:
        made.append(url)
        return answers.pop(0) if answers else EndpointAnswer("answered", '{"ok": true}', 200)

    monkeypatch.setattr(module, "tool_calls", ledger)
    monkeypatch.setattr(
        module.staged_messages,
        "ai_requests",
        lambda cid, sids: {"SM1": request.model_copy(update={"calls": calls})},
    )
    monkeypatch.setattr(module.conversations, "require", lambda cid: conversation)
    monkeypatch.setattr(module, "_pinned_profile", lambda task: profile)
    monkeypatch.setattr(module.secrets, "tool_signing_key", lambda conversation: "key")
    monkeypatch.setattr(module.tool_endpoints, "call", endpoint)
    said = {"text": "refund my order please", "last_window": "w0"}
    user_turn = lambda cid, tid: Turn(conversation_id=cid, turn_id=tid, role="user", body=said["text"])  # noqa: E731
    last = lambda cid: Turn(conversation_id=cid, turn_id="t", role="assistant", window_id=said["last_window"])  # noqa: E731
    monkeypatch.setattr(module.turns, "require", user_turn)
    monkeypatch.setattr(module.turns, "last_reply", last)
    return {"ledger": ledger, "made": made, "answers": answers, "calls": calls, "said": said}


def _task(window: str = "w1", first: str = "SM1") -> CallToolsInput:
    return CallToolsInput(
        conversation_id="c1",
        window_id=window,
        execution_name=f"c1-{window}",
        batch=BatchSummary(message_count=1, message_sids=[first]),
    )


def _key(name: str) -> str:
    return tool_rules.call_key(TENANT, "c1", "SM1", name, {})


def _second_batch(world: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    """The calls kept on the next batch's request (its first message SM2)."""
    request = AIRequest(message_sids=["SM2"], window_id="w2", openai_conversation_id="c", requested_at="t")
    kept = {"SM2": request.model_copy(update={"calls": world["calls"]})}
    monkeypatch.setattr(module.staged_messages, "ai_requests", lambda cid, sids: kept)


def _ask(world: dict[str, Any], *names: str) -> None:
    world["calls"][:] = [AskedCall(call_id=f"call_{n}", name=n, arguments="{}") for n in names]


def test_a_call_made_and_recorded_is_not_made_again_by_a_retry(world):
    _ask(world, "lookup")
    first = module.call_tools(_task())
    again = module.call_tools(_task())

    assert world["made"] == ["https://shop.example/l"]
    assert (first.made, again.made) == (1, 0)
    assert world["ledger"].items[_key("lookup")].output == '{"ok": true}'


def test_a_side_effect_call_an_earlier_attempt_was_making_is_in_doubt_and_never_made_again(world):
    _ask(world, "cancel")
    world["ledger"].claim("c1", _key("cancel"), "cancel", True, "w1", "t", 0)  # the attempt that died

    summary = module.call_tools(_task())

    assert world["made"] == []
    assert summary.in_doubt == 1
    assert world["ledger"].items[_key("cancel")].output == tool_rules.IN_DOUBT


def test_a_read_only_call_an_earlier_attempt_was_making_is_made_again(world):
    _ask(world, "lookup")
    world["ledger"].claim("c1", _key("lookup"), "lookup", False, "w1", "t", 0)

    assert module.call_tools(_task()).made == 1
    assert world["made"] == ["https://shop.example/l"]


def test_a_side_effect_call_sent_without_an_answer_is_in_doubt_at_once(world):
    _ask(world, "cancel")
    world["answers"].append(EndpointAnswer("in_doubt", '{"error": "no answer"}'))

    summary = module.call_tools(_task())
    module.call_tools(_task())  # a retry of the state

    assert world["made"] == ["https://shop.example/c"] and summary.in_doubt == 1


def test_a_call_that_could_not_be_made_is_retried_then_unavailable(world):
    _ask(world, "lookup")
    world["answers"].extend([EndpointAnswer("not_made", "{}")] * 3)

    for _ in range(2):
        with pytest.raises(ToolCallRetryableError):
            module.call_tools(_task())
    summary = module.call_tools(_task())

    assert len(world["made"]) == 3 and summary.failed == 1
    assert world["ledger"].items[_key("lookup")].output == tool_rules.UNAVAILABLE


def test_a_tool_the_profile_does_not_have_is_never_called(world):
    _ask(world, "wire_money")

    summary = module.call_tools(_task())

    assert world["made"] == [] and summary.failed == 1
    assert "no tool named" in (world["ledger"].items[_key("wire_money")].output or "")


def test_a_tool_that_needs_a_yes_is_proposed_first_and_made_once_after_the_persons_yes(world, monkeypatch):
    _ask(world, "refund")
    proposed = module.call_tools(_task())  # batch 1: "refund my order please"

    assert world["made"] == [] and proposed.failed == 0
    assert world["ledger"].items[_key("refund")].output == tool_rules.NEEDS_CONFIRMATION
    # Batch 2 (its first message SM2), right after batch 1's reply: "yes". The model asks again.
    world["said"].update(text="yes, go ahead", last_window="w1")
    _second_batch(world, monkeypatch)
    confirmed = module.call_tools(_task("w2", "SM2"))
    module.call_tools(_task("w2", "SM2"))  # a retry of that state

    assert world["made"] == ["https://shop.example/r"] and confirmed.made == 1


@pytest.mark.parametrize(("answer", "last_window"), [("no, wait", "w1"), ("yes", "w-other")])
def test_no_yes_or_a_yes_not_to_the_proposal_makes_no_call(world, monkeypatch, answer, last_window):
    _ask(world, "refund")
    module.call_tools(_task())
    world["said"].update(text=answer, last_window=last_window)
    _second_batch(world, monkeypatch)

    module.call_tools(_task("w2", "SM2"))

    assert world["made"] == []
    key = tool_rules.call_key(TENANT, "c1", "SM2", "refund", {})
    assert world["ledger"].items[key].output in (tool_rules.NOT_CONFIRMED, tool_rules.NEEDS_CONFIRMATION)
