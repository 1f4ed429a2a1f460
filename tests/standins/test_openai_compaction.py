"""Server-side compaction in the OpenAI stand-in, through the real SDK's
`responses.create(context_management=...)`, as OpenAI documents it
(https://developers.openai.com/api/docs/guides/context-management): past the threshold, a
`compaction` item precedes the reply, and later requests render from it on."""

from __future__ import annotations

from functions.answer.openai_models import DEFAULT_MODEL as MODEL

COMPACTION = [{"type": "compaction", "compact_threshold": 100}]


def _turn(n: int) -> str:
    return f"turn {n}: " + " ".join(f"word{n}-{i}" for i in range(30))


def test_past_the_threshold_a_compaction_item_precedes_the_reply_and_bounds_later_input(ai, openai_standin):
    standin, _ = openai_standin
    conversation = ai.conversations.create()

    responses = [
        ai.responses.create(
            model=MODEL, conversation=conversation.id, input=_turn(n), context_management=COMPACTION
        )
        for n in range(8)
    ]

    kinds = [[item.type for item in r.output] for r in responses]
    assert kinds[0] == ["message"]  # 32 words: under the threshold
    assert ["compaction", "message"] in kinds  # compacted once the rendered input passed it
    inputs = [r.usage.input_tokens for r in responses]
    # Without compaction each turn adds about 66 words; with it no request renders much past
    # the threshold (the compacting request reads what it compacts, at most one turn over).
    assert max(inputs) <= 100 + 70, inputs
    assert inputs[-1] < sum(len(_turn(n).split()) for n in range(8))
    items = standin.conversation_items(conversation.id)
    assert [i["type"] for i in items].count("compaction") >= 1  # kept in the conversation
    assert responses[-1].output_text.endswith(_turn(7))  # the latest turn is answered


def test_without_context_management_nothing_is_compacted(ai, openai_standin):
    standin, _ = openai_standin
    conversation = ai.conversations.create()

    for n in range(5):
        response = ai.responses.create(model=MODEL, conversation=conversation.id, input=_turn(n))

    assert [item.type for item in response.output] == ["message"]
    assert response.usage.input_tokens > 5 * 32
    assert all(i["type"] == "message" for i in standin.conversation_items(conversation.id))
