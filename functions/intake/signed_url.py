"""The URL a Twilio request's signature covers: the URL Twilio called, rebuilt from the
request as API Gateway hands it over, and the URLs Twilio may have signed for it (with and
without our connection overrides), for the webhook and the status callbacks alike: the
handlers rebuild the URL (`request_url`), and admission.py checks the signature against
each URL Twilio may have signed (`signed_urls`; docs/adr/0029-the-url-a-signature-covers.md)."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from functions.intake.settings import EndpointSettings, PublicUrlSettings
from functions.public_url import with_overrides


def request_url(event: dict[str, Any]) -> str:
    """The URL Twilio called, which its signature covers: the configured public base URL
    (the stack sets it) and the API resource (`/whatsapp`, `/sms`, the status callback's
    with its path parameters filled in); without one, the Host header and the request path
    (which includes the stage on the execute-api domain). Forwarded headers count only
    when WEBHOOK_TRUST_FORWARDED_HEADERS is on. Then the query string: as received when the
    event carries it raw (`rawQueryString`, HTTP API events); a REST API event carries only
    the parsed parameters, re-encoded here in the order received (see
    docs/adr/0029-the-url-a-signature-covers.md).
    Never a fragment: HTTP does not send it, and a fragment on the configured base URL
    (connection overrides) is not part of the path: signed_urls gives the URL with and
    without the overrides."""
    base = PublicUrlSettings.get().public_base().url
    if base:
        path = _filled(event.get("resource") or event.get("path") or "/", event.get("pathParameters"))
    else:
        headers = {k.lower(): v for k, v in (event.get("headers") or {}).items()}
        scheme, host = "https", headers.get("host", "")
        if EndpointSettings.get().webhook_trust_forwarded_headers:
            scheme = headers.get("x-forwarded-proto", scheme)
            host = headers.get("x-forwarded-host", host)
        base = f"{scheme}://{host}"
        path = (event.get("requestContext") or {}).get("path") or event.get("path") or "/"
    return f"{base}{path}{_query(event)}"


def _filled(resource: str, parameters: dict[str, str] | None) -> str:
    """The resource (`/twilio/status/{conversation}/...`) with its path parameters as
    requested: API Gateway (REST) passes them on without decoding them, so this is the
    path Twilio called, percent-encoding included (see
    docs/adr/0052-the-local-gateway-hands-over-the-events-api.md)."""
    for name, value in (parameters or {}).items():
        resource = resource.replace("{" + name + "}", value)
    return resource


def _query(event: dict[str, Any]) -> str:
    raw = event.get("rawQueryString")
    if raw:
        return f"?{raw}"
    multi = event.get("multiValueQueryStringParameters") or {
        k: [v] for k, v in (event.get("queryStringParameters") or {}).items()
    }
    pairs = [(name, value) for name, values in multi.items() for value in values]
    return f"?{urlencode(pairs)}" if pairs else ""


def signed_urls(url: str) -> list[str]:
    """The URLs Twilio may have signed for a request to `url`: the URL it was given carries
    our connection overrides as its fragment (`#rc=5&rp=all`,
    https://www.twilio.com/docs/usage/webhooks/webhooks-connection-overrides), and Twilio
    signs "the exact URL your application supplied"
    (https://www.twilio.com/docs/usage/webhooks/webhooks-security) without saying whether
    that includes the fragment, which HTTP never sends: both are accepted."""
    signed = with_overrides(url, PublicUrlSettings.get().public_base().overrides)
    return [url, signed] if signed != url else [url]
