"""The console (infra/console) as a person sees it, in a real browser: `python -m infra.console`
serves it from an operator's shell (nothing but the local stack's AWS endpoint, as for a
deployed stack), headless Chromium renders it, and the test reads the text on the page.

After one burst of three fragments (a text, a photo, a location): the start page links to
the conversation; its page shows the fragments in the order sent (their texts once the
"show message text" button is pressed: a POST, never a URL), the run's states by their
console names, the reply sent and what Twilio reported of it. A failed run's page shows the
state it failed in, its error and cause. A conversation handed off to a person shows its
pause (since, by whom, until) and the person's reply with its status. A run that called a
tool shows the call under Call Tools: its name and outcome, never what it was asked or
answered. Every AWS call the console makes is one of its reads. Pages are opened as an
operator opens them: the printed URL's token first (without it, or from another Host,
nothing is served).

CONSOLE_SCREENSHOT=1 also writes docs/console.png (docs/console.md)."""

from __future__ import annotations

import base64
import fcntl
import json
import os
import select
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from datetime import UTC, datetime
from html.parser import HTMLParser
from pathlib import Path

import pytest
from werkzeug.test import Client

from functions.storage.tables import assistant_turn_id
from infra.console.app import ConsoleApp
from infra.console.reading import NEEDED, READS, StackReader, read_only_session
from infra.stack_lookup import names
from tests.support.operator_shell import ROOT, operator_shell
from tests.support.waiting import wait_until

pytestmark = pytest.mark.e2e

# The one CHROMIUM names, else the first on PATH (make browser installs Debian's chromium).
CHROMIUM = os.environ.get("CHROMIUM") or next(
    (name for name in ("chromium", "chromium-browser") if shutil.which(name)), "chromium"
)
REFRESH = '<meta http-equiv="refresh"'
PRESS = 'form[action="/message-text"] button'  # "Show message text"
PAUSE_SECONDS = 0.2  # between fragments: well inside the 1 s window, apart on the timeline
BURST = [("whatsapp_text", "text"), ("whatsapp_image", "photo"), ("whatsapp_location", "location")]


@pytest.fixture(scope="module")
def console(stack) -> Iterator[str]:
    """`python -m infra.console` in an operator's shell, on any free port: the URL it
    prints (with its token)."""
    served = subprocess.Popen(
        [sys.executable, "-m", "infra.console", "--port", "0"],
        cwd=ROOT,
        env=operator_shell(stack),
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        line = served.stdout.readline().strip()  # type: ignore[union-attr]
        assert line.startswith("Console: http://127.0.0.1:") and "/?token=" in line, line
        yield line.removeprefix("Console: ")
    finally:
        served.send_signal(signal.SIGTERM)
        served.communicate(timeout=20)


class _Seen(HTMLParser):
    """The text a person sees on a page, piece by piece (no style, no tooltip)."""

    def __init__(self) -> None:
        super().__init__()
        self.pieces: list[str] = []
        self._hidden = 0

    def handle_starttag(self, tag: str, attrs: object) -> None:
        self._hidden += tag in ("style", "title", "script")

    def handle_endtag(self, tag: str) -> None:
        self._hidden -= tag in ("style", "title", "script")

    def handle_data(self, data: str) -> None:
        if not self._hidden and data.strip():
            self.pieces.append(data.strip())


def browse(
    console: str, page: str, profile: Path, show_text: bool = False, screenshot: Path | None = None
) -> list[str]:
    """The text on the console's `page` as headless Chromium renders it, opened as an
    operator opens it (the printed URL's token in its URL, a cookie from then on); with
    `show_text`, after pressing "Show message text" on it (its form's POST)."""
    seen = _Seen()
    seen.feed(rendered(console, page, profile, show_text, screenshot))
    return seen.pieces


def rendered(
    console: str, page: str, profile: Path, show_text: bool = False, screenshot: Path | None = None
) -> str:
    """The HTML of the console's `page` as headless Chromium holds it (as `browse` opens it)."""
    base, _, token = console.partition("/?token=")
    with _Chromium(profile) as chromium:
        chromium.load("Page.navigate", url=f"{base}{page}{'&' if '?' in page else '?'}token={token}")
        if show_text:
            chromium.load("Runtime.evaluate", expression=f"document.querySelector('{PRESS}').click()")
        if screenshot:
            chromium.call(
                "Emulation.setDeviceMetricsOverride",
                width=1200,
                height=1180,
                deviceScaleFactor=1,
                mobile=False,
            )
            screenshot.write_bytes(base64.b64decode(chromium.call("Page.captureScreenshot")["data"]))
        html = chromium.call("Runtime.evaluate", expression="document.documentElement.outerHTML")
    return html["result"]["value"]


class _Chromium:
    """Headless Chromium driven over its DevTools pipe (--remote-debugging-pipe: JSON
    messages, each ending in a NUL byte, that it reads on its fd 3 and writes on its fd 4),
    so that a test can press a button on a page."""

    def __init__(self, profile: Path) -> None:
        if not shutil.which(CHROMIUM):
            pytest.fail(f"{CHROMIUM} not found: apt-get install chromium (or set CHROMIUM)")
        commands, self._commands = os.pipe()
        self._replies, replies = os.pipe()
        ends = [fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10) for fd in (commands, replies)]
        for fd in (commands, replies):
            os.close(fd)
        on_3_and_4 = f'exec "$0" "$@" 3<&{ends[0]} 4>&{ends[1]}'  # bash: dash takes no fd past 9
        flags = ["--headless", "--no-sandbox", f"--user-data-dir={profile}", "--hide-scrollbars"]
        self.process = subprocess.Popen(
            ["bash", "-c", on_3_and_4, CHROMIUM, *flags, "--remote-debugging-pipe"],
            pass_fds=ends,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for fd in ends:
            os.close(fd)
        self._sent, self._unread = 0, b""
        self.events: list[str] = []  # the methods of the events read, since the last load
        self.session: str | None = None
        target = self.call("Target.createTarget", url="about:blank")["targetId"]
        self.session = self.call("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        self.call("Page.enable")

    def __enter__(self) -> _Chromium:
        return self

    def __exit__(self, *_: object) -> None:
        self.session = None
        try:
            self.call("Browser.close")
        finally:
            self.process.wait(timeout=30)
            os.close(self._commands)
            os.close(self._replies)

    def load(self, method: str, **params: object) -> None:
        """Call `method` (a navigation, or a script that leads to one) and wait until the page
        it leads to is loaded."""
        self.events.clear()
        assert "errorText" not in self.call(method, **params)
        while "Page.loadEventFired" not in self.events:
            self._next()

    def call(self, method: str, **params: object) -> dict:
        self._sent += 1
        message = {"id": self._sent, "method": method, "params": params}
        if self.session:
            message["sessionId"] = self.session
        os.write(self._commands, json.dumps(message).encode() + b"\0")
        while (reply := self._next()).get("id") != self._sent:
            pass
        assert "error" not in reply, (method, reply["error"])
        return reply["result"]

    def _next(self) -> dict:
        while b"\0" not in self._unread:
            assert select.select([self._replies], [], [], 60)[0], "Chromium did not answer in 60 s"
            chunk = os.read(self._replies, 1 << 16)
            assert chunk, "Chromium exited"
            self._unread += chunk
        message, _, self._unread = self._unread.partition(b"\0")
        reply = json.loads(message)
        if "method" in reply:
            self.events.append(reply["method"])
        return reply


def _in_order(pieces: list[str], wanted: list[str]) -> bool:
    position = 0
    for piece in pieces:
        if position < len(wanted) and wanted[position] in piece:
            position += 1
    return position == len(wanted)


def test_a_burst_of_three_fragments_as_a_person_sees_it(harness, console, tmp_path):
    from tests.support.events import load_event

    user = harness.new_user()
    for n, (name, _) in enumerate(BURST):
        time.sleep(PAUSE_SECONDS * bool(n))
        assert harness.send_event(load_event(name), user).status_code == 200
    conversation_id = harness.conversation_of(user).conversation_id
    (run,) = harness.wait_until_quiet(conversation_id, runs=1)
    (sent,) = [m for m in harness.stack.twilio.messages if m["to"] == user]
    # WhatsApp's last status (the Twilio stand-in's), reported through its status callback
    wait_until(lambda: _reported(conversation_id, run["name"], sent["sid"]) == "read", timeout=10)
    reported = _reported(conversation_id, run["name"], sent["sid"])

    start = browse(console, "/", tmp_path / "start")
    page = browse(console, f"/conversations/{conversation_id}", tmp_path / "page", show_text=True)
    if os.environ.get("CONSOLE_SCREENSHOT") == "1":
        browse(
            console,
            f"/conversations/{conversation_id}",
            tmp_path / "shot",
            True,
            ROOT / "docs" / "console.png",
        )

    assert conversation_id in start
    fragments = [f"{n}. {kind} at +" for n, (_, kind) in enumerate(BURST, start=1)]
    texts = [load_event("whatsapp_text")["Body"], load_event("whatsapp_image")["Body"], "Twilio HQ"]
    assert _in_order(page, fragments) and _in_order(page, texts)
    states = list(dict.fromkeys(harness.states_entered(run["executionArn"])))
    assert states[0] == "Wait For The Burst To End" and "Send Reply" in states
    assert [p for p in page if p in states] == states  # each state's row, in the run's order
    assert _in_order(page, ["part 1", reported, "Replies sent", sent["sid"], reported])
    _reads_like_the_conversation(console, page, conversation_id, run["name"], sent, reported, tmp_path)


def _reads_like_the_conversation(
    console: str,
    page: list[str],
    conversation_id: str,
    run_name: str,
    sent: dict,
    reported: str | None,
    tmp_path: Path,
) -> None:
    """The transcript: the person's three fragments in order, then the reply that answered
    them (the OpenAI stand-in's `You said: ...`, as Twilio was asked to send it), with what
    the model was given; each part's text beside its status on the timeline. Without "Show
    message text", kinds and lengths only: none of these texts anywhere in the page."""
    from functions.answer import turns
    from tests.support.events import load_event

    window_id = run_name.removeprefix(f"{conversation_id}-")
    reply = turns.get(conversation_id, assistant_turn_id(window_id))
    assert reply is not None and reply.body.strip() == sent["body"].strip()
    assert reply.body.startswith("You said: ")
    texts = [load_event("whatsapp_text")["Body"], load_event("whatsapp_image")["Body"], "Twilio HQ"]
    given = f"model {reply.model}, {reply.prompt_tokens} input tokens"
    assert _in_order(page, ["Transcript", *texts, "the assistant", reply.body.strip(), given, "Fragments"])
    clipped = " ".join(reply.body.split())[:40]
    assert _in_order(page, ["Replies, as Twilio reported them", "part 1", reported, f"“{clipped}"])

    hidden = rendered(console, f"/conversations/{conversation_id}", tmp_path / "hidden")
    seen = _Seen()
    seen.feed(hidden)
    assert _in_order(seen.pieces, ["Transcript", "3 fragments: text, photo, location", "the assistant"])
    assert f"{len(reply.body)} characters" in " ".join(seen.pieces)
    assert f'href="?window={window_id}#burst-{window_id}"' in hidden and f'id="burst-{window_id}"' in hidden
    for text in [*texts, "You said", load_event("whatsapp_location")["Address"]]:
        assert text not in hidden, text


def _reported(conversation_id: str, run_name: str, sid: str) -> str | None:
    from functions.answer import turns

    window_id = run_name.removeprefix(f"{conversation_id}-")
    turn = turns.get(conversation_id, assistant_turn_id(window_id))
    delivery = turn.deliveries.get(sid) if turn else None
    return delivery.status if delivery else None


def test_a_handed_off_conversations_pages_show_the_pause_and_the_persons_reply(harness, console, tmp_path):
    """Paused by an operator (`python -m infra.conversations pause --for 2h`), answered by a
    helpdesk's `conversation.reply`: the start page says until when, the conversation's page
    says since when and by whom, and draws the person's reply with its status."""
    user = harness.new_user()
    assert harness.send(user, "where is my parcel?").status_code == 200
    conversation_id = harness.conversation_of(user).conversation_id
    harness.wait_until_quiet(conversation_id, runs=1)
    paused = subprocess.run(
        [sys.executable, "-m", "infra.conversations", "pause", user, "--for", "2h"],
        cwd=ROOT,
        env=operator_shell(harness.stack),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert paused.returncode == 0, paused.stderr
    person = "Hi, this is Sam: your parcel leaves today."
    _put_reply(harness, user, person)
    wait_until(lambda: _persons_reply_status(conversation_id) == "read", timeout=20)

    start = browse(console, "/?status=handed+off", tmp_path / "start")
    page = browse(console, f"/conversations/{conversation_id}", tmp_path / "page", show_text=True)

    paused_until = harness.conversation_of(user).paused_until
    assert _in_order(start, [conversation_id, f"paused (until {_shown(paused_until)})"])
    assert _in_order(page, ["Handed off to a person", ", by operator, until ", "Batch windows"])
    assert _in_order(
        page, ["a person's reply at +", "read", f"“{person}”", "Replies sent", "a person's reply"]
    )


def _put_reply(harness, user: str, body: str) -> None:
    """A helpdesk's `conversation.reply` on the bus (docs/how-it-works.md)."""
    from functions.config import get_settings

    detail = {"AccountSid": harness.stack.config.twilio_account_sid, "conversation": user, "body": body}
    entry = {
        "EventBusName": get_settings().event_bus_name,
        "Source": f"helpdesk.{detail['AccountSid']}",
        "DetailType": "conversation.reply",
        "Detail": json.dumps(detail),
    }
    assert harness.stack.client("events").put_events(Entries=[entry])["FailedEntryCount"] == 0


def _persons_reply_status(conversation_id: str) -> str | None:
    from functions.answer import turns

    written = [t for t in turns.list_of(conversation_id) if t.written_by == "person" and t.message_sids]
    delivery = written[0].deliveries.get(written[0].message_sids[0]) if written else None
    return delivery.status if delivery else None


def _shown(moment: str | None) -> str:
    """An ISO moment as the console shows it."""
    return datetime.fromisoformat(moment or "").astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def test_a_runs_tool_call_shows_under_call_tools_by_its_name_and_outcome_only(harness, console, tmp_path):
    """A tenant's tool (a loopback endpoint), called once by the burst's run: the page draws
    the call under Call Tools (its tool, `answered`, its attempt) and lists it below; the
    order number the model asked with and the endpoint's answer appear nowhere."""
    from tests.support.shop import Shop
    from tests.support.tool_endpoint import ToolEndpoint

    shop, tool = Shop(harness), "lookup_order_" + os.urandom(3).hex()  # the stand-in's call: this test's
    endpoint = ToolEndpoint(answer=b'{"status": "shipped on Monday"}')
    try:
        order = {"order": {"type": "string"}}
        parameters = {"type": "object", "properties": order, "required": ["order"]}
        function = {"type": "function", "name": tool, "description": "Where an order is", "url": endpoint.url}
        function["parameters"] = {**parameters, "additionalProperties": False}
        profile = {"instructions": "Look orders up before answering.", "tools": [function]}
        assert shop.put_profile(tmp_path, profile).returncode == 0
        harness.stack.openai.queue_tool_calls({"name": tool, "arguments": {"order": "55501"}})
        user = harness.new_user()
        shop.send(user, "where is order 55501?")
        conversation_id = shop.conversation_id(user)
        (run,) = harness.wait_until_quiet(conversation_id, runs=1)
    finally:
        endpoint.close()
    assert run["status"] == "SUCCEEDED" and len(endpoint.received) == 1

    html = rendered(console, f"/conversations/{conversation_id}", tmp_path / "tools")
    seen = _Seen()
    seen.feed(html)

    drawn = ["Call Tools", f"tool {tool}", "answered · 1 attempt · ", "Send Reply"]
    assert _in_order(seen.pieces, [*drawn, "Tool calls", tool, "answered", "1", "Replies sent"]), seen.pieces
    for private in ("55501", "shipped on Monday"):
        assert private not in html, private


def test_a_failed_runs_page_shows_the_state_it_failed_in(harness, console, tmp_path):
    conversation_id = harness.stage_directly(harness.new_user(), ["tell me something"])
    harness.stack.openai.inject({"incomplete": "content_filter"})
    run = harness.wait_for_run(harness.start_run(conversation_id))
    assert run["status"] == "FAILED"
    history = harness.history(run["executionArn"])
    failed_in = [
        state
        for state, event in zip(_state_of_each(history), history, strict=True)
        if event["type"] == "TaskFailed" and event["taskFailedEventDetails"]["error"] == run["error"]
    ][-1]

    page = browse(console, f"/conversations/{conversation_id}", tmp_path / "failed")

    assert "FAILED" in " ".join(page)
    assert any(p.startswith(f"failed in {failed_in}: {run['error']}: ") for p in page)


def _state_of_each(history: list[dict]) -> list[str]:
    """The state each history event happened in."""
    current, states = "", []
    for event in history:
        if event["type"].endswith("StateEntered"):
            current = event["stateEnteredEventDetails"]["name"]
        states.append(current)
    return states


def test_the_console_only_reads_and_refreshes_while_a_burst_is_in_flight(harness, stack):
    """Every AWS call behind the start page and a conversation's pages is a read
    (infra/console/reading.py refuses the others before sending them); a conversation's page
    reloads itself while its burst is in flight, and no longer once it is answered."""
    session, operations = read_only_session(), []
    session.events.register("before-call", lambda model, **_: operations.append(model.name))
    app = ConsoleApp(StackReader(names("BurstReply", NEEDED), session), local=True)
    browser = Client(app)  # as http://localhost/
    assert browser.get(app.served_at("localhost", 80)).status_code == 303  # the token's cookie
    user = harness.new_user()
    assert harness.send(user, "only read me").status_code == 200
    conversation_id = harness.conversation_of(user).conversation_id
    in_flight = browser.get(f"/conversations/{conversation_id}").text  # its window still open
    harness.wait_until_quiet(conversation_id, runs=1)

    assert REFRESH in in_flight and REFRESH not in browser.get(f"/conversations/{conversation_id}").text
    for path in ("/", "/?status=failed", f"/conversations/{conversation_id}"):
        assert browser.get(path).status_code == 200
    assert browser.get("/conversations/none").status_code == 404
    pressed = browser.post(
        "/message-text", data={"show": "1", "back": "/"}, headers={"Origin": "http://localhost"}
    )
    assert pressed.status_code == 303

    assert {"Scan", "Query", "GetItem", "ListExecutions", "GetExecutionHistory"} <= set(operations)
    assert set(operations) <= READS


def test_the_console_serves_its_printed_url_only(console):
    """Without the printed URL's token, or for another Host (a DNS-rebound name), the served
    console answers nothing but a refusal."""
    base, _, token = console.partition("/?token=")

    def status(url: str, host: str | None = None) -> int:
        request = urllib.request.Request(url, headers={"Host": host} if host else {})
        opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor())  # as a browser
        try:
            with opener.open(request, timeout=10) as answer:
                return answer.status
        except urllib.error.HTTPError as error:
            return error.code

    assert status(f"{base}/") == 403
    assert status(f"{base}/?token=guessed") == 403
    assert status(console, host="rebound.example") == 421
    assert status(console) == 200  # redirected to the start page, the token in a cookie
