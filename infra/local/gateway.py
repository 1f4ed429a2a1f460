"""A local API Gateway: turns HTTP requests into REST API proxy events for the handler of
the route (functions/registry.py's endpoints: the webhook, the status callbacks), run
in-process as Lambda would, and its result back into HTTP."""

from __future__ import annotations

import base64
import time
import uuid
from typing import Any

from werkzeug.datastructures import Headers
from werkzeug.exceptions import HTTPException
from werkzeug.routing import Map, Rule
from werkzeug.wrappers import Request, Response

from functions.registry import ENDPOINTS, WEBHOOK
from infra.local.lambdas import invoke

STAGE = "local"


# API Gateway's resources (`/twilio/status/{conversation}/...`) as werkzeug rules.
ROUTES = Map(
    [
        Rule(
            route.replace("{", "<").replace("}", ">"), endpoint=(function.logical_id, route), methods=["POST"]
        )
        for function in ENDPOINTS
        for route in function.routes
    ]
)


def route_of(request: Request) -> tuple[str, str, dict[str, str] | None]:
    """(function, API resource, path parameters) for the request; the webhook's function
    for a path no resource matches (it answers 404)."""
    try:
        (function, resource), parameters = ROUTES.bind_to_environ(request.environ).match()
    except HTTPException:
        return WEBHOOK.logical_id, request.path, None
    return function, resource, dict(parameters) or None


def proxy_event(request: Request) -> dict[str, Any]:
    headers = dict(request.headers.items())
    headers.setdefault("X-Forwarded-Proto", request.scheme)
    raw = request.get_data()
    try:
        body, encoded = raw.decode("utf-8"), False
    except UnicodeDecodeError:
        body, encoded = base64.b64encode(raw).decode(), True
    query = dict(request.args.items()) or None
    _, resource, parameters = route_of(request)
    return {
        "resource": resource,
        "path": request.path,
        "httpMethod": request.method,
        "headers": headers,
        "multiValueHeaders": {k: request.headers.getlist(k) for k in headers},
        "queryStringParameters": query,
        "multiValueQueryStringParameters": {k: request.args.getlist(k) for k in query} if query else None,
        "pathParameters": parameters,
        "stageVariables": None,
        "body": body,
        "isBase64Encoded": encoded,
        "requestContext": {
            "resourcePath": resource,
            "httpMethod": request.method,
            "path": request.path,  # a custom domain without a stage prefix
            "stage": STAGE,
            "requestId": str(uuid.uuid4()),
            "requestTimeEpoch": int(time.time() * 1000),
            "identity": {"sourceIp": request.remote_addr},
        },
    }


class Gateway:
    def __init__(self, max_body_bytes: int = 10 * 1024 * 1024) -> None:
        self.max_body_bytes = max_body_bytes  # API Gateway's payload limit

    def __call__(self, environ: dict[str, Any], start_response: Any) -> Any:
        request = Request(environ)
        if (request.content_length or 0) > self.max_body_bytes:
            return Response('{"message":"Request Too Long"}', 413)(environ, start_response)
        result, function_error = invoke(route_of(request)[0], proxy_event(request))
        if function_error:
            response = Response('{"message": "Internal server error"}', 502, content_type="application/json")
        else:
            body = result.get("body") or ""
            if result.get("isBase64Encoded"):
                body = base64.b64decode(body)
            headers = Headers(result.get("headers") or {})
            for name, values in (result.get("multiValueHeaders") or {}).items():
                headers.setlist(name, values)
            response = Response(body, result.get("statusCode", 200), headers=headers)
        return response(environ, start_response)
