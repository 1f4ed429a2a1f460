"""The console's guard (infra/console): only the printed host and port are served; every
request carries the launch's token (the printed URL sets it as a cookie and drops it from
the URL); a POST comes from the console's own pages; the toggle goes back to a console page
only; a host that is not a loopback address needs --allow-remote; and AWS gets only the
console's own reads."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

import pytest
from botocore.config import Config
from botocore.exceptions import EndpointConnectionError
from werkzeug.test import Client

import infra.console.__main__ as console_main
from infra.console.app import ConsoleApp
from infra.console.reading import READS, WriteRefused, read_only_session

OWN = "http://127.0.0.1:8000"
NOWHERE = "http://127.0.0.1:9"  # nothing listens: a request that is sent fails to connect
MACHINE = "arn:aws:states:us-east-1:123456789012:stateMachine:BurstReply-BatchWindow"
RUN = "arn:aws:states:us-east-1:123456789012:execution:BurstReply-BatchWindow:c-w"


class _EmptyStack:
    """A stack with no conversation and no run (what the console's views read)."""

    region = "us-east-1"

    def all_conversations(self) -> list:
        return []

    def open_windows(self) -> dict:
        return {}

    def set_aside_batches(self) -> dict:
        return {}

    def runs(self, name_prefix: str = "", status: str | None = None) -> list:
        return []

    def conversation(self, conversation_id: str) -> None:
        return None


class _Browser(Client):
    """A werkzeug test client that sends a full URL's host as its Host."""

    def open(self, url: str, *args: Any, **kwargs: Any) -> Any:  # type: ignore[override]
        parts = urlsplit(url)
        path = parts.path + (f"?{parts.query}" if parts.query else "")
        return super().open(path, *args, base_url=f"{parts.scheme}://{parts.netloc}", **kwargs)


def _console() -> tuple[ConsoleApp, str]:
    """The console served at 127.0.0.1:8000, and the URL it prints."""
    app = ConsoleApp(_EmptyStack(), local=True)  # type: ignore[arg-type]
    return app, app.served_at("127.0.0.1", 8000)


def _signed_in() -> tuple[ConsoleApp, _Browser]:
    """A browser that opened the printed URL: it holds the token's cookie."""
    app, url = _console()
    browser = _Browser(app)
    browser.get(url)
    return app, browser


def test_the_printed_url_sets_its_token_as_a_cookie_and_the_page_is_served():
    app, url = _console()
    browser = _Browser(app)

    opened = browser.get(url)
    kept = browser.get(f"{OWN}/conversations/c-1?window=w-1&token={app.token}")

    assert url == f"{OWN}/?token={app.token}"
    assert opened.status_code == 303 and opened.headers["Location"] == "/"  # the token left behind
    cookie = opened.headers["Set-Cookie"]
    assert cookie.startswith(f"console_token_8000={app.token};")
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie
    assert kept.headers["Location"] == "/conversations/c-1?window=w-1"
    page = browser.get(f"{OWN}/")  # the cookie carries the token
    assert page.status_code == 200 and "Cache-Control" in page.headers


def test_a_request_for_another_host_is_refused():
    app, _ = _console()
    browser = _Browser(app)

    for host in ("evil.example:8000", "127.0.0.1:8001", "evil.example"):  # a rebound name: any port
        refused = browser.get(f"http://{host}/?token={app.token}")
        assert refused.status_code == 421 and refused.mimetype == "text/plain", host
    assert browser.get(f"http://localhost:8000/?token={app.token}").status_code == 303

    ipv6 = ConsoleApp(_EmptyStack(), local=True)
    assert ipv6.served_at("::1", 8000) == f"http://[::1]:8000/?token={ipv6.token}"
    assert _Browser(ipv6).get(f"http://[::1]:8000/?token={ipv6.token}").status_code == 303


def test_a_request_without_the_token_is_refused():
    app, _ = _console()
    browser = _Browser(app)

    assert browser.get(f"{OWN}/").status_code == 403
    assert browser.get(f"{OWN}/conversations/c-1").status_code == 403
    assert browser.get(f"{OWN}/?token=guessed").status_code == 403
    browser.set_cookie("console_token_8000", "guessed", domain="127.0.0.1")
    assert browser.get(f"{OWN}/").status_code == 403
    assert browser.post(f"{OWN}/message-text", data={"show": "1"}, headers={"Origin": OWN}).status_code == 403


def test_a_cross_site_post_of_the_toggle_sets_no_cookie():
    _, browser = _signed_in()
    show = {"show": "1", "back": "/"}

    for headers in (
        {"Origin": "http://evil.example"},
        {"Origin": "null"},  # a sandboxed frame, a file
        {"Referer": "http://evil.example/p"},
        {},
    ):
        refused = browser.post(f"{OWN}/message-text", data=show, headers=headers)
        assert refused.status_code == 403 and "Set-Cookie" not in refused.headers, headers
    for headers in ({"Origin": OWN}, {"Referer": f"{OWN}/conversations/c-1"}):
        pressed = browser.post(f"{OWN}/message-text", data=show, headers=headers)
        assert pressed.status_code == 303 and pressed.headers["Set-Cookie"].startswith("message_text=1;")


def test_the_toggle_goes_back_to_a_console_page_only():
    _, browser = _signed_in()

    def back_to(back: str) -> str:
        pressed = browser.post(
            f"{OWN}/message-text", data={"show": "1", "back": back}, headers={"Origin": OWN}
        )
        assert pressed.status_code == 303
        return pressed.headers["Location"]

    for elsewhere in (
        "//evil.example",
        "/\t/evil.example/p",  # a browser drops the tab: //evil.example/p
        "/\\evil.example",  # read as //evil.example
        "https://evil.example",
        "/\n/evil.example",
        "/\x7f",
        "/nowhere",
        "/message-text",
        "/conversations/c-1/more",
        "",
    ):
        assert back_to(elsewhere) == "/", repr(elsewhere)
    for page in ("/", "/?status=failed", "/conversations/c-1", "/conversations/c-1?window=w-1"):
        assert back_to(page) == page


class _Served(Exception):
    """The console went on to serve."""


def _serve_nothing(stack_name: str) -> Any:
    raise _Served


def test_a_host_that_is_not_a_loopback_address_needs_allow_remote(monkeypatch, capsys):
    monkeypatch.setattr(console_main, "console_app", _serve_nothing)

    for host in ("0.0.0.0", "192.0.2.10", "console.example"):
        with pytest.raises(SystemExit) as refused:
            console_main.main(["--host", host])
        assert refused.value.code != 0
        assert f"--host {host} is not a loopback address" in capsys.readouterr().err

        with pytest.raises(_Served):
            console_main.main(["--host", host, "--allow-remote"])
        warning = capsys.readouterr().err
        assert "warning" in warning and "only protection" in warning and "plain HTTP" in warning
    for host in ("127.0.0.1", "127.0.0.2", "::1", "localhost"):
        with pytest.raises(_Served):
            console_main.main(["--host", host])
        assert capsys.readouterr().err == "", host


def _client(service: str) -> Any:
    return read_only_session().client(
        service,
        region_name="us-east-1",
        endpoint_url=NOWHERE,
        aws_access_key_id="x",
        aws_secret_access_key="x",
        config=Config(retries={"max_attempts": 1}, connect_timeout=1),
    )


CONSOLE_READS = [  # every call infra/console/reading.py makes, and __main__'s reachability check
    ("dynamodb", "get_item", {"TableName": "Turns", "Key": {"conversation_id": {"S": "c"}}}),
    ("dynamodb", "query", {"TableName": "Turns"}),
    ("dynamodb", "scan", {"TableName": "Turns"}),
    ("stepfunctions", "list_executions", {"stateMachineArn": MACHINE}),
    ("stepfunctions", "describe_state_machine", {"stateMachineArn": MACHINE}),
    ("stepfunctions", "describe_execution", {"executionArn": RUN}),
    ("stepfunctions", "get_execution_history", {"executionArn": RUN}),
]
NOT_THE_CONSOLES = [  # reads by their names' verbs, and a write
    ("secretsmanager", "get_secret_value", {"SecretId": "BurstReply/openai"}),
    ("stepfunctions", "get_activity_task", {"activityArn": MACHINE.replace("stateMachine", "activity")}),
    ("dynamodb", "put_item", {"TableName": "Turns", "Item": {"conversation_id": {"S": "c"}}}),
]


def test_aws_gets_the_consoles_reads_and_nothing_else():
    clients = {service: _client(service) for service in ("dynamodb", "stepfunctions", "secretsmanager")}
    sent = set()
    for service, method, request in CONSOLE_READS:
        with pytest.raises(EndpointConnectionError):  # sent: nothing answers there
            getattr(clients[service], method)(**request)
        sent.add(clients[service].meta.method_to_api_mapping[method])
    for service, method, request in NOT_THE_CONSOLES:
        with pytest.raises(WriteRefused):
            getattr(clients[service], method)(**request)
    assert sent == READS
