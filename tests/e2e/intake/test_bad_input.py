"""Bad input over HTTP: each gets a defined answer and loses nothing accepted before it."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from unittest.mock import patch

import pytest
import requests

from functions.batching import batch_windows, stepfunctions
from infra.local.webhooks import inbound_form, new_message_sid, post_webhook, sign
from tests.support.local_stack import OUR_WHATSAPP

pytestmark = pytest.mark.e2e

EMPTY_TWIML = '<?xml version="1.0" encoding="UTF-8"?><Response/>'


def _form(harness, user: str, body: str = "hi", **extra: str) -> dict[str, str]:
    return inbound_form(body, user, OUR_WHATSAPP, harness.stack.config.twilio_account_sid, **extra)


def _post(harness, form: dict[str, str]) -> requests.Response:
    return post_webhook(harness.stack.whatsapp_url, form, harness.stack.config.twilio_auth_token)


def test_an_account_that_is_not_ours_is_refused(harness):
    user = harness.new_user()
    form = _form(harness, user, AccountSid="AC" + "9" * 32)  # signed with our token, names another account

    assert _post(harness, form).status_code == 403
    assert harness.conversation_of(user) is None


@pytest.mark.parametrize(
    "change",
    [
        {"MessageSid": ""},
        {"MessageSid": "SMnot-a-sid"},
        {"From": ""},
        {"Body": "", "NumMedia": "0"},
        {"NumMedia": "lots"},
        {"NumMedia": "²"},  # "²".isdigit() is true, and int("²") raises
        {"NumMedia": "١"},  # an Arabic-Indic one: int() reads it as 1
    ],
)
def test_a_malformed_form_is_acknowledged_and_nothing_is_staged(harness, change):
    user = harness.new_user()
    form = {**_form(harness, user), **change}

    response = _post(harness, form)

    assert response.status_code == 200 and response.text == EMPTY_TWIML
    assert harness.conversation_of(user) is None


def test_media_from_anywhere_but_twilio_are_staged_never_fetched_and_mentioned(harness):
    user = harness.new_user()
    form = _form(
        harness,
        user,
        body="",
        NumMedia="2",
        MediaUrl0="https://media.example/photo.jpg",
        MediaContentType0="image/jpeg",
        MediaUrl1="https://media.example/file",
    )

    assert _post(harness, form).status_code == 200

    conversation_id = harness.conversation_of(user).conversation_id
    (staged,) = harness.staged(conversation_id)
    assert [m["M"]["url"]["S"] for m in staged["media"]["L"]] == [
        "https://media.example/photo.jpg",
        "https://media.example/file",
    ]
    harness.wait_until_quiet(conversation_id, runs=1)
    assert harness.ai_inputs(conversation_id) == [
        "[photo 1 (image/jpeg), which could not be loaded]\n[file 2 (type unknown)]"
    ]
    assert harness.stack.twilio.media_requests == []


def test_long_bodies_emoji_and_non_latin_scripts_arrive_intact(harness, configure):
    configure(BATCH_WINDOW_SECONDS="2")  # four sends fit in it even on a slow machine
    user = harness.new_user()
    bodies = ["x" * 10_000, "Привет 👋🏽", "مرحبا بك", "你好，世界"]
    for body in bodies:
        assert _post(harness, _form(harness, user, body=body)).status_code == 200

    conversation_id = harness.conversation_of(user).conversation_id
    harness.wait_until_quiet(conversation_id, runs=1)
    assert harness.ai_inputs(conversation_id) == ["\n".join(bodies)]


def test_an_unknown_sender_with_auto_create_off_gets_the_configured_answer(harness, configure):
    configure(AUTO_CREATE_CONVERSATIONS="false", UNKNOWN_SENDER_REPLY="This number is not in service.")
    user = harness.new_user()

    response = _post(harness, _form(harness, user))

    assert response.status_code == 200
    assert "<Message>This number is not in service.</Message>" in response.text
    assert harness.conversation_of(user) is None


def test_an_opt_out_keyword_never_gets_a_configured_answer(harness, configure):
    configure(AUTO_CREATE_CONVERSATIONS="false", UNKNOWN_SENDER_REPLY="This number is not in service.")
    user = harness.new_user()

    for keyword in ("STOP", "cancel", "START"):
        response = _post(harness, _form(harness, user, body=keyword))
        assert response.status_code == 200 and response.text == EMPTY_TWIML

    answered = _post(harness, _form(harness, user, body="hello?"))  # the first other message is
    assert "<Message>This number is not in service.</Message>" in answered.text
    assert harness.conversation_of(user) is None


def test_configured_answers_go_to_a_sender_at_most_once_an_hour(harness, configure):
    configure(AUTO_CREATE_CONVERSATIONS="false", UNKNOWN_SENDER_REPLY="This number is not in service.")
    user, other = harness.new_user(), harness.new_user()

    answers = [_post(harness, _form(harness, user, body=f"try {n}")).text for n in range(3)]

    assert "<Message>" in answers[0] and answers[1:] == [EMPTY_TWIML, EMPTY_TWIML]
    assert "<Message>" in _post(harness, _form(harness, other)).text  # another sender's own hour
    later = time.time() + 3601
    with patch("functions.clock.now", lambda: datetime.fromtimestamp(later, UTC)):
        assert "<Message>" in _post(harness, _form(harness, user, body="an hour on")).text


def test_an_inactive_project_or_a_channel_not_allowed_gets_the_configured_answer(harness, configure):
    configure(INACTIVE_PROJECT_REPLY="We are closed.", CHANNEL_NOT_ALLOWED_REPLY="Please write on SMS.")
    inactive, whatsapp_barred = harness.new_user(), harness.new_user()
    for user, fields in (
        (inactive, {"project_status": "inactive"}),
        (whatsapp_barred, {"allowed_channels": ["sms"]}),
    ):
        harness.stage_directly(user, [])
        harness.set_conversation(harness.conversation_of(user).conversation_id, **fields)

    closed = _post(harness, _form(harness, inactive))
    barred = _post(harness, _form(harness, whatsapp_barred))

    assert closed.status_code == 200 and "<Message>We are closed.</Message>" in closed.text
    assert barred.status_code == 200 and "<Message>Please write on SMS.</Message>" in barred.text
    for user in (inactive, whatsapp_barred):
        assert harness.staged(harness.conversation_of(user).conversation_id) == []


def test_a_replayed_message_sid_changes_nothing_after_it_was_answered(harness):
    user = harness.new_user()
    sid = new_message_sid()
    assert _post(harness, _form(harness, user, body="once", message_sid=sid)).status_code == 200
    conversation_id = harness.conversation_of(user).conversation_id
    harness.wait_until_quiet(conversation_id, runs=1)

    assert _post(harness, _form(harness, user, body="once", message_sid=sid)).status_code == 200

    assert len(harness.staged(conversation_id)) == 1
    assert len(harness.runs(conversation_id)) == 1  # no new window for an answered message
    assert harness.ai_inputs(conversation_id) == ["once"]
    assert harness.replies_to(user) == ["You said: once"]


def test_a_body_that_is_not_a_form_is_refused_as_unsupported(harness):
    user = harness.new_user()
    form = _form(harness, user)
    response = requests.post(
        harness.stack.whatsapp_url,
        json=form,
        headers={
            "X-Twilio-Signature": sign(
                harness.stack.whatsapp_url, form, harness.stack.config.twilio_auth_token
            )
        },
        timeout=10,
    )

    assert response.status_code == 415
    assert harness.conversation_of(user) is None


def test_a_huge_form_is_refused_before_it_is_read_and_not_staged(harness):
    user = harness.new_user()
    form = _form(harness, user, body="y" * 1_000_000, Padding="z" * 1_000_000)

    response = _post(harness, form)

    assert response.status_code == 413
    assert harness.conversation_of(user) is None


def test_a_body_that_is_not_utf8_is_refused_not_a_500(harness):
    """An escaped non-UTF-8 byte is a 400. A raw one never reaches the function as such:
    API Gateway hands a form over as UTF-8 text (U+FFFD in its place), so this unsigned
    request is refused for its signature."""
    user = harness.new_user()
    raw = "&".join(f"{k}={v}" for k, v in _form(harness, user).items() if k != "Body").encode()
    for body, status in ((raw + b"&Body=caf\xe9", 403), (raw + b"&Body=%FF%FE", 400)):
        response = requests.post(
            harness.stack.whatsapp_url,
            data=body,
            headers={"Content-Type": "application/x-www-form-urlencoded", "X-Twilio-Signature": "x"},
            timeout=10,
        )
        assert response.status_code == status
    assert harness.conversation_of(user) is None


def test_a_form_with_too_many_fields_is_refused(harness):
    user = harness.new_user()
    form = {**_form(harness, user), **{f"Field{i}": "x" for i in range(500)}}

    assert _post(harness, form).status_code == 400
    assert harness.conversation_of(user) is None


def test_a_failed_start_execution_answers_5xx_and_twilios_retry_is_answered_once(harness, monkeypatch):
    user = harness.new_user()
    form = _form(harness, user, body="retry me")
    real = stepfunctions.client()

    class Unavailable:
        def start_execution(self, **kwargs):
            raise ConnectionError("Step Functions unreachable")

    monkeypatch.setattr(stepfunctions, "client", lambda: Unavailable())
    first = _post(harness, form)
    conversation_id = harness.conversation_of(user).conversation_id

    assert first.status_code == 500
    assert harness.window_of(conversation_id) is None  # not left open without a run
    monkeypatch.setattr(stepfunctions, "client", lambda: real)

    retry = _post(harness, form)  # Twilio's retry: the same MessageSid

    assert retry.status_code == 200
    assert len(harness.staged(conversation_id)) == 1
    harness.wait_until_quiet(conversation_id, runs=1)
    assert harness.replies_to(user) == ["You said: retry me"]


def test_a_webhook_that_died_after_opening_the_window_is_healed_by_twilios_retry(harness, monkeypatch):
    user = harness.new_user()
    form = _form(harness, user, body="half done")
    real_count_message = batch_windows.count_message

    def open_then_die(*args, **kwargs):
        real_count_message(*args, **kwargs)
        raise ConnectionError("the response was lost")

    monkeypatch.setattr(batch_windows, "count_message", open_then_die)
    assert _post(harness, form).status_code == 500
    conversation_id = harness.conversation_of(user).conversation_id
    assert harness.window_of(conversation_id) is not None and harness.runs(conversation_id) == []
    monkeypatch.undo()

    assert _post(harness, form).status_code == 200  # Twilio's retry starts the window's run

    harness.wait_until_quiet(conversation_id, runs=1)
    assert harness.replies_to(user) == ["You said: half done"]
