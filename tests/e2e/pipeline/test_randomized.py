"""The proof: seeded random traffic over HTTP, with faults injected everywhere, loses and
duplicates nothing, and sees every delivery failure. Many conversations type bursts of
fragments at random times (some while their previous batch is being answered). Each
webhook is delivered as Twilio delivers it to the URL the deploy guide has you paste
(`#rc=5&rp=all`): retried on a failure as those connection overrides say, and never
otherwise (infra/local/connection_overrides.py). OpenAI fails at random with retryable
errors, late successes (a response that completes after the attempt stopped waiting),
responses that fail after acceptance, and quota errors (the batch is set aside with the
fallback reply: it counts as answered). Twilio refuses (429, 503), accepts and answers
after the client's timeout (late success), or accepts and reports the message failed or
undelivered later, by status callback (63016 among them, which sends the template; 63018,
the account's or sender's rate limit, at create or by status callback, after which the
reconciler sends the part again once, when it is due),
and its Messages list shows a created message only long after (list lag): a message in
doubt is found by its status callback. Staging, window opening, StartExecution and
recording a status callback fail at random, before or after doing their work (the endpoint
answers 5xx, and Twilio retries). Then, once the system is quiet, the invariants are
checked, the OpenAI conversations included (each batch is one user turn and one reply
there, never two), and the run reports duplicate sends (0) and the undelivered replies
recorded (as many as Twilio reported).

The checks rest on the stand-ins' own records, not on what the system wrote down: every
kind of fault is injected at least once (the first calls meet each kind, then chaos
draws), and the stand-ins' records show each kind injected; a reply part sent again counts
once only when the Twilio stand-in itself failed the first one with an injected 63018;
and every status callback the stand-in made was taken (2xx) or retried until it was, so
that a failure reported to an endpoint that never took it fails the test.

Size and seed: CHAOS_CONVERSATIONS (default 6), CHAOS_SEED, and CHAOS_AT_ONCE (how many
conversations type at the same time; default all). `make chaos` runs a larger one.
"""

from __future__ import annotations

import contextlib
import os
import random
import threading
import time
from collections import Counter
from typing import Any

import pytest

from functions.answer import turns
from functions.batching import batch_windows, stepfunctions
from functions.batching.settings import FailureSettings
from functions.entry_points.reconciler import reconcile
from functions.entry_points.status_callback import NOT_DELIVERED
from functions.intake import staged_messages
from infra.local.webhooks import inbound_form
from tests.support.local_stack import OUR_WHATSAPP
from tests.support.twilio_delivery import deliver_as_twilio, given_to_twilio
from tests.support.twilio_replies import callbacks_given_up, replies_delivered, resends

pytestmark = pytest.mark.e2e

CONVERSATIONS = int(os.environ.get("CHAOS_CONVERSATIONS", "6"))
SEED = int(os.environ.get("CHAOS_SEED", "20261125"))
# Conversations typing at the same time (the others wait for a free place): a large run's
# load shape that the emulator on a small machine can absorb within Twilio's 15 s.
AT_ONCE = int(os.environ.get("CHAOS_AT_ONCE", str(CONVERSATIONS)))
AWS_FAULT_RATE = 0.08
API_FAULT_RATE = 0.15
TEMPLATE = "HX" + "5" * 32
MESSAGING_SERVICE = "MG" + "3" * 32
TWILIO_FAULTS = [
    {"status": 429, "code": 20429},
    {"status": 503},
    {"delay": 1.0},  # accepted, answered after the client's 0.5 s timeout
    {"delay": 1.0},  # twice as likely: with the list lagging, only its callback tells
    {"outcome": "undelivered", "error_code": 30003, "after": 0.3},
    {"outcome": "failed", "error_code": 30008, "after": 0.2},
    {"outcome": "undelivered", "error_code": 63016, "after": 0.3},  # the template follows
    {"status": 400, "code": 63018},  # WhatsApp's rate limit at create: retried
    {"outcome": "failed", "error_code": 63018, "after": 0.2},  # by callback: sent again later
]


def each_once(faults: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each distinct fault of `faults`, once, in order."""
    return [dict(f) for f in {repr(f): f for f in faults}.values()]


# The first creates meet every kind of fault once, whatever the draw (then chaos): a late
# success the list does not show, 63018 at create and by callback first.
FIRST_TWILIO_FAULTS = each_once(
    [
        {"delay": 1.0},
        {"status": 400, "code": 63018},
        {"outcome": "failed", "error_code": 63018, "after": 0.2},
        *TWILIO_FAULTS,
    ]
)
LIST_LAG_SECONDS = 60  # the Messages list shows nothing within the run
OPENAI_ATTEMPT_SECONDS = "1"  # a response that takes longer is a late success
OPENAI_FAULTS = [
    {"status": 503},
    {"status": 429},
    {"status": 500},
    {"status": 400, "code": "conversation_locked"},
    {"delay": 2},
    {"fail": "server_error"},
    {"status": 429, "code": "insufficient_quota"},
]


class Flaky:
    """Makes calls fail at random, before or after doing their work; and each wrapped call
    once each way, whatever the draw: before its FORCED[0]-th call, after its FORCED[1]-th."""

    FORCED = (2, 4)

    def __init__(self, seed: int, rate: float) -> None:
        self.rng, self.rate, self.lock = random.Random(seed), rate, threading.Lock()
        self.injected: Counter[str] = Counter()
        self.calls: Counter[str] = Counter()
        self.names: list[str] = []

    def _draw(self, name: str) -> str | None:
        with self.lock:
            self.calls[name] += 1
            if self.calls[name] in self.FORCED:
                return "before" if self.calls[name] == self.FORCED[0] else "after"
            if self.rng.random() >= self.rate:
                return None
            return self.rng.choice(["before", "after"])

    def kinds(self) -> list[str]:
        """Every kind of fault it injects."""
        return [f"{name} {how}" for name in self.names for how in ("failed", "done, answer lost")]

    def wrap(self, name: str, call: Any) -> Any:
        self.names.append(name)

        def flaky(*args: Any, **kwargs: Any) -> Any:
            when = self._draw(name)
            if when == "before":
                self.injected[f"{name} failed"] += 1
                raise ConnectionError(f"injected: {name} failed")
            result = call(*args, **kwargs)
            if when == "after":
                self.injected[f"{name} done, answer lost"] += 1
                raise ConnectionError(f"injected: {name} answer lost")
            return result

        return flaky


class FlakyStepFunctions:
    def __init__(self, client: Any, flaky: Flaky) -> None:
        self._client = client
        self.start_execution = flaky.wrap("StartExecution", client.start_execution)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)


def typing_plan(rng: random.Random, conversation: int) -> list[tuple[float, str]]:
    """(pause before sending, body) for a conversation: 1-3 bursts of 1-4 fragments."""
    plan: list[tuple[float, str]] = []
    number = 0
    for burst in range(rng.randint(1, 3)):
        pause = rng.uniform(0.3, 2.5) if burst else rng.uniform(0, 0.5)
        for fragment in range(rng.randint(1, 4)):
            plan.append((pause if fragment == 0 else rng.uniform(0.05, 0.5), f"c{conversation}-m{number}"))
            number += 1
    return plan


def test_random_traffic_with_faults_loses_and_duplicates_nothing(harness, configure, monkeypatch, capsys):
    configure(
        RECONCILE_AFTER_SECONDS="10",
        # A run that failed for transient reasons is retried by the reconciler after these
        # (60 s doubling up to 30 min, as deployed): the faults here are seconds long.
        TRANSIENT_RETRY_FIRST_SECONDS="5",
        TRANSIENT_RETRY_MAX_SECONDS="30",
        # Every conversation here belongs to the local stack's one tenant: its ceilings (200
        # new conversations, 1,000 AI calls an hour) would record the later ones `limited`.
        MAX_NEW_CONVERSATIONS_PER_HOUR_PER_TENANT="100000",
        MAX_AI_CALLS_PER_HOUR_PER_TENANT="100000",
        MAX_AI_CALLS_PER_HOUR="100000",
        MAX_BATCH_ATTEMPTS="20",
        OPENAI_TIMEOUT_SECONDS=OPENAI_ATTEMPT_SECONDS,
        TWILIO_TIMEOUT_SECONDS="0.5",
        WHATSAPP_TEMPLATE_CONTENT_SID=TEMPLATE,
        TWILIO_MESSAGING_SERVICE_SID=MESSAGING_SERVICE,
        DELIVERY_RECEIPT_WAIT_SECONDS="3",
    )
    rng = random.Random(SEED)
    harness.stack.twilio.list_lag(LIST_LAG_SECONDS)
    harness.stack.openai.inject(*each_once(OPENAI_FAULTS))  # each kind once, then chaos
    harness.stack.openai.chaos(API_FAULT_RATE, OPENAI_FAULTS, SEED)
    harness.stack.twilio.inject(*FIRST_TWILIO_FAULTS)
    harness.stack.twilio.chaos(API_FAULT_RATE, TWILIO_FAULTS, SEED + 1)
    flaky = Flaky(SEED + 2, AWS_FAULT_RATE)
    monkeypatch.setattr(staged_messages, "stage", flaky.wrap("stage message", staged_messages.stage))
    monkeypatch.setattr(
        batch_windows, "count_message", flaky.wrap("open or extend window", batch_windows.count_message)
    )
    monkeypatch.setattr(batch_windows, "open", flaky.wrap("open window", batch_windows.open))
    monkeypatch.setattr(turns, "record_delivery", flaky.wrap("record a status", turns.record_delivery))
    flaky_sfn = FlakyStepFunctions(stepfunctions.client(), flaky)
    monkeypatch.setattr(stepfunctions, "client", lambda: flaky_sfn)

    users = {c: harness.new_user() for c in range(CONVERSATIONS)}
    plans = {c: typing_plan(random.Random(rng.random()), c) for c in users}
    accepted: dict[int, list[str]] = {c: [] for c in users}
    given_up: dict[int, list[str]] = {c: [] for c in users}  # Twilio's retries ran out
    webhook_answers: Counter[int | str] = Counter()  # a status, or the error met instead
    webhook_seconds: list[float] = []
    pasted = given_to_twilio(harness.stack.whatsapp_url)  # ...#rc=5&rp=all
    config = harness.stack.config

    places = threading.Semaphore(AT_ONCE)

    def converse(conversation: int) -> None:
        with places:
            _converse(conversation)

    def _converse(conversation: int) -> None:
        for pause, body in plans[conversation]:
            time.sleep(pause)
            form = inbound_form(body, users[conversation], OUR_WHATSAPP, config.twilio_account_sid)
            delivery = deliver_as_twilio(pasted, form, config.twilio_auth_token)
            webhook_answers.update(a["status"] or a.get("error", "?") for a in delivery.attempts)
            webhook_seconds.extend(a["seconds"] for a in delivery.attempts)
            (accepted if delivery.succeeded else given_up)[conversation].append(body)

    started = time.monotonic()
    threads = [threading.Thread(target=converse, args=(c,)) for c in users]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    conversation_ids = {c: harness.conversation_of(u).conversation_id for c, u in users.items()}
    deadline = time.monotonic() + 240 + 3 * CONVERSATIONS  # a larger run takes longer to settle
    ours = tuple(f"{cid}-" for cid in conversation_ids.values())
    while True:
        runs = [r for r in harness.all_runs() if r["name"].startswith(ours)]
        busy = any(r["status"] == "RUNNING" for r in runs)
        pending = sum(len(staged_messages.pending(cid)) for cid in conversation_ids.values())
        # A window whose run never started (its webhook's last attempt failed, and Twilio
        # gave up) stays open until the reconciler closes it.
        windows = sum(harness.window_of(cid) is not None for cid in conversation_ids.values())
        # A part reported 63018 is sent again by the reconciler once due (5 s here).
        due = sum(r.resend_of in conversation_ids.values() for r in batch_windows.scan_with_resends()[1])
        if not busy and not pending and not windows and not due:
            break
        assert time.monotonic() < deadline, (
            f"not quiet: {pending} pending, {windows} windows, {due} resends due, running: {busy}"
        )
        with contextlib.suppress(ConnectionError):  # an injected fault: the next round retries
            reconcile()  # the schedule's job, every few seconds here
        time.sleep(2)
    elapsed = time.monotonic() - started

    fallback = FailureSettings.get().fallback_reply
    lost = duplicated = openai_duplicates = set_aside = duplicate_sends = 0
    for c, cid in conversation_ids.items():
        # The batches, in window order: answered, or set aside with the fallback reply.
        batches = [
            t
            for t in turns.list_of(cid)
            if t.role == "user" and (t.status == "answered" or t.error == "AIPermanentError")
        ]
        set_aside += sum(1 for t in batches if t.status != "answered")
        lines = [line for t in batches for line in t.body.split("\n")]
        counts = Counter(lines)
        lost += sum(1 for body in accepted[c] if counts[body] == 0)
        duplicated += sum(n - 1 for n in counts.values() if n > 1)
        # A message Twilio gave up on may have been staged all the same: answered once, or not.
        kept = [line for line in lines if line not in given_up[c]]
        assert kept == accepted[c], f"conversation {c}: answered {lines}, accepted {accepted[c]}"
        replies = replies_delivered(harness, users[c], cid)
        expected = [f"You said: {t.body}" if t.status == "answered" else fallback for t in batches]
        duplicate_sends += sum((Counter(replies) - Counter(expected)).values())
        assert replies == expected, f"conversation {c} replies"
        # The OpenAI conversation: one user turn and one reply per answered batch.
        in_openai = openai_turns(harness, cid)
        openai_duplicates += count_duplicate_turns(in_openai)
        assert in_openai == [(t.body, f"You said: {t.body}") for t in batches if t.status == "answered"], (
            f"conversation {c}: OpenAI conversation {in_openai}"
        )
        item = harness.conversation_item(cid)
        assert "lock_owner" not in item, f"conversation {c} still locked"
        assert harness.window_of(cid) is None, f"conversation {c} has a window open"
        assert staged_messages.pending(cid) == []
    runs = [r for cid in conversation_ids.values() for r in harness.runs(cid)]
    for run in runs:
        described = harness.sfn.describe_execution(executionArn=run["executionArn"])
        assert described["status"] in ("SUCCEEDED", "FAILED")
        if described["status"] == "FAILED":
            assert described.get("error"), run["name"]

    undelivered, recorded, untold = _undelivered(harness, conversation_ids.values())
    templates = _templates_sent_once(harness, conversation_ids.values())
    given_up_callbacks = callbacks_given_up(harness)

    # The faults, as the stand-ins record injecting them (a fault drawn for a call that
    # was answered otherwise, say refused for a busy conversation, does not count).
    faults = Counter(flaky.injected)
    faults.update(describe(c) for c in harness.stack.openai.calls if _openai_fault_injected(c))
    messages = {m["sid"]: m for m in harness.stack.twilio.messages}
    faults.update(_twilio_fault(c) for c in harness.stack.twilio.calls if _twilio_fault_injected(c, messages))
    meant = [
        *flaky.kinds(),
        *map(_twilio_fault, _calls(TWILIO_FAULTS)),
        *map(describe, _calls(OPENAI_FAULTS)),
    ]
    not_injected = sorted(kind for kind in set(meant) if not faults[kind])
    good_resends, other_resends = {}, {}
    for cid in conversation_ids.values():
        good, other = resends(harness, cid)
        good_resends |= good
        other_resends |= other
    statuses = Counter(r["status"] for r in runs)
    answered = sum(
        len([t for t in turns.list_of(cid) if t.status == "answered"]) for cid in conversation_ids.values()
    )
    with capsys.disabled():
        print(
            f"\nrandomized (seed {SEED}): {len(users)} conversations, "
            f"{sum(len(a) for a in accepted.values())} messages accepted "
            f"({sum(len(g) for g in given_up.values())} given up by Twilio), "
            f"{answered} batches answered, {set_aside} set aside with the fallback reply, "
            f"runs {dict(statuses)}, webhook answers {dict(webhook_answers)} "
            f"(slowest {max(webhook_seconds, default=0):.1f}s, median {_median(webhook_seconds):.2f}s), "
            f"faults injected {sum(faults.values())} {dict(sorted(faults.items()))}, "
            f"OpenAI requests {dict(sorted(harness.stack.openai.request_counts.items()))}, "
            f"lost {lost}, duplicated {duplicated}, "
            f"duplicate user turns in OpenAI conversations {openai_duplicates}, "
            f"duplicate sends {duplicate_sends}, undelivered replies {len(recorded)} recorded "
            f"(Twilio reported {len(undelivered)}, gave up telling us {len(untold)}), "
            f"status callbacks given up {len(given_up_callbacks)}, templates {templates}, "
            f"parts sent again after an injected 63018 {len(good_resends)} (other resends "
            f"{len(other_resends)}), Twilio list lag {LIST_LAG_SECONDS}s, {elapsed:.0f}s"
        )
    assert not_injected == [], f"faults meant and not injected: {not_injected}"
    assert lost == 0 and duplicated == 0 and openai_duplicates == 0 and duplicate_sends == 0
    assert other_resends == {}, "a part sent again without the 63018 that justifies it"
    # Every status callback Twilio made was taken (2xx), or retried until it was: a failure
    # reported to an endpoint that never took it is a failure nobody saw.
    assert given_up_callbacks == [] and untold == set()
    assert recorded == undelivered


def openai_turns(harness: Any, conversation_id: str) -> list[tuple[str, str]]:
    """(user text, reply text) of each exchange in the conversation's OpenAI Conversation,
    read from the stand-in; a user item without its reply, or a reply without its user
    item, shows as an empty text."""
    openai_conversation = (
        harness.conversation_item(conversation_id).get("openai_conversation_id", {}).get("S")
    )
    if not openai_conversation:
        return []
    exchanges: list[tuple[str, str]] = []
    for item in harness.stack.openai.conversation_items(openai_conversation):
        text = item["content"][0]["text"]
        if item["role"] == "user":
            exchanges.append((text, ""))
        elif exchanges and not exchanges[-1][1]:
            exchanges[-1] = (exchanges[-1][0], text)
        else:
            exchanges.append(("", text))
    return exchanges


def count_duplicate_turns(exchanges: list[tuple[str, str]]) -> int:
    """User turns that repeat a message an earlier user turn of the conversation holds."""
    seen: set[str] = set()
    duplicates = 0
    for user_text, _ in exchanges:
        lines = set(user_text.split("\n")) - {""}
        duplicates += bool(lines & seen)
        seen |= lines
    return duplicates


def _calls(faults: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each fault as the call record that carries it."""
    return [{"fault": fault} for fault in faults]


def _openai_fault_injected(call: dict[str, Any]) -> bool:
    """Whether the OpenAI stand-in answered the call as its fault said: with the fault's
    status, or accepted it (to complete late, or to fail after acceptance)."""
    fault = call["fault"]
    if not fault:
        return False
    return call["status"] == (fault.get("status") or 200)


def _twilio_fault_injected(call: dict[str, Any], messages: dict[str, dict[str, Any]]) -> bool:
    """Whether the Twilio stand-in answered the create as its fault said: with the fault's
    status, or accepted it (to answer late), or accepted it and then reported the message
    with the fault's outcome and error code."""
    fault = call["fault"]
    if not fault:
        return False
    if fault.get("status"):
        return call["status"] == fault["status"]
    message = messages.get(call["sid"] or "")
    if message is None:
        return False
    if fault.get("outcome"):
        return (message["status"], message["error_code"]) == (fault["outcome"], fault["error_code"])
    return True


def describe(call: dict[str, Any]) -> str:
    fault = call["fault"]
    if fault.get("status"):
        return f"OpenAI {fault['status']} {fault.get('code') or ''}".strip()
    if fault.get("fail"):
        return "OpenAI failed after acceptance"
    return "OpenAI late success"


def _median(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[len(ordered) // 2] if ordered else 0.0


def _twilio_fault(call: dict[str, Any]) -> str:
    fault = call["fault"]
    if fault.get("status"):
        return f"Twilio {fault['status']} {fault.get('code') or ''}".strip()
    if fault.get("delay"):
        return "Twilio late success"
    return f"Twilio {fault['outcome']} {fault['error_code']}"


def _undelivered(harness, conversation_ids: Any, timeout: float = 15) -> tuple[dict, dict, set]:
    """(what Twilio reports failed or undelivered, what the turns recorded as such,
    MessageSid → error code; and the failures whose every callback attempt failed: Twilio
    gave up telling us, as it would), once every status callback has arrived. Each failure
    whose callback we answered is recorded."""
    deadline = time.monotonic() + timeout
    while True:
        reported = {
            m["sid"]: m["error_code"] for m in harness.stack.twilio.messages if m["status"] in NOT_DELIVERED
        }
        recorded = {
            sid: d.error_code
            for cid in conversation_ids
            for turn in turns.list_of(cid)
            for sid, d in turn.deliveries.items()
            if d.status in NOT_DELIVERED
        }
        answered = _callbacks_answered(harness, NOT_DELIVERED)
        untold = {sid for sid in reported if sid not in answered and sid not in recorded}
        settled = not _callbacks_pending(harness, NOT_DELIVERED)  # our answers, templates sent
        if settled and recorded == {s: c for s, c in reported.items() if s not in untold}:
            return reported, recorded, untold
        if time.monotonic() > deadline:
            return reported, recorded, untold
        time.sleep(0.2)


def _callbacks_pending(harness, statuses: tuple[str, ...]) -> set[str]:
    """The MessageSids in one of `statuses` whose callback Twilio is still making: the
    stand-in lists a callback's attempts once they are all made and answered."""
    made = {
        c["params"]["MessageSid"]
        for c in harness.stack.twilio.callbacks
        if c["params"]["MessageStatus"] in statuses
    }
    return {m["sid"] for m in harness.stack.twilio.messages if m["status"] in statuses} - made


def _callbacks_answered(harness, statuses: tuple[str, ...]) -> set[str]:
    """The MessageSids whose callback for one of `statuses` we answered 2xx (or that
    Twilio is still trying)."""
    answered = {
        c["params"]["MessageSid"]
        for c in harness.stack.twilio.callbacks
        if c["params"]["MessageStatus"] in statuses and c["status"] and c["status"] < 300
    }
    return answered | _callbacks_pending(harness, statuses)


def _templates_sent_once(harness, conversation_ids: Any) -> int:
    """At most one template per reply, each for a reply whose part was reported undelivered
    with 63016, and one for each such reply whose 63016 callback we answered (its owner's:
    functions/entry_points/status_callback.py); how many."""
    sent = [m["sid"] for m in harness.stack.twilio.messages if m["content_sid"] == TEMPLATE]
    assert len(sent) == len(set(sent))
    answered = _callbacks_answered(harness, NOT_DELIVERED)
    recorded: set[str] = set()
    for cid in conversation_ids:
        for turn in turns.list_of(cid):
            if not any(d.error_code == 63016 and d.message.isdigit() for d in turn.deliveries.values()):
                assert turn.template_sid is None, turn.turn_id
                continue
            if turn.template_owner in answered:
                assert turn.template_sid in sent, (turn.turn_id, turn.template_sid, sent)
            if turn.template_sid:
                recorded.add(turn.template_sid)
    assert set(sent) == recorded, (sent, recorded)
    return len(sent)
