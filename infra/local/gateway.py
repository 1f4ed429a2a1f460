"""A local API Gateway: turns HTTP requests into the REST API (v1) Lambda proxy events that
the deployed API hands our endpoints (functions/registry.py's routes: the webhook, the
status callbacks), runs the route's handler in-process as Lambda would, and turns its
result back into HTTP. What it reproduces, with the sources, is in
docs/adr/0052-the-local-gateway-hands-over-the-events-api.md:

- the API answers on its stage URL (`/prod/whatsapp`, as on the execute-api domain: the
  stage is in `requestContext.path` and `requestContext.stage`, not in `path`) and at the
  root (as a custom domain mapped to the stage, where both paths are the same);
- `path` is the path as requested, still percent-encoded, and so are `pathParameters`;
  `resource` is the resource's template;
- the body is text unless its Content-Type is one of the API's binary media types (the
  deployed API has none: a form arrives as text); then base64, `isBase64Encoded: true`;
- query parameters and headers: the last value of each in the single-value maps, every
  value in the multi-value ones; None when there are none;
- no resource or method matches: 403 `Missing Authentication Token`; a function error:
  502 `Internal server error`."""

from __future__ import annotations

import base64
import time
import uuid
from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qsl, quote

from werkzeug.datastructures import Headers
from werkzeug.wrappers import Request, Response

from functions.registry import ENDPOINTS, WEBHOOK
from infra.local.lambdas import invoke

STAGE = "prod"  # the stage infra/constructs/api.py deploys
BINARY_MEDIA_TYPES: tuple[str, ...] = ()  # the deployed API's binaryMediaTypes (none)
# (function, resource) of every POST method of the API.
RESOURCES = tuple((function.logical_id, route) for function in ENDPOINTS for route in function.routes)


def raw_path(request: Request) -> str:
    """The path as requested, percent-encoding and all (WSGI's PATH_INFO is decoded)."""
    uri = request.environ.get("RAW_URI") or request.environ.get("REQUEST_URI")
    return uri.partition("?")[0] if uri else quote(request.path)


def route_of(path: str) -> tuple[str, str, dict[str, str] | None] | None:
    """(function, resource, path parameters) of the resource that `path` (without the
    stage) matches, the parameters as they are in the path; None if none matches."""
    segments = path.removesuffix("/").split("/")[1:]
    for function, resource in RESOURCES:
        template = resource.split("/")[1:]
        if len(template) != len(segments):
            continue
        parameters = {}
        for part, segment in zip(template, segments, strict=True):
            if part.startswith("{") and part.endswith("}") and segment:
                parameters[part[1:-1]] = segment
            elif part != segment:
                break
        else:
            return function, resource, parameters or None
    return None


def _staged(path: str) -> tuple[str, str]:
    """(path, requestContext.path): the stage taken off a stage URL's path, as the
    execute-api domain does; the path itself otherwise (a custom domain)."""
    prefix = f"/{STAGE}/"
    return (path[len(prefix) - 1 :], path) if path.startswith(prefix) else (path, path)


def _matches(content_type: str | None, media_types: tuple[str, ...]) -> bool:
    kind = (content_type or "").split(";")[0].strip().lower()
    family = kind.split("/")[0] + "/*"
    return bool(kind) and any(t in ("*/*", kind, family) for t in media_types)


def _body(request: Request, binary_media_types: tuple[str, ...]) -> tuple[str | None, bool]:
    raw = request.get_data()
    if not raw:
        return None, False
    if _matches(request.content_type, binary_media_types):
        return base64.b64encode(raw).decode(), True
    return raw.decode("utf-8", errors="replace"), False


def proxy_event(request: Request, binary_media_types: tuple[str, ...] = BINARY_MEDIA_TYPES) -> dict[str, Any]:
    """The REST API proxy event of `request` (its route's, or none matched: resource and
    pathParameters None)."""
    path, context_path = _staged(raw_path(request))
    _, resource, parameters = route_of(path) or (None, None, None)
    headers = Headers(request.headers)
    headers.setdefault("X-Forwarded-For", request.remote_addr or "")
    headers.setdefault("X-Forwarded-Port", str(request.environ.get("SERVER_PORT", "")))
    headers.setdefault("X-Forwarded-Proto", request.scheme)
    names = list(dict.fromkeys(headers.keys()))
    queries = {name: values for name, values in request.args.lists()}
    body, encoded = _body(request, binary_media_types)
    return {
        "resource": resource,
        "path": path,
        "httpMethod": request.method,
        "headers": {name: headers.getlist(name)[-1] for name in names} or None,
        "multiValueHeaders": {name: headers.getlist(name) for name in names} or None,
        "queryStringParameters": {name: values[-1] for name, values in queries.items()} or None,
        "multiValueQueryStringParameters": queries or None,
        "pathParameters": parameters,
        "stageVariables": None,
        "body": body,
        "isBase64Encoded": encoded,
        "requestContext": {
            "resourcePath": resource,
            "httpMethod": request.method,
            "path": context_path,
            "stage": STAGE,
            "protocol": request.environ.get("SERVER_PROTOCOL", "HTTP/1.1"),
            "domainName": request.host,
            "requestId": str(uuid.uuid4()),
            "requestTimeEpoch": int(time.time() * 1000),
            "identity": {"sourceIp": request.remote_addr, "userAgent": request.user_agent.string or None},
        },
    }


def _aws_error(status: int, message: str) -> Response:
    return Response(f'{{"message":"{message}"}}', status, content_type="application/json")


class Gateway:
    def __init__(
        self,
        max_body_bytes: int = 10 * 1024 * 1024,
        binary_media_types: tuple[str, ...] = BINARY_MEDIA_TYPES,
        inbound: Callable[[dict[str, str]], None] | None = None,
    ) -> None:
        self.max_body_bytes = max_body_bytes  # API Gateway's payload limit
        self.binary_media_types = binary_media_types
        # Told of each message posted to the webhook (the Twilio stand-in: Twilio received
        # the message before it posted the webhook).
        self.inbound = inbound

    def __call__(self, environ: dict[str, Any], start_response: Any) -> Any:
        return self.answer(Request(environ))(environ, start_response)

    def answer(self, request: Request) -> Response:
        if (request.content_length or 0) > self.max_body_bytes:
            return _aws_error(413, "Request Too Long")
        route = route_of(_staged(raw_path(request))[0])
        if route is None or request.method != "POST":
            return _aws_error(403, "Missing Authentication Token")
        if self.inbound is not None and route[0] == WEBHOOK.logical_id:
            form = dict(parse_qsl(request.get_data(as_text=True)))
            if form.get("MessageSid"):
                self.inbound(form)
        result, function_error = invoke(route[0], proxy_event(request, self.binary_media_types))
        if function_error:
            return _aws_error(502, "Internal server error")
        body: str | bytes = result.get("body") or ""
        accept = request.headers.get("Accept", "").split(",")[0]  # the first: what AWS looks at
        if result.get("isBase64Encoded") and _matches(accept, self.binary_media_types):
            body = base64.b64decode(body)  # else passed on as the base64 text it is
        headers = Headers(result.get("headers") or {})
        for name, values in (result.get("multiValueHeaders") or {}).items():
            headers.setlist(name, values)
        return Response(body, result.get("statusCode", 200), headers=headers)
