"""moto in a process of its own, so that DynamoDB, Step Functions' interpreter and Secrets
Manager run on another core than our handlers (one Python process runs Python code on one
core at a time).

The handlers stay in the main process (tests change their modules and settings there, and
infra/local/aws_calls.py records their AWS calls there). moto's interpreter invokes a Lambda
task on moto's own port (`MOTO_PORT`); this process passes each such invocation on, over
HTTP, to the Lambda runtime of the main process (infra/local/lambdas.py `LambdaRuntime`)
and answers with what it answered, `X-Amz-Function-Error` and all.

`POST /_local/retry_delay_scale` `{"scale": 0.01}` makes the interpreter wait that share of
each Retry's delay (IntervalSeconds, BackoffRate, MaxDelaySeconds and jitter as written in
the ASL; 1: as written, the default), so that a test can spend a run's every retry in a
moment. The state machine, its Retry and its attempts stay as deployed.

`python -m infra.local.moto_process HOST PORT RUNTIME_URL` serves moto on HOST:PORT (0: any
free port), prints the port it listens on, and runs until it is stopped or its standard
input closes (the main process ended, however it ended). `MotoProcess` starts and stops it."""

from __future__ import annotations

import atexit
import json
import logging
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import IO, Any

_INVOKE = re.compile(r"^/2015-03-31/functions/(?P<name>[^/]+)/invocations$")
# What a Lambda Invoke answer carries that the interpreter reads.
_ANSWER_HEADERS = ("Content-Type", "X-Amz-Function-Error", "X-Amz-Executed-Version", "x-amzn-ErrorType")
ROOT = Path(__file__).resolve().parents[2]
RETRY_DELAY_SCALE_PATH = "/_local/retry_delay_scale"


class Forwarder:
    """moto's WSGI app, with Lambda invocations passed on to the main process's runtime.

    Also serializes DynamoDB requests: moto's in-memory tables are not thread-safe (a
    transaction copies a table while another request writes it, and fails with
    "dictionary changed size during iteration"), which DynamoDB itself never does."""

    def __init__(self, app: Any, runtime_url: str) -> None:
        import urllib3

        self.app = app
        self.runtime_url = runtime_url.rstrip("/")
        self._dynamodb = threading.Lock()
        # A handler may run as long as its timeout (the reconciler's: minutes): no read timeout.
        self._pool = urllib3.PoolManager(maxsize=64, retries=False, timeout=urllib3.Timeout(connect=10))

    def __call__(self, environ: dict[str, Any], start_response: Any) -> Any:
        if environ.get("PATH_INFO") == RETRY_DELAY_SCALE_PATH:
            return self._set_retry_delay_scale(environ, start_response)
        if environ.get("HTTP_X_AMZ_TARGET", "").startswith("DynamoDB_"):
            with self._dynamodb:
                return list(self.app(environ, start_response))
        if environ.get("REQUEST_METHOD") == "POST" and _INVOKE.match(environ.get("PATH_INFO", "")):
            return self._forward(environ, start_response)
        return self.app(environ, start_response)

    def _set_retry_delay_scale(self, environ: dict[str, Any], start_response: Any) -> Any:
        from werkzeug.wrappers import Request, Response

        try:
            scale = float(json.loads(Request(environ).get_data())["scale"])
        except (TypeError, KeyError, ValueError):
            scale = -1
        if 0 <= scale <= 1:
            _RetryClock.scale = scale
            answer: dict[str, object] = {"scale": scale}
            status = 200
        else:
            answer, status = {"error": 'send {"scale": S}, 0 <= S <= 1'}, 400
        response = Response(json.dumps(answer), status, content_type="application/json")
        return response(environ, start_response)

    def _forward(self, environ: dict[str, Any], start_response: Any) -> Any:
        from werkzeug.wrappers import Request, Response

        request = Request(environ)
        try:
            answer = self._pool.request(
                "POST",
                self.runtime_url + request.full_path.rstrip("?"),
                body=request.get_data(),
                headers={"Content-Type": "application/json"},
            )
        except Exception as error:  # the main process is gone or stopping: Lambda's 5xx
            body = json.dumps({"Type": "Service", "Message": f"Lambda runtime unreachable: {error}"})
            headers = {"Content-Type": "application/json", "x-amzn-ErrorType": "ServiceException"}
            return Response(body, 500, headers)(environ, start_response)
        headers = {name: answer.headers[name] for name in _ANSWER_HEADERS if name in answer.headers}
        return Response(answer.data, answer.status, headers)(environ, start_response)


class _RetryClock:
    """`time` as moto's Retry sees it (it only sleeps): each delay times `scale`."""

    scale = 1.0

    @classmethod
    def sleep(cls, seconds: float) -> None:
        time.sleep(seconds * cls.scale)


def serve(host: str, port: int, runtime_url: str, announce: IO[str]) -> None:
    from moto.moto_server.werkzeug_app import DomainDispatcherApplication, create_backend_app
    from moto.stepfunctions.parser.asl.component.common.retry import retrier_decl
    from werkzeug.serving import make_server

    from infra.local import event_rules, moto_speedups

    moto_speedups.install()
    event_rules.install(runtime_url)  # events to Lambda targets, as EventBridge delivers them
    retrier_decl.time = _RetryClock  # type: ignore[assignment]

    app = Forwarder(DomainDispatcherApplication(create_backend_app), runtime_url)
    server = make_server(host, port, app, threaded=True)
    # moto's interpreter invokes Lambda tasks on this port.
    os.environ["MOTO_PORT"] = str(server.server_port)
    print(server.server_port, file=announce, flush=True)
    server.serve_forever()


def _exit_when_orphaned() -> None:
    """The main process holds our standard input open: when it closes, we are done."""
    sys.stdin.read()
    os._exit(0)


def main(argv: list[str]) -> int:
    host, port, runtime_url = argv
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the main process's to handle
    logging.getLogger("werkzeug").setLevel(logging.WARNING)  # one line per AWS call: noise
    threading.Thread(target=_exit_when_orphaned, daemon=True).start()
    serve(host, int(port), runtime_url, sys.stdout)
    return 0


class MotoProcess:
    """Starts moto in a child process and stops it: on stop(), and at the latest when this
    interpreter exits (or, killed, when the child sees its standard input close)."""

    def __init__(self, host: str, port: int, runtime_url: str) -> None:
        self.host, self.requested_port, self.runtime_url = host, port, runtime_url
        self.process: subprocess.Popen[str] | None = None
        self.port = self.pid = 0

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def start(self) -> MotoProcess:
        path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
        command = [sys.executable, "-m", "infra.local.moto_process", self.host, str(self.requested_port)]
        self.process = subprocess.Popen(
            [*command, self.runtime_url],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONPATH": path},
        )
        self.pid = self.process.pid
        atexit.register(self.stop)
        line = self.process.stdout.readline() if self.process.stdout else ""
        if not line.strip().isdigit():
            self.stop()
            where = f"{self.host}:{self.requested_port}"
            raise RuntimeError(f"moto did not start on {where} (its error is above)")
        self.port = int(line)
        return self

    def stop(self) -> None:
        process, self.process = self.process, None
        if process is None:
            return
        atexit.unregister(self.stop)
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        for stream in (process.stdin, process.stdout):
            if stream:
                stream.close()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
