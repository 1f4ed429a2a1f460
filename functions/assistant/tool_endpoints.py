"""A business's tool endpoint, called once per claimed call (functions/states/call_tools.py).

The request is a POST of JSON `{"name", "arguments", "call_id", "conversation"}` with:
- `Idempotency-Key`: the same for every attempt at the same call (functions/assistant/rules/tools.py);
- `X-Burst-Reply-Signature: sha256=<hex>`: HMAC-SHA256 of the exact body under the tenant's
  tool-signing secret, so the business can check the call comes from this service
  (docs/assistants.md shows the check).
Where it goes: the profile's `url` only, https to a public address. The host is resolved
and every address it resolves to checked before connecting (no private, loopback,
link-local, shared or reserved address: a name that resolves to one is refused), and the
connection is made to the checked address, so that a second resolution cannot lead
elsewhere. Redirects are not followed. The local stack allows http to a loopback address
(TOOL_LOOPBACK_HTTP). The answer must be JSON of at most TOOL_MAX_ANSWER_BYTES.

The outcome says what the model may be told and whether the call may have been made:
`answered`, `refused` (the endpoint or the address said no: the call was not made, or made
and refused), `not_made` (no connection: safe to try again, side effects or not) and
`in_doubt` (sent, no answer or a 5xx/429: it may have been carried out)."""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import json
import socket
import time
from dataclasses import dataclass
from typing import Literal
from urllib.parse import urlsplit

import urllib3
from urllib3.exceptions import ConnectTimeoutError, HTTPError, NewConnectionError

from functions.assistant.assistant_profile import is_loopback_host
from functions.observability import milliseconds

SIGNATURE_HEADER = "X-Burst-Reply-Signature"
Outcome = Literal["answered", "refused", "not_made", "in_doubt"]


@dataclass(frozen=True)
class EndpointAnswer:
    outcome: Outcome
    output: str  # what the model is told: the endpoint's JSON, or why there is none
    status: int | None = None


def signature(secret: str, body: bytes) -> str:
    """The signature header's value: `sha256=` and the body's HMAC-SHA256 under `secret`."""
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def call(
    url: str,
    body: bytes,
    *,
    idempotency_key: str,
    secret: str,
    timeout: float,
    max_bytes: int,
    loopback_http: bool,
) -> EndpointAnswer:
    parts = urlsplit(url)
    host = parts.hostname or ""
    if parts.scheme == "http" and not (loopback_http and is_loopback_host(host)):
        return EndpointAnswer("refused", _error("the tool's url is not https"))
    if parts.scheme not in ("http", "https"):
        return EndpointAnswer("refused", _error("the tool's url is not https"))
    port = parts.port or (443 if parts.scheme == "https" else 80)
    address = _checked_address(host, port, loopback_http)
    if address is None:
        return EndpointAnswer("refused", _error("the tool's address is not a public one"))
    headers = {
        "Host": parts.netloc.rpartition("@")[2],
        "Content-Type": "application/json",
        "Accept": "application/json",
        "Idempotency-Key": idempotency_key,
        SIGNATURE_HEADER: signature(secret, body),
        "User-Agent": "burst-reply-tools/1",
    }
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    started = time.monotonic()
    try:
        return _answer(_send(parts.scheme, address, port, host, path, headers, body, timeout), max_bytes)
    except (NewConnectionError, ConnectTimeoutError):
        return EndpointAnswer("not_made", _error("the tool could not be reached"))
    except HTTPError:  # sent, and no (whole) answer: it may have been carried out
        return EndpointAnswer("in_doubt", _error("the tool did not answer in time"))
    finally:
        milliseconds("ToolLatency", (time.monotonic() - started) * 1000)


def _send(
    scheme: str,
    address: str,
    port: int,
    host: str,
    path: str,
    headers: dict[str, str],
    body: bytes,
    timeout: float,
) -> tuple[int, bytes]:
    pool: urllib3.HTTPConnectionPool
    budget = urllib3.Timeout(connect=min(timeout, 5.0), read=timeout)
    if scheme == "https":
        pool = urllib3.HTTPSConnectionPool(
            address, port, timeout=budget, retries=False, server_hostname=host, assert_hostname=host
        )
    else:
        pool = urllib3.HTTPConnectionPool(address, port, timeout=budget, retries=False)
    with pool:
        response = pool.urlopen(
            "POST", path, body=body, headers=headers, redirect=False, preload_content=False, retries=False
        )
        try:
            return response.status, response.read(_MAX_READ)
        finally:
            response.release_conn()


_MAX_READ = 65_537  # the largest TOOL_MAX_ANSWER_BYTES, and one byte to tell it was larger


def _answer(sent: tuple[int, bytes], max_bytes: int) -> EndpointAnswer:
    status, content = sent
    if status == 429 or status >= 500:
        return EndpointAnswer("in_doubt", _error(f"the tool answered HTTP {status}"), status)
    if status >= 300:
        return EndpointAnswer("refused", _error(f"the tool answered HTTP {status}"), status)
    if len(content) > max_bytes:
        return EndpointAnswer("refused", _error(f"the tool's answer is over {max_bytes} bytes"), status)
    try:
        json.loads(content)
    except ValueError:
        return EndpointAnswer("refused", _error("the tool's answer is not JSON"), status)
    return EndpointAnswer("answered", content.decode(), status)


def _checked_address(host: str, port: int, loopback_http: bool) -> str | None:
    """The address to connect to: the first the host resolves to, if every one of them is
    public (or loopback, where allowed); None otherwise."""
    try:
        found = socket.getaddrinfo(host.strip("[]"), port, type=socket.SOCK_STREAM)
    except OSError:
        return None
    addresses = [str(info[4][0]) for info in found]
    if not addresses or not all(_allowed(a, loopback_http) for a in addresses):
        return None
    return addresses[0]


def _allowed(address: str, loopback_http: bool) -> bool:
    ip = ipaddress.ip_address(address.split("%")[0])
    if ip.is_loopback:
        return loopback_http
    return ip.is_global and not ip.is_multicast


def _error(reason: str) -> str:
    return json.dumps({"error": reason})
