"""A business's tool endpoint, called over real HTTP on loopback: what it receives (the
body, the Idempotency-Key, a signature it can check), and what each kind of answer, or
none, means for the call."""

from __future__ import annotations

import hashlib
import hmac
import json
import socket
from collections.abc import Iterator

import pytest

from functions.assistant import tool_endpoints
from tests.support.tool_endpoint import ToolEndpoint

SECRET = "tool-signing-secret-for-tests"


@pytest.fixture
def endpoint() -> Iterator[ToolEndpoint]:
    served = ToolEndpoint()
    yield served
    served.close()


def _call(
    url: str, loopback_http: bool = True, timeout: float = 2, max_bytes: int = 4096
) -> tool_endpoints.EndpointAnswer:
    body = json.dumps({"name": "lookup_order", "arguments": {"order": "12345"}}).encode()
    return tool_endpoints.call(
        url,
        body,
        idempotency_key="k" * 32,
        secret=SECRET,
        timeout=timeout,
        max_bytes=max_bytes,
        loopback_http=loopback_http,
    )


def test_the_endpoint_gets_the_body_the_key_and_a_signature_it_can_check(endpoint):
    answer = _call(endpoint.url)

    assert answer.outcome == "answered" and json.loads(answer.output) == {"status": "shipped"}
    [request] = endpoint.received
    assert request["headers"]["Idempotency-Key"] == "k" * 32
    expected = "sha256=" + hmac.new(SECRET.encode(), request["body"], hashlib.sha256).hexdigest()
    assert hmac.compare_digest(request["headers"][tool_endpoints.SIGNATURE_HEADER], expected)
    assert json.loads(request["body"])["arguments"] == {"order": "12345"}


def test_a_5xx_or_no_answer_in_time_is_in_doubt_a_4xx_refused(endpoint):
    endpoint.status = 503
    assert _call(endpoint.url).outcome == "in_doubt"
    endpoint.status = 404
    assert _call(endpoint.url).outcome == "refused"
    endpoint.status, endpoint.delay = 200, 1.5
    assert _call(endpoint.url, timeout=0.5).outcome == "in_doubt"
    assert len(endpoint.received) == 3  # each was sent


def test_an_answer_too_long_or_not_json_is_refused(endpoint):
    endpoint.answer = json.dumps({"text": "x" * 5000}).encode()
    assert "over 4096 bytes" in _call(endpoint.url).output
    endpoint.answer = b"<html>not json</html>"
    assert _call(endpoint.url).outcome == "refused"


def test_no_listener_is_not_made_so_it_may_be_tried_again():
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        port = unused.getsockname()[1]
    assert _call(f"http://127.0.0.1:{port}/tool").outcome == "not_made"


@pytest.mark.parametrize(
    "url",
    [
        "https://10.0.0.8/tool",
        "https://169.254.169.254/latest/meta-data",  # the instance metadata service
        "https://[fd00::1]/tool",
        "https://100.64.0.1/tool",
        "https://localhost/tool",
    ],
)
def test_a_private_link_local_or_loopback_address_is_never_connected_to(url):
    answer = _call(url, loopback_http=False)
    assert answer.outcome == "refused" and "public" in answer.output


def test_loopback_over_http_only_where_allowed(endpoint):
    assert _call(endpoint.url, loopback_http=False).outcome == "refused"
    assert endpoint.received == []
