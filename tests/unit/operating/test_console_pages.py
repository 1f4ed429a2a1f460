"""The console's pieces without a stack (infra/console): it refuses to send anything but a
read; a person's address is masked; message texts appear only when the operator asks; an
answered batch's user turn is split back into its fragments, each with its kind; a run
links to the AWS console only when deployed; the other rules cover every fragment."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from html import unescape
from typing import Any

import pytest
from botocore.config import Config
from botocore.exceptions import EndpointConnectionError

from functions.answer.rules.content import render
from functions.assistant.rules import tools as tool_rules
from functions.batching.rules.burst import BatchingRules
from functions.delivery.rules.replies import split_reply
from functions.handoff.person_reply import person_window_id
from functions.handoff.rules.pause import PERSON
from functions.intake.inbound import Location, MessageContent
from functions.storage.models import Confirmation, Delivery, Turn
from functions.storage.tables import assistant_turn_id, user_turn_id
from infra.console import pages
from infra.console.fragments import Fragment, of_turn
from infra.console.reading import (
    ConversationRow,
    Run,
    ToolCallRow,
    WriteRefused,
    calls_and_proposals,
    read_only_session,
)
from infra.console.timeline import BurstView, other_rules, run_view, window_of_run
from infra.console.views import (
    ConversationLine,
    ConversationPage,
    chosen,
    conversation_page,
    start_lines,
    statuses_of,
)

NOWHERE = "http://127.0.0.1:9"  # nothing listens: a request that is sent fails to connect
USER = "whatsapp:+15551234567"


def _client(service: str) -> Any:
    return read_only_session().client(
        service,
        region_name="us-east-1",
        endpoint_url=NOWHERE,
        aws_access_key_id="x",
        aws_secret_access_key="x",
        config=Config(retries={"max_attempts": 1}, connect_timeout=1),
    )


def test_the_console_refuses_to_send_a_write_and_sends_a_read():
    dynamodb, sfn = _client("dynamodb"), _client("stepfunctions")
    with pytest.raises(WriteRefused):
        dynamodb.put_item(TableName="Turns", Item={"conversation_id": {"S": "c"}})
    with pytest.raises(WriteRefused):
        sfn.start_execution(stateMachineArn="arn:aws:states:us-east-1:1:stateMachine:x")
    with pytest.raises(EndpointConnectionError):  # sent: nothing answers there
        dynamodb.get_item(TableName="Turns", Key={"conversation_id": {"S": "c"}})


def test_a_persons_address_is_masked():
    shown = pages.masked(USER)
    assert shown.startswith("whatsapp:+") and shown.endswith(USER[-4:])
    assert USER.removeprefix("whatsapp:")[:-4].removeprefix("+") not in shown
    assert pages.masked("+15551234567").endswith("4567") and "555123" not in pages.masked("+15551234567")


def _page(preview: str) -> ConversationPage:
    conversation = ConversationRow(
        conversation_id="c1", channel="whatsapp", user_address=USER, our_address="whatsapp:+1", created_at=""
    )
    view = BurstView(conversation, 1_000, 5_000)
    view.fragments = [Fragment(1_500, "SM1", "text", preview, "w", "answered")]
    return ConversationPage(view, [], "")


def test_message_texts_appear_only_when_asked():
    secret = "my card number is 4111"
    assert secret not in pages.conversation_page(_page(secret), False, "/conversations/c1")
    shown = pages.conversation_page(_page(secret), True, "/conversations/c1")
    assert secret in shown and USER not in shown
    urls = re.findall(r'(?:href|action|src)="([^"]*)"', shown)
    assert 'method="post"' in shown and urls and not any("4111" in url or "card" in url for url in urls)


def test_an_answered_turn_is_split_back_into_its_fragments():
    sent = [
        MessageContent(body="Hi, my order has not arrived"),
        MessageContent(
            body="This is the box", message_type="image", media=({"url": "u", "content_type": "image/jpeg"},)
        ),
        MessageContent(message_type="location", location=Location(latitude="1", longitude="2", label="Home")),
    ]
    turn = Turn(
        conversation_id="c1",
        turn_id=user_turn_id("w"),
        role="user",
        window_id="w",
        status="answered",
        body=render(sent).body,
        message_sids=["SM1", "MM2", "SM3"],
        first_received_at="2026-11-26T09:00:00.000000+00:00",
        arrival_offsets_ms=[0, 400, 900],
    )

    fragments = of_turn(turn)

    assert [f.kind for f in fragments] == ["text", "photo", "location"]
    assert [f.message_sid for f in fragments] == turn.message_sids
    assert [f.at_ms - fragments[0].at_ms for f in fragments] == turn.arrival_offsets_ms
    assert fragments[0].preview == sent[0].body and fragments[1].preview == sent[1].body
    assert "Home" in fragments[2].preview


def test_texts_that_cannot_be_told_apart_are_drawn_without_a_kind():
    sent = [MessageContent(body="first line\nsecond line"), MessageContent(body="another")]
    turn = Turn(
        conversation_id="c1",
        turn_id=user_turn_id("w"),
        role="user",
        body=render(sent).body,
        message_sids=["SM1", "SM2"],
        first_received_at="2026-11-26T09:00:00+00:00",
        arrival_offsets_ms=[0, 500],
    )
    assert [(f.kind, f.preview) for f in of_turn(turn)] == [("message", ""), ("message", "")]


def _run() -> Run:
    name = "c1-1795739522728-c2fb5a"
    arn = f"arn:aws:states:eu-west-1:111122223333:execution:BurstReply-BatchWindow:{name}"
    return Run(name, arn, "FAILED", datetime(2026, 11, 26, tzinfo=UTC), error="AIPermanentError")


def test_a_run_links_to_the_aws_console_only_when_deployed():
    deployed = run_view(_run(), [], "eu-west-1")
    assert deployed.console_url == (
        "https://eu-west-1.console.aws.amazon.com/states/home?region=eu-west-1"
        f"#/v2/executions/details/{_run().arn}"
    )
    assert run_view(_run(), [], None).console_url is None


def test_the_other_rules_use_the_runs_own_waits_and_take_every_fragment():
    rules = BatchingRules(window_seconds=4, quiet_seconds=2)
    times = [0, 1_500, 3_000, 9_000]
    rows = other_rules(times, rules)
    assert list(rows) == ["fixed:4", "quiet:2", "adaptive"]
    assert all(sum(b.fragments for b in batches) == len(times) for batches in rows.values())
    assert all(b.closed_ms >= b.opened_ms for batches in rows.values() for b in batches)


def test_the_start_page_filters_by_tenant_and_status():
    def line(tenant: str, opted_out: bool, set_aside: int) -> ConversationLine:
        conversation = ConversationRow(
            conversation_id=f"c-{tenant}-{opted_out}-{set_aside}",
            channel="whatsapp",
            user_address=USER,
            our_address="whatsapp:+1",
            created_at="",
            tenant_account_sid=tenant,
            opted_out=opted_out,
        )
        made = ConversationLine(conversation, 0, set_aside=set_aside)
        made.statuses = statuses_of(made)
        return made

    lines = [line("AC1", False, 0), line("AC1", True, 2), line("AC2", False, 1)]
    assert chosen(lines, tenant="AC1") == lines[:2]
    assert chosen(lines, status="failed") == lines[1:]
    assert chosen(lines, tenant="AC1", status="opted out") == [lines[1]]
    assert chosen(lines) == lines


PAUSED_AT, PAUSED_UNTIL, UNTIL_SHOWN = (
    "2026-11-26T09:00:00+00:00",
    "2026-11-26T11:00:00+00:00",
    "2026-11-26 11:00:00 UTC",
)
NOW_MS = 1_795_687_200_000  # 2026-11-26T10:00:00Z: inside the pause


def _at(minute: int, second: int = 0) -> datetime:
    return datetime(2026, 11, 26, 9, minute, second, tzinfo=UTC)


def _conversation(conversation_id: str, **pause: Any) -> ConversationRow:
    return ConversationRow(
        conversation_id=conversation_id,
        channel="whatsapp",
        user_address=USER,
        our_address="whatsapp:+1",
        created_at=PAUSED_AT,
        **pause,
    )


class _Stack:
    """What the console's views read (infra/console/reading.py StackReader), from memory."""

    region = "eu-west-1"

    def __init__(
        self,
        conversations: list[ConversationRow],
        turns: list[Turn],
        runs: list[Run],
        tool_calls: list[dict] | None = None,  # the ToolCalls table's items
    ) -> None:
        self.conversations, self.turns, self._runs = conversations, turns, runs
        self.tool_call_items = tool_calls or []

    def all_conversations(self) -> list[ConversationRow]:
        return self.conversations

    def open_windows(self) -> dict:
        return {}

    def set_aside_batches(self) -> dict:
        return {}

    def runs(self, prefix: str = "") -> list[Run]:
        return [r for r in self._runs if r.name.startswith(prefix)]

    def conversation(self, conversation_id: str) -> ConversationRow | None:
        return next((c for c in self.conversations if c.conversation_id == conversation_id), None)

    def turns_of(self, conversation_id: str) -> list[Turn]:
        return self.turns

    def staged_of(self, conversation_id: str) -> list:
        return []

    def window_of(self, conversation_id: str) -> None:
        return None

    def described(self, run: Run) -> Run:
        return run

    def tool_calls_of(self, conversation_id: str) -> tuple[list[ToolCallRow], list[Confirmation]]:
        return calls_and_proposals(self.tool_call_items)  # as StackReader reads them


def test_a_paused_conversation_says_until_when_and_counts_as_handed_off():
    paused = _conversation("c-paused", paused_at=PAUSED_AT, paused_until=PAUSED_UNTIL, paused_by="operator")
    held = _conversation("c-held", paused_at=PAUSED_AT, paused_by="helpdesk")  # until resumed
    over = _conversation("c-over", paused_at=PAUSED_AT, paused_until=PAUSED_AT, paused_by="operator")
    answered = _conversation("c-answered")
    reader = _Stack([paused, held, over, answered], [], [])

    lines = start_lines(reader, NOW_MS)  # type: ignore[arg-type]
    page = pages.start_page(lines, [], "", "")

    assert [line.conversation for line in chosen(lines, status="handed off")] == [paused, held]
    rows = {c: next(r for r in page.split("<tr>") if f">{c}<" in r) for c in ("c-paused", "c-held", "c-over")}
    assert f"paused (until {UNTIL_SHOWN})" in rows["c-paused"]
    assert "paused (until resumed)" in rows["c-held"]
    assert "paused" not in rows["c-over"]


def _person_reply(minute: int, body: str, status: str = "delivered") -> Turn:
    window_id = person_window_id(_at(minute), f"helpdesk-event-{minute}")
    sid = f"SMperson{minute:02d}"
    return Turn(
        conversation_id="c1",
        turn_id=assistant_turn_id(window_id),
        role="assistant",
        status="sent",
        window_id=window_id,
        body=body,
        written_by=PERSON,
        message_sids=[sid],
        sent_at=_at(minute, 1).isoformat(),
        deliveries={sid: Delivery(message="0", status=status, rank=3, at=_at(minute, 3).isoformat())},
    )


def _burst_run(minute: int) -> Run:
    opened = int(_at(minute).timestamp() * 1000)
    name = f"c1-{opened}-c2fb5a"
    arn = f"arn:aws:states:eu-west-1:111122223333:execution:BurstReply-BatchWindow:{name}"
    return Run(name, arn, "SUCCEEDED", _at(minute), _at(minute, 5))


def test_a_paused_conversations_page_shows_the_pause_and_the_persons_replies():
    conversation = _conversation(
        "c1", paused_at=PAUSED_AT, paused_until=PAUSED_UNTIL, paused_by="keyword", paused_by_message="SM9"
    )
    first, later = (
        _person_reply(10, "I am Ana from support"),
        _person_reply(25, "Anything else?", "undelivered"),
    )
    runs = [_burst_run(0), _burst_run(20)]  # a burst at 09:00, the next at 09:20
    reader = _Stack([conversation], [first, later], runs)

    page = conversation_page(reader, "c1", window_of_run(runs[0]), NOW_MS, local=True)  # type: ignore[arg-type]
    assert page is not None
    hidden, shown = (
        unescape(pages.conversation_page(page, show, "/conversations/c1")) for show in (False, True)
    )

    top = re.sub(r"<[^>]+>", "", hidden.split("Batch windows")[0])  # the text above the windows
    assert "Handed off to a person since 2026-11-26 09:00:00 UTC, by keyword (message SM9), " in top
    assert f"until {UNTIL_SHOWN}" in top
    timeline = hidden.split("<svg")[1]
    assert "a person's reply at +" in timeline and f"({first.message_sids[0][-6:]})" in timeline
    assert "delivered" in timeline and "undelivered" not in timeline  # the next burst's
    assert later.message_sids[0][-6:] not in timeline
    assert first.body not in hidden and first.body in shown
    assert later.body not in shown.split("<svg")[1]  # the timeline's burst: the first only


def _burst_turns(minute: int, sent: list[MessageContent], reply: str, **assistant: Any) -> list[Turn]:
    """A burst's user turn (its fragments 300 ms apart) and the assistant turn that answered it."""
    window_id = window_of_run(_burst_run(minute))
    user = Turn(
        conversation_id="c1",
        turn_id=user_turn_id(window_id),
        role="user",
        window_id=window_id,
        status="answered",
        body=render(sent).body,
        message_sids=[f"SM{minute:02d}{n}" for n in range(len(sent))],
        first_received_at=_at(minute).isoformat(),
        arrival_offsets_ms=[300 * n for n in range(len(sent))],
    )
    answer = Turn(
        conversation_id="c1",
        turn_id=assistant_turn_id(window_id),
        role="assistant",
        window_id=window_id,
        body=reply,
        sent_at=_at(minute, 4).isoformat(),
        **{"status": "sent", **assistant},
    )
    return [user, answer]


def test_the_transcript_reads_like_the_conversation_and_each_part_shows_its_text():
    """The turns in order, as a chat: the person's fragments, the assistant's reply with
    what the model was given, a person's reply, an opt-out and its confirmation; each linked
    to its burst's timeline. Texts only when asked: else kinds and lengths."""
    photo = {"url": "u", "content_type": "image/jpeg"}
    sent = [MessageContent(body="Where is my parcel?"), MessageContent(body="It is late", media=(photo,))]
    reply = "Your parcel leaves today. " * 62 + "Call us on Monday."
    parts = split_reply(reply)
    delivered = Delivery(message="0", status="delivered", rank=3, at=_at(0, 5).isoformat())
    refused = Delivery(message="1", status="failed", rank=4, error_code=30003, at=_at(0, 5).isoformat())
    answered = _burst_turns(
        0,
        sent,
        reply,
        message_sids=["SMa", "SMb"],
        deliveries={"SMa": delivered, "SMb": refused},
        model="gpt-test",
        prompt_tokens=321,
        completion_tokens=12,
    )
    stop = _burst_turns(20, [MessageContent(body="STOP")], "You are unsubscribed.", status="limited")
    stop[1] = stop[1].model_copy(update={"limited": "opted_out"})
    turns = [*answered, _person_reply(10, "I am Ana from support"), *stop]
    runs = [_burst_run(0), _burst_run(20)]
    reader = _Stack([_conversation("c1")], turns, runs)

    page = conversation_page(reader, "c1", window_of_run(runs[0]), NOW_MS, local=True)  # type: ignore[arg-type]
    assert page is not None
    hidden, shown = (
        unescape(pages.conversation_page(page, show, "/conversations/c1")) for show in (False, True)
    )

    said = re.sub(r"<[^>]+>", "|", shown.split("Transcript")[1].split("<svg")[0])
    order = ["Where is my parcel?", "It is late", "the assistant", reply.strip(), "model gpt-test, 321 input"]
    order += ["a person (helpdesk)", "I am Ana from support", "STOP", "opt-out confirmation", "unsubscribed"]
    assert all(said.index(a) < said.index(b) for a, b in zip(order, order[1:], strict=False))
    timeline = shown.split("<svg")[1].split("</svg>")[0]
    assert "part 2" in timeline and "failed (error 30003)" in timeline
    assert " ".join(parts[1].split())[:40] in timeline.split("failed (error 30003)")[1]
    window_id = window_of_run(runs[0])
    assert f'href="?window={window_id}#burst-{window_id}"' in hidden and f'id="burst-{window_id}"' in hidden
    assert "2 fragments: text, photo" in hidden and f"{len(reply)} characters in 2 parts" in hidden
    for text in ("Where is my parcel?", "It is late", "Your parcel", "Ana", "STOP", "unsubscribed"):
        assert text not in hidden, text


def test_the_transcript_says_which_assistant_profile_answered_and_the_tools_it_called():
    answered = _burst_turns(
        0,
        [MessageContent(body="order #12345, it hasn't arrived")],
        "It ships on Monday.",
        message_sids=["SMa"],
        model="gpt-test",
        profile_key="tenant#AC1",
        profile_version=3,
        tools_called=["lookup_order"],
    )
    plain = _burst_turns(
        20, [MessageContent(body="thanks")], "You're welcome.", message_sids=["SMb"], model="m"
    )
    runs = [_burst_run(0), _burst_run(20)]
    reader = _Stack([_conversation("c1")], [*answered, *plain], runs)

    page = conversation_page(reader, "c1", window_of_run(runs[0]), NOW_MS, local=True)  # type: ignore[arg-type]
    assert page is not None
    hidden = unescape(pages.conversation_page(page, False, "/conversations/c1"))

    assert "assistant profile tenant#AC1 version 3" in hidden and "tools called: lookup_order" in hidden
    assert "no assistant profile: the deployment's instructions" in hidden
    assert "12345" not in hidden  # the tools' names, never what they were asked or answered


def _states(minute: int, *states: tuple[str, float, float]) -> list[dict[str, Any]]:
    """A run's history events: each state entered and exited (seconds after `minute`)."""
    events: list[dict[str, Any]] = []
    for name, entered, exited in states:
        at = _at(minute).timestamp()
        events.append(
            {
                "id": len(events) + 1,
                "type": "TaskStateEntered",
                "timestamp": datetime.fromtimestamp(at + entered, UTC),
                "stateEnteredEventDetails": {"name": name},
            }
        )
        events.append(
            {
                "id": len(events) + 1,
                "type": "TaskStateExited",
                "timestamp": datetime.fromtimestamp(at + exited, UTC),
            }
        )
    return events


def _tool_run(minute: int) -> Run:
    """A burst's run that called tools: Generate Reply → Call Tools → Generate Reply."""
    run = _burst_run(minute)
    run.events = _states(
        minute,
        ("Wait For The Burst To End", 0, 1),
        ("Generate Reply", 1, 1.5),
        ("Call Tools", 1.5, 3),
        ("Generate Reply", 3, 3.5),
        ("Send Reply", 3.5, 4),
    )
    return run


def _tool_call(minute: int, name: str, status: str, output: str, attempts: int = 1, **more: Any) -> dict:
    """A ToolCalls item as the table holds it (functions/assistant/tool_calls.py), its output the
    endpoint's answer or what the model was told."""
    return {
        "conversation_id": "c1",
        "call_key": f"{minute:02d}{name}".ljust(32, "0"),
        "name": name,
        "side_effects": name != "lookup_order",
        "status": status,
        "attempts": attempts,
        "output": output,
        "window_id": window_of_run(_burst_run(minute)),
        "claimed_at": _at(minute, 2).isoformat(),  # in Call Tools
        "finished_at": _at(minute, 3).isoformat(),
        "expires_at": 1_900_000_000,
        **more,
    }


def _timeline_and_tables(page: ConversationPage, show_text: bool) -> tuple[str, str]:
    html = unescape(pages.conversation_page(page, show_text, "/conversations/c1"))
    return html, html.split("<svg")[1]


def test_a_runs_tool_calls_are_drawn_beside_call_tools_with_their_outcomes_never_their_outputs():
    """The calls a run's window made, under its Call Tools state: each tool's name, its
    outcome in words (answered, in doubt, unavailable), its attempts and its time; never
    what it was asked or answered, even with the message texts shown."""
    private = '{"order": "ORDQ77", "address": "4 Privet Drive", "card": "Visa4111"}'
    answered = _burst_turns(
        0,
        [MessageContent(body="where is my order?")],
        "It ships on Monday.",
        message_sids=["SMa"],
        model="gpt-test",
        tools_called=["lookup_order", "cancel_order"],
    )
    calls = [
        _tool_call(0, "lookup_order", "answered", private),
        _tool_call(0, "cancel_order", "in_doubt", tool_rules.IN_DOUBT, attempts=2),
        _tool_call(0, "track_parcel", "unavailable", tool_rules.UNAVAILABLE, attempts=3),
    ]
    later = _tool_call(20, "lookup_order", "answered", private)  # another burst's
    reader = _Stack([_conversation("c1")], answered, [_tool_run(0), _burst_run(20)], [*calls, later])

    page = conversation_page(reader, "c1", window_of_run(_burst_run(0)), NOW_MS, local=True)  # type: ignore[arg-type]
    assert page is not None
    hidden, timeline = _timeline_and_tables(page, False)
    shown, _ = _timeline_and_tables(page, True)

    drawn = re.sub(r"<title>.*?</title>", "", timeline.split("</svg>")[0])
    rows = re.findall(r">([^<]+)</text>", drawn)
    call_tools = rows.index("Call Tools")
    assert rows[call_tools + 1 : call_tools + 8] == [
        "1,500 ms",
        "tool lookup_order",
        "answered · 1 attempt · 1,000 ms",
        "tool cancel_order",
        "outcome unknown — not made again · 2 attempts · 1,000 ms",
        "tool track_parcel",
        "unavailable: no answer · 3 attempts · 1,000 ms",
    ], rows
    table = hidden.split("<h2>Tool calls</h2>")[1].split("</table>")[0]
    assert "lookup_order" in table and "outcome unknown — not made again" in table
    assert table.count("<tr>") == 4  # the heading and this burst's three calls
    for page_html in (hidden, shown):
        for secret in ("ORDQ77", "Privet", "Visa4111", "outcome unknown: the call was sent"):
            assert secret not in page_html, secret


def test_a_call_that_needs_the_persons_yes_is_drawn_as_proposed_then_as_confirmed():
    """A `confirm: true` tool's proposal, awaiting the person's yes, confirmed by the next
    burst, whose call is made then; a call the endpoint refused says so."""
    first = _burst_turns(0, [MessageContent(body="cancel it")], "Shall I cancel it?", message_sids=["SMa"])
    yes = _burst_turns(20, [MessageContent(body="yes")], "Cancelled.", message_sids=["SMb"])
    proposal = {
        "conversation_id": "c1",
        "call_key": "confirm#" + "a" * 32,
        "name": "cancel_order",
        "batch_key": first[0].message_sids[0],
        "window_id": first[0].window_id,
        "asked_at": _at(0, 1).isoformat(),
        "expires_at": NOW_MS // 1000 + 600,
    }
    items = [
        _tool_call(0, "cancel_order", "refused", tool_rules.NEEDS_CONFIRMATION),
        _tool_call(20, "cancel_order", "answered", '{"cancelled": "ORDQ77"}'),
        _tool_call(20, "refund", "refused", '{"error": "no refund for Visa4111"}'),
    ]
    runs = [_tool_run(0), _tool_run(20)]

    def words(window_id: str, confirmation: dict) -> str:
        reader = _Stack([_conversation("c1")], [*first, *yes], runs, [*items, confirmation])
        page = conversation_page(reader, "c1", window_id, NOW_MS, local=True)  # type: ignore[arg-type]
        assert page is not None
        html, timeline = _timeline_and_tables(page, True)
        assert "ORDQ77" not in html and "Visa4111" not in html
        return " | ".join(re.findall(r">([^<]+)</text>", timeline.split("</svg>")[0]))

    awaiting = words(first[0].window_id, proposal)
    assert "tool cancel_order | proposed, awaiting the person's yes · 1 attempt" in awaiting
    used = {**proposal, "used_by": yes[0].message_sids[0]}
    assert "tool cancel_order | proposed, confirmed by the next burst" in words(first[0].window_id, used)
    confirmed = words(yes[0].window_id, used)
    assert "tool cancel_order | answered, after the person's yes · 1 attempt" in confirmed
    assert "tool refund | refused by the endpoint · 1 attempt" in confirmed
    declined = {**proposal, "used_by": yes[0].message_sids[0] + "#declined"}
    assert "proposed, the person did not say yes" in words(first[0].window_id, declined)
