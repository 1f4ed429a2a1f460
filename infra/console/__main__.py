"""Serve the console for a stack, read-only, with the operator's AWS credentials:

    python -m infra.console [--stack NAME] [--port 8000] [--host 127.0.0.1 [--allow-remote]]
    AWS_ENDPOINT_URL=http://127.0.0.1:5000 python -m infra.console   # the local stack

It prints `Console: http://HOST:PORT/?token=...` and serves until Ctrl-C. Open that URL:
the token is this launch's (a new one each launch), and every request needs it (the first
sets it as a cookie); only HOST:PORT is served (and localhost and 127.0.0.1 on that port).
Names: the stack is `--stack NAME`, else STACK_NAME, else BurstReply; its tables and state
machine come from its outputs, or the local stack's with AWS_ENDPOINT_URL set
(infra/stack_lookup.py). The pages hold personal data (masked addresses; message texts when
asked): the host is a loopback address (127.0.0.1 by default, ::1, localhost). Another is
refused unless `--allow-remote` says so too: then the token is the pages' only protection,
and they travel in plain HTTP, readable on the network; give the address people will
open (their Host must be it)."""

from __future__ import annotations

import argparse
import ipaddress
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
    parser.add_argument("--host", default="127.0.0.1", help="default 127.0.0.1 (a loopback address)")
    parser.add_argument(
        "--allow-remote",
        action="store_true",
        help="serve a --host that is not a loopback address: the token is then the only protection",
    )
    add_stack_option(parser)
    args = parser.parse_args(argv)
    if not _is_loopback(args.host):
        if not args.allow_remote:
            parser.error(
                f"--host {args.host} is not a loopback address: the pages hold personal data; "
                "add --allow-remote to serve them to the network, protected by the token only"
            )
        print(
            f"infra.console: warning: serving {args.host} to the network: the printed URL's token "
            "is the only protection, and the traffic (token, pages, message texts) is plain HTTP",
            file=sys.stderr,
            flush=True,
        )
    return one_line_errors("infra.console", lambda: _serve(args))


def _is_loopback(host: str) -> bool:
    """127.0.0.0/8, ::1 or localhost."""
    try:
        return host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:  # a name
        return False


def _serve(args: argparse.Namespace) -> int:
    from werkzeug.serving import make_server

    app = console_app(chosen_stack(args.stack))
    app.reader.sfn.describe_state_machine(stateMachineArn=app.reader.state_machine_arn)  # reachable?
    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    server = make_server(args.host, args.port, app, threaded=True)
    print(f"Console: {app.served_at(args.host, server.server_port)}", flush=True)
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
