"""Serve the console for a stack, read-only, with the operator's AWS credentials:

    python -m infra.console [--stack NAME] [--port 8000] [--host 127.0.0.1]
    AWS_ENDPOINT_URL=http://127.0.0.1:5000 python -m infra.console   # the local stack

It prints `Console: http://HOST:PORT/` and serves until Ctrl-C. Names: the stack is
`--stack NAME`, else STACK_NAME, else BurstReply; its tables and state machine come from
its outputs, or the local stack's with AWS_ENDPOINT_URL set (infra/stack_lookup.py). The
pages hold personal data (masked addresses; message texts when asked): keep the default
host, 127.0.0.1, unless you mean to share them."""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import threading
from typing import Any

from infra.stack_lookup import (
    add_stack_option,
    chosen_stack,
    is_local,
    local_credentials,
    names,
    one_line_errors,
)

DEFAULT_PORT = 8000  # 0: any free port


def console_app(stack_name: str) -> Any:
    """The console's WSGI app for the stack (LookupFailed: a name not found)."""
    from infra.console.app import ConsoleApp
    from infra.console.reading import NEEDED, StackReader

    local_credentials()
    return ConsoleApp(StackReader(names(stack_name, NEEDED)), local=is_local())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m infra.console", description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--port", type=int, default=DEFAULT_PORT, help=f"default {DEFAULT_PORT}; 0: any free port"
    )
    parser.add_argument("--host", default="127.0.0.1")
    add_stack_option(parser)
    args = parser.parse_args(argv)
    return one_line_errors("infra.console", lambda: _serve(args))


def _serve(args: argparse.Namespace) -> int:
    from werkzeug.serving import make_server

    app = console_app(chosen_stack(args.stack))
    app.reader.sfn.describe_state_machine(stateMachineArn=app.reader.state_machine_arn)  # reachable?
    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    server = make_server(args.host, args.port, app, threaded=True)
    print(f"Console: http://{args.host}:{server.server_port}/", flush=True)
    serving = threading.Thread(target=server.serve_forever, daemon=True)
    serving.start()
    stop = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stop.set())
    stop.wait()
    server.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
