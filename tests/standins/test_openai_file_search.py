"""The `file_search` tool in the OpenAI stand-in's responses, through the real `openai` SDK:
a search of the named vector stores before the message (`file_search_call`, its results
only when included), the best passage on the reply's `Knowledge said:` line with a
citation, a search that finds nothing still made, no search where the request forbids one,
and the refusals (bad `max_num_results`, a store the key's project does not hold) with
nothing done."""

from __future__ import annotations

import openai
import pytest
import requests
from openai.types.responses import ResponseFileSearchToolCall

from functions.answer.openai_models import DEFAULT_MODEL as MODEL
from tests.standins.conftest import OPENAI_KEY

HOURS = (
    b"Opening hours\n\n"
    b"Sunday opening hours are 10:00 to 16:00.\n\n"
    b"On weekdays the shop opens at 08:00 and closes at 18:00.\n"
    b"Holidays follow the Sunday hours."
)
SHIPPING = b"Shipping\n\nOrders ship from our Lyon warehouse.\nDelivery takes two days."
QUESTION = "When do you open on Sunday?"


def knowledge(ai: openai.OpenAI, *files: tuple[str, bytes]) -> str:
    """A vector store holding `files`, indexed; its id."""
    ids = [ai.files.create(file=file, purpose="assistants").id for file in files]  # type: ignore[arg-type]
    store = ai.vector_stores.create(name="kb", file_ids=ids)
    assert ai.vector_stores.retrieve(store.id).status == "completed"
    return store.id


def search(store_id: str, **options) -> dict:
    return {"type": "file_search", "vector_store_ids": [store_id], **options}


def test_a_matching_passage_is_searched_cited_and_said(ai, openai_standin):
    standin, _ = openai_standin
    store_id = knowledge(ai, ("hours.md", HOURS), ("shipping.txt", SHIPPING))

    response = ai.responses.create(model=MODEL, input=QUESTION, tools=[search(store_id)])

    assert response.status == "completed"
    searched, message = response.output
    assert isinstance(searched, ResponseFileSearchToolCall)
    assert searched.id.startswith("fs_") and searched.status == "completed"
    assert searched.queries == [QUESTION] and searched.results is None  # not included
    assert (
        response.output_text
        == f"You said: {QUESTION}\nKnowledge said: Sunday opening hours are 10:00 to 16:00."
    )
    (citation,) = message.content[0].annotations  # type: ignore[union-attr]
    hours_file = ai.vector_stores.files.list(vector_store_id=store_id, order="asc").data[0]
    assert (citation.type, citation.file_id, citation.filename) == (
        "file_citation",
        hours_file.id,
        "hours.md",
    )
    assert citation.index == len(response.output_text)
    (call,) = standin.calls
    assert (call["file_searches"], call["vector_store_ids"], call["tools"]) == (
        1,
        [store_id],
        ["file_search"],
    )


def test_included_results_are_the_best_passages_first_within_max_num_results(ai, openai_standin):
    store_id = knowledge(ai, ("hours.md", HOURS), ("shipping.txt", SHIPPING))
    asked = "Sunday hours and delivery days?"

    response = ai.responses.create(
        model=MODEL,
        input=asked,
        tools=[search(store_id, max_num_results=2)],
        include=["file_search_call.results"],
    )

    searched = response.output[0]
    assert isinstance(searched, ResponseFileSearchToolCall) and searched.results is not None
    texts = [(r.filename, r.text, r.score) for r in searched.results]
    assert texts == [
        ("hours.md", "Sunday opening hours are 10:00 to 16:00.", 0.5),  # sunday, hours
        (
            "hours.md",
            "On weekdays the shop opens at 08:00 and closes at 18:00.\nHolidays follow the Sunday hours.",
            0.5,
        ),
    ]
    assert all(r.file_id and r.file_id.startswith("file-") and r.attributes == {} for r in searched.results)
    passage_words = sum(len(text.split()) for _, text, _ in texts)
    assert response.usage is not None and response.usage.input_tokens == len(asked.split()) + passage_words


def test_a_search_that_finds_nothing_is_still_made_and_the_reply_has_no_knowledge(ai, openai_standin):
    standin, _ = openai_standin
    store_id = knowledge(ai, ("hours.md", HOURS))

    response = ai.responses.create(
        model=MODEL,
        input="Do you sell bicycles?",
        tools=[search(store_id)],
        include=["file_search_call.results"],
    )

    searched, message = response.output
    assert isinstance(searched, ResponseFileSearchToolCall) and searched.results == []
    assert response.output_text == "You said: Do you sell bicycles?"
    assert message.content[0].annotations == []  # type: ignore[union-attr]
    assert standin.calls[0]["file_searches"] == 1


@pytest.mark.parametrize(
    "forbidding",
    [
        {"max_tool_calls": 0},
        {"tool_choice": "none"},
        {"tool_choice": {"type": "allowed_tools", "mode": "auto", "tools": []}},
    ],
)
def test_no_search_where_the_request_forbids_one(ai, openai_standin, forbidding):
    standin, _ = openai_standin
    store_id = knowledge(ai, ("hours.md", HOURS))

    response = ai.responses.create(model=MODEL, input=QUESTION, tools=[search(store_id)], **forbidding)

    assert [item.type for item in response.output] == ["message"]
    assert response.output_text == f"You said: {QUESTION}"
    assert standin.calls[0]["file_searches"] == 0


def test_a_files_still_indexing_is_not_searched(ai, openai_standin):
    _, url = openai_standin
    requests.post(f"{url}/_control/indexing", json={"seconds": 30}, timeout=3)
    uploaded = ai.files.create(file=("hours.md", HOURS), purpose="assistants")
    store = ai.vector_stores.create(name="kb", file_ids=[uploaded.id])

    response = ai.responses.create(model=MODEL, input=QUESTION, tools=[search(store.id)])

    assert response.output_text == f"You said: {QUESTION}"


def test_a_function_call_output_is_what_is_searched(ai, openai_standin):
    standin, url = openai_standin
    store_id = knowledge(ai, ("shipping.txt", SHIPPING))
    lookup = {"type": "function", "name": "lookup_order", "parameters": {"type": "object", "properties": {}}}
    requests.post(f"{url}/_control/tool_calls", json={"name": "lookup_order"}, timeout=3)
    conversation = ai.conversations.create()
    asked = ai.responses.create(
        model=MODEL,
        conversation=conversation.id,
        input="Where is my order?",
        tools=[lookup, search(store_id)],
    )
    assert [item.type for item in asked.output] == ["function_call"]  # the queued call, no search
    call_id = asked.output[0].call_id  # type: ignore[union-attr]

    answered = ai.responses.create(
        model=MODEL,
        conversation=conversation.id,
        input=[
            {"type": "function_call_output", "call_id": call_id, "output": "Shipping from the Lyon warehouse"}
        ],
        tools=[lookup, search(store_id)],
    )

    assert answered.output[0].queries == ["Shipping from the Lyon warehouse"]  # type: ignore[union-attr]
    assert answered.output_text == (
        "Tool said: Shipping from the Lyon warehouse\n"
        "Knowledge said: Orders ship from our Lyon warehouse. Delivery takes two days."
    )
    kinds = [item.type for item in ai.conversations.items.list(conversation.id, order="asc")]
    assert kinds == ["message", "function_call", "function_call_output", "file_search_call", "message"]
    assert [c["file_searches"] for c in standin.calls] == [0, 1]
    later = ai.responses.create(
        model=MODEL, conversation=conversation.id, input="thanks"
    )  # the history reads
    assert later.output_text == "You said: thanks"


@pytest.mark.parametrize(
    ("given", "code", "bound"),
    [(0, "integer_below_min_value", ">= 1"), (51, "integer_above_max_value", "<= 50")],
)
def test_max_num_results_outside_1_to_50_is_refused_and_nothing_done(ai, openai_standin, given, code, bound):
    standin, _ = openai_standin
    store_id = knowledge(ai, ("hours.md", HOURS))
    conversation = ai.conversations.create()

    with pytest.raises(openai.BadRequestError) as refused:
        ai.responses.create(
            model=MODEL,
            conversation=conversation.id,
            input=QUESTION,
            tools=[
                {"type": "function", "name": "f", "parameters": {}},
                search(store_id, max_num_results=given),
            ],
        )

    assert refused.value.body["code"] == code and refused.value.body["param"] == "tools[1].max_num_results"
    assert bound in refused.value.body["message"]
    assert standin.conversation_items(conversation.id) == [] and standin.responses == {}


def test_a_store_the_keys_project_does_not_hold_is_not_found_and_nothing_done(ai, openai_standin):
    standin, url = openai_standin
    theirs_key = "another-tenant-openai-key"
    standin.add_key(theirs_key)
    theirs = openai.OpenAI(api_key=theirs_key, base_url=url + "/v1", max_retries=0, timeout=3)
    their_store = knowledge(theirs, ("hours.md", HOURS))
    mine = knowledge(ai, ("shipping.txt", SHIPPING))
    conversation = ai.conversations.create()

    for named in (their_store, "vs_never_created"):
        with pytest.raises(openai.NotFoundError) as refused:
            ai.responses.create(
                model=MODEL, conversation=conversation.id, input=QUESTION, tools=[search(mine), search(named)]
            )
        assert refused.value.body == {
            "message": f"No vector store found with id '{named}'.",
            "type": "invalid_request_error",
            "param": None,
            "code": None,
        }

    assert standin.conversation_items(conversation.id) == [] and standin.responses == {}
    assert [(c["status"], c["file_searches"]) for c in standin.calls] == [(404, 0), (404, 0)]
    found = theirs.responses.create(model=MODEL, input=QUESTION, tools=[search(their_store)])
    assert "Knowledge said: Sunday opening hours" in found.output_text  # their key reaches it
    assert OPENAI_KEY not in requests.get(f"{url}/_control/calls", timeout=3).text


def test_a_file_search_without_vector_store_ids_is_refused(ai, openai_standin):
    standin, _ = openai_standin
    with pytest.raises(openai.BadRequestError) as refused:
        ai.responses.create(model=MODEL, input=QUESTION, tools=[{"type": "file_search"}])  # type: ignore[list-item]

    assert refused.value.body == {
        "message": "Missing required parameter: 'tools[0].vector_store_ids'.",
        "type": "invalid_request_error",
        "param": "tools[0].vector_store_ids",
        "code": "missing_required_parameter",
    }
    assert standin.responses == {}
