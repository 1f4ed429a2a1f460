"""A business's tool endpoint on loopback, for the tests: it answers what it is told (after
a delay, if told) and records each request it got (headers and body)."""

from __future__ import annotations

import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class ToolEndpoint:
    def __init__(
        self, answer: bytes = b'{"status": "shipped"}', status: int = 200, delay: float = 0.0
    ) -> None:
        self.received: list[dict[str, Any]] = []
        self.status, self.answer, self.delay = status, answer, delay
        endpoint = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                body = self.rfile.read(int(self.headers["Content-Length"]))
                endpoint.received.append({"headers": dict(self.headers), "body": body, "path": self.path})
                time.sleep(endpoint.delay)
                try:
                    self.send_response(endpoint.status)
                    self.send_header("Content-Type", "application/json")
                    self.end_headers()
                    self.wfile.write(endpoint.answer)
                except OSError:  # the caller gave up waiting
                    pass

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/tools/order"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
