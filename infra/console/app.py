"""The console as a WSGI app (werkzeug): the start page, a conversation's page, and the
toggle that shows message texts (a POST that sets a cookie: a text never rides in a URL).
It reads through infra/console/reading.py only."""

from __future__ import annotations

import time
from html import escape
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError
from werkzeug.exceptions import HTTPException, NotFound
from werkzeug.routing import Map, Rule
from werkzeug.utils import redirect
from werkzeug.wrappers import Request, Response

from infra.console import pages
from infra.console.reading import StackReader
from infra.console.views import chosen, conversation_page, start_lines

TEXT_COOKIE = "message_text"


class ConsoleApp:
    def __init__(self, reader: StackReader, local: bool) -> None:
        self.reader, self.local = reader, local
        self.urls = Map(
            [
                Rule("/", endpoint="start", methods=["GET"]),
                Rule("/conversations/<conversation_id>", endpoint="conversation", methods=["GET"]),
                Rule("/message-text", endpoint="message_text", methods=["POST"]),
            ]
        )

    def __call__(self, environ: dict[str, Any], start_response: Any) -> Any:
        request = Request(environ)
        try:
            endpoint, arguments = self.urls.bind_to_environ(environ).match()
            response = getattr(self, endpoint)(request, **arguments)
        except HTTPException as error:
            response = error.get_response()
        except (ClientError, BotoCoreError) as error:
            response = _html(f"<h1>AWS said no</h1><p>{_one_line(error)}</p>", status=502)
        response.headers["Cache-Control"] = "no-store"  # pages may hold personal data
        return response(environ, start_response)

    def start(self, request: Request) -> Response:
        lines = start_lines(self.reader, int(time.time() * 1000))
        tenants = sorted({line.conversation.tenant_account_sid or "" for line in lines} - {""})
        tenant, status = request.args.get("tenant", ""), request.args.get("status", "")
        return _html(pages.start_page(chosen(lines, tenant, status), tenants, tenant, status))

    def conversation(self, request: Request, conversation_id: str) -> Response:
        now_ms = int(time.time() * 1000)
        window = request.args.get("window", "")
        page = conversation_page(self.reader, conversation_id, window, now_ms, self.local)
        if page is None:
            raise NotFound(f"No conversation {conversation_id}.")
        show_text = request.cookies.get(TEXT_COOKIE) == "1"
        return _html(pages.conversation_page(page, show_text, request.full_path.rstrip("?")))

    def message_text(self, request: Request) -> Response:
        back = request.form.get("back", "/")
        if not back.startswith("/") or back.startswith("//"):
            back = "/"
        response = redirect(back, code=303)
        response.set_cookie(
            TEXT_COOKIE, "1" if request.form.get("show") == "1" else "0", httponly=True, samesite="Lax"
        )
        return response


def _html(text: str, status: int = 200) -> Response:
    return Response(text, status=status, mimetype="text/html")


def _one_line(error: Exception) -> str:
    if isinstance(error, ClientError):
        details = error.response.get("Error", {})
        return escape(f"{error.operation_name}: {details.get('Code', '?')}: {details.get('Message', '')}")
    return escape(str(error))
