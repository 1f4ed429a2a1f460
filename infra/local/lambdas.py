"""Runs our Lambda handlers in-process where moto would need Docker.

`POST /2015-03-31/functions/<name>/invocations` (on moto's port, passed on to this process's
`LambdaRuntime`) calls the handler registered under that name (functions.registry, the same
registry the CDK stack uses);
an exception becomes a Lambda function error (`X-Amz-Function-Error`, `errorType` = the
exception's class name), which the state machine's Retry and Catch match by name.

An invocation that runs past its function's timeout is reported as Lambda reports one that
it stopped there, `Sandbox.Timedout` (the errorType of a timed-out invocation), whatever
it returned: its work up to then is done, its answer is lost. (In-process, the handler
cannot be stopped; tests that need a task to die at a given point raise `LambdaTimedOut`.)"""

from __future__ import annotations

import json
import re
import time
import traceback
import uuid
import warnings
from dataclasses import dataclass, field
from typing import Any

from aws_lambda_powertools.metrics.functions import is_metrics_disabled
from werkzeug.wrappers import Request, Response

from functions.observability import metrics
from functions.registry import BY_NAME
from infra.local.aws_calls import made_by

# Locally, metrics are not published (POWERTOOLS_METRICS_DISABLED), and Powertools warns on
# every invocation that emitted none: noise in `make demo` and `make local`.
warnings.filterwarnings("ignore", message="No application metrics to publish")

_INVOKE = re.compile(r"^/2015-03-31/functions/(?P<name>[^/]+)/invocations$")


TIMED_OUT = "Sandbox.Timedout"


class LambdaTimedOut(Exception):
    """Raised (by a test) inside a handler: the invocation stops there, as if Lambda had
    stopped it at its timeout, and is reported as `Sandbox.Timedout`."""


@dataclass
class LocalContext:
    """What a handler reads from the Lambda context."""

    function_name: str
    timeout_seconds: int
    memory_limit_in_mb: int = 256
    function_version: str = "$LATEST"
    aws_request_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    _deadline: float = 0.0

    def __post_init__(self) -> None:
        self.invoked_function_arn = f"arn:aws:lambda:us-east-1:123456789012:function:{self.function_name}"
        self.log_group_name = f"/aws/lambda/{self.function_name}"
        self.log_stream_name = "local"
        self._deadline = time.monotonic() + self.timeout_seconds

    def get_remaining_time_in_millis(self) -> int:
        return max(0, int((self._deadline - time.monotonic()) * 1000))


def invoke(name: str, payload: Any) -> tuple[Any, str | None]:
    """Call the named function's handler: (result, None) or (error payload, "Unhandled")."""
    definition = BY_NAME[name.rsplit(":", 1)[-1]]
    context = LocalContext(definition.logical_id, definition.timeout_seconds, definition.memory_mb)
    try:
        with made_by(definition.logical_id, payload):  # its AWS calls, for infra.iam to evaluate
            result = definition.load()(payload, context)
        if context.get_remaining_time_in_millis() <= 0:
            raise LambdaTimedOut("ran past its timeout")
        return result, None
    except LambdaTimedOut:
        after = f"Task timed out after {definition.timeout_seconds}.00 seconds"
        message = f"RequestId: {context.aws_request_id} Error: {after}"
        return {"errorType": TIMED_OUT, "errorMessage": message}, "Unhandled"
    except Exception as error:  # reported to the caller as Lambda does
        return {
            "errorType": type(error).__name__,
            "errorMessage": str(error),
            "stackTrace": traceback.format_exception(error)[-5:],
        }, "Unhandled"
    finally:
        # With POWERTOOLS_METRICS_DISABLED, Powertools keeps the metrics it did not print
        # and prints them all once 100 pile up; locally, drop them after each invocation.
        if is_metrics_disabled():
            metrics.clear_metrics()


class LambdaRuntime:
    """The Lambda Invoke API of this process: `POST /2015-03-31/functions/<name>/invocations`
    runs the named handler here (moto's interpreter, in the moto process, invokes a task on
    moto's port, which passes the invocation on to this: infra/local/moto_process.py)."""

    def __call__(self, environ: dict[str, Any], start_response: Any) -> Any:
        return self.answer(Request(environ))(environ, start_response)

    @staticmethod
    def answer(request: Request) -> Response:
        match = _INVOKE.match(request.path)
        if request.method != "POST" or not match:
            body = {"Type": "User", "Message": f"Not a Lambda invocation: {request.method} {request.path}"}
            return Response(json.dumps(body), 400, {"x-amzn-ErrorType": "InvalidRequestContentException"})
        name = match.group("name").split(":function:")[-1].split(":")[0]
        if name not in BY_NAME:
            body = {"Type": "User", "Message": f"Function not found: {name}"}
            return Response(json.dumps(body), 404, {"x-amzn-ErrorType": "ResourceNotFoundException"})
        raw = request.get_data(as_text=True)
        result, function_error = invoke(name, json.loads(raw) if raw else {})
        headers = {"Content-Type": "application/json", "X-Amz-Executed-Version": "$LATEST"}
        if function_error:
            headers["X-Amz-Function-Error"] = function_error
        return Response(json.dumps(result), 200, headers)
