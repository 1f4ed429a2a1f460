"""The console and the replay on turns whose texts expired (functions/personal_data/retention_store.py cuts
them to their figures: no body, no media, no transcripts): the conversation's page is drawn
with their times and counts, and the replay takes their fragments' arrival times."""

from __future__ import annotations

from html import unescape
from typing import Any

from functions.intake.inbound import MessageContent
from functions.personal_data.forgetting_store import TURN_FIGURES
from functions.storage.models import Turn
from infra.console import pages
from infra.console.timeline import window_of_run
from infra.console.views import conversation_page
from infra.replay.sources import turn_fragments
from tests.unit.operating.test_console_pages import NOW_MS, _burst_run, _burst_turns, _conversation, _Stack


def cut(turn: Turn) -> Turn:
    """The turn as the retention leaves it."""
    figures = {k: v for k, v in turn.model_dump().items() if k in TURN_FIGURES}
    return Turn.model_validate({**figures, "texts_expired_at": "2026-12-05T00:00:00+00:00"})


def expired_burst() -> list[Turn]:
    photo = {"url": "u", "content_type": "image/jpeg"}
    sent = [MessageContent(body="Where is my parcel?"), MessageContent(body="late", media=(photo,))]
    return [cut(t) for t in _burst_turns(0, sent, "It leaves today.", message_sids=["SMa"])]


def test_the_console_draws_a_conversation_whose_texts_expired():
    turns = expired_burst()
    assert all(t.body == "" and not t.media for t in turns)
    runs = [_burst_run(0)]
    reader: Any = _Stack([_conversation("c1")], turns, runs)

    page = conversation_page(reader, "c1", window_of_run(runs[0]), NOW_MS, local=True)

    assert page is not None
    for show in (False, True):
        drawn = unescape(pages.conversation_page(page, show, "/conversations/c1"))
        assert "Transcript" in drawn and "<svg" in drawn
        assert "parcel" not in drawn and "leaves today" not in drawn


def test_the_replay_takes_the_arrival_times_of_a_turn_whose_texts_expired():
    user = expired_burst()[0].model_dump()
    assert [f.at_ms - turn_fragments(user)[0].at_ms for f in turn_fragments(user)] == [0, 300]
