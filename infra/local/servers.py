"""A WSGI app served by werkzeug on a thread of this process (the gateway, the Lambda
runtime, the stand-ins), each request on a thread of its own."""

from __future__ import annotations

import threading
from typing import Any

from werkzeug.serving import BaseWSGIServer, make_server


class Server:
    def __init__(self, host: str, port: int, app: Any) -> None:
        self.server: BaseWSGIServer = make_server(host, port, app, threaded=True)
        self.url = f"http://{host}:{self.server.server_port}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def start(self) -> None:
        self.thread.start()

    def stop(self) -> None:
        if self.thread.is_alive():  # shutdown() waits for a loop that was never started
            self.server.shutdown()
        self.server.server_close()
