"""The local gateway's REST API proxy events have the shape API Gateway gives them (see
docs/adr/0052-the-local-gateway-hands-over-the-events-api.md); that the
handlers read them right is shown over HTTP (tests/e2e/delivery/test_status_callbacks.py)."""

from __future__ import annotations

import base64
from typing import Any

import pytest
from werkzeug.test import Client, EnvironBuilder
from werkzeug.wrappers import Request

from infra.local.gateway import STAGE, Gateway, proxy_event, route_of

FORM = "application/x-www-form-urlencoded"
CALLBACK = "/twilio/status/{conversation}/{window}/{message}"


def _event(path: str, data: bytes | str = "MessageStatus=sent", **kwargs: Any) -> dict[str, Any]:
    binary = kwargs.pop("binary_media_types", ())
    headers = {"Content-Type": kwargs.pop("content_type", FORM), **kwargs.pop("headers", {})}
    builder = EnvironBuilder(
        path=path, base_url="https://api.example", method="POST", data=data, headers=headers, **kwargs
    )
    return proxy_event(Request(builder.get_environ()), binary_media_types=binary)


def test_on_the_stage_url_the_stage_is_in_the_request_context_only_and_parameters_stay_encoded():
    event = _event(f"/{STAGE}/twilio/status/whatsapp%3A%2B1555%20x/1795-ab/0")

    assert event["resource"] == event["requestContext"]["resourcePath"] == CALLBACK
    assert event["path"] == "/twilio/status/whatsapp%3A%2B1555%20x/1795-ab/0"
    assert event["requestContext"]["path"] == f"/{STAGE}/twilio/status/whatsapp%3A%2B1555%20x/1795-ab/0"
    assert event["requestContext"]["stage"] == STAGE == "prod"
    assert event["pathParameters"] == {
        "conversation": "whatsapp%3A%2B1555%20x",
        "window": "1795-ab",
        "message": "0",
    }


def test_at_the_root_as_on_a_custom_domain_both_paths_are_the_path_requested():
    event = _event("/twilio/status/a%3Ab/w/0")

    assert event["path"] == event["requestContext"]["path"] == "/twilio/status/a%3Ab/w/0"
    assert event["pathParameters"]["conversation"] == "a%3Ab"
    assert _event("/whatsapp")["pathParameters"] is None


def test_a_form_is_text_unless_its_type_is_a_binary_media_type():
    as_deployed = _event("/whatsapp", "Body=caf%C3%A9")
    binary = _event("/whatsapp", "Body=caf%C3%A9", binary_media_types=(FORM,))
    other_types = _event("/whatsapp", "Body=x", binary_media_types=("image/*", "application/octet-stream"))
    not_utf8 = _event("/whatsapp", b"Body=\xff")

    assert (as_deployed["body"], as_deployed["isBase64Encoded"]) == ("Body=caf%C3%A9", False)
    assert binary["isBase64Encoded"] is True and base64.b64decode(binary["body"]) == b"Body=caf%C3%A9"
    assert (other_types["body"], other_types["isBase64Encoded"]) == ("Body=x", False)
    assert (not_utf8["body"], not_utf8["isBase64Encoded"]) == ("Body=\ufffd", False)
    assert _event("/whatsapp", "")["body"] is None


def test_query_strings_and_headers_have_single_and_multi_value_maps_or_none():
    plain = _event("/whatsapp")
    queried = _event("/whatsapp", query_string="a=1&a=2&b=3", headers={"X-Twilio-Signature": "s"})

    assert plain["queryStringParameters"] is None and plain["multiValueQueryStringParameters"] is None
    assert queried["queryStringParameters"] == {"a": "2", "b": "3"}  # the last value
    assert queried["multiValueQueryStringParameters"] == {"a": ["1", "2"], "b": ["3"]}
    assert queried["headers"]["X-Twilio-Signature"] == "s"
    assert queried["multiValueHeaders"]["X-Twilio-Signature"] == ["s"]
    assert queried["headers"]["X-Forwarded-Proto"] == "https"


@pytest.mark.parametrize(
    ("method", "path"),
    [("POST", "/nowhere"), ("GET", "/whatsapp"), ("POST", "/twilio/status/a/b"), ("POST", "/local/sms")],
)
def test_off_the_routes_api_gateway_answers_403_missing_authentication_token(method, path):
    answer = Client(Gateway()).open(path, method=method)

    assert answer.status_code == 403
    assert answer.get_json() == {"message": "Missing Authentication Token"}


def test_a_trailing_slash_still_matches_its_resource():
    assert route_of("/whatsapp/") == ("Webhook", "/whatsapp", None)
    assert route_of("/twilio/status//w/0") is None  # an empty parameter matches nothing
