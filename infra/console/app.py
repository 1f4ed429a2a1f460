"""The console as a WSGI app (werkzeug): the start page, a conversation's page, and the
toggle that shows message texts (a POST that sets a cookie: a text never rides in a URL).
It reads through infra/console/reading.py only.

Every request is checked first (`refused`): its Host must be the address the console was
served at (`served_at`; localhost and 127.0.0.1 on that port too), so a DNS-rebound name
gets nothing; it must carry this launch's token, in the query (the printed URL: it is set
as a cookie and dropped from the URL) or in the cookie; a POST must come from the
console's own pages (its Origin, or else its Referer). The toggle's way back is one of the
console's own pages, else the start page."""

from __future__ import annotations

import hmac
import secrets
import time
from html import escape
from typing import Any
from urllib.parse import quote, urlencode, urlsplit

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
        self.token = secrets.token_urlsafe(32)  # this launch's: in the printed URL only
        self.token_cookie = "console_token"
        self.hosts: frozenset[str] = frozenset()  # none until served_at: nothing is served
        self.urls = Map(
            [
                Rule("/", endpoint="start", methods=["GET"]),
                Rule("/conversations/<conversation_id>", endpoint="conversation", methods=["GET"]),
                Rule("/message-text", endpoint="message_text", methods=["POST"]),
            ]
        )

    def served_at(self, host: str, port: int, page: str = "/") -> str:
        """Serve requests for this host and port only (and localhost and 127.0.0.1 on that
        port); the URL that opens `page` there, with this launch's token."""
        name = f"[{host}]" if ":" in host else host  # an IPv6 address
        names = (name.lower(), "localhost", "127.0.0.1")
        self.hosts = frozenset(f"{n}:{port}" if port != 80 else n for n in names)  # :80 is left out
        self.token_cookie = f"console_token_{port}"  # a cookie is sent to every port of a host
        return f"http://{name}:{port}{page}{'&' if '?' in page else '?'}token={self.token}"

    def __call__(self, environ: dict[str, Any], start_response: Any) -> Any:
        request = Request(environ)
        try:
            response = self.refused(request)
            if response is None:
                endpoint, arguments = self.urls.bind_to_environ(environ).match()
                response = getattr(self, endpoint)(request, **arguments)
        except HTTPException as error:
            response = error.get_response()
        except (ClientError, BotoCoreError) as error:
            response = _html(f"<h1>AWS said no</h1><p>{_one_line(error)}</p>", status=502)
        response.headers["Cache-Control"] = "no-store"  # pages may hold personal data
        return response(environ, start_response)

    def refused(self, request: Request) -> Response | None:
        """The answer to a request the console does not serve (another Host, no token, a
        POST from another site), or to the printed URL (its token set as a cookie); None
        for a request it serves."""
        host = request.host.lower()
        if host not in self.hosts:
            return _plain("Misdirected request: not this console's address.", status=421)
        in_query = _same(request.args.get("token", ""), self.token)
        if not (in_query or _same(request.cookies.get(self.token_cookie, ""), self.token)):
            return _plain("Forbidden: open the console at the address it printed.", status=403)
        if request.method == "POST" and _origin(request) != f"http://{host}":
            return _plain("Forbidden: a POST from another site.", status=403)
        if in_query and request.method == "GET":  # drop the token from the URL, keep it unseen
            rest = [(k, v) for k, v in request.args.items(multi=True) if k != "token"]
            response = redirect(self.console_page(quote(request.path) + _query(rest)), code=303)
            response.set_cookie(self.token_cookie, self.token, httponly=True, samesite="Strict")
            return response
        return None

    def console_page(self, path: str) -> str:
        """`path` if it is one of the console's pages ('/' or a conversation's, with its
        query), else '/': nothing a browser could read as another site's address."""
        page, _, _ = path.partition("?")
        if page[:1] != "/" or page[1:2] == "/" or "\\" in path or any(_control(c) for c in path):
            return "/"
        try:
            self.urls.bind("console").match(page, method="GET")
        except HTTPException:
            return "/"
        return path

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
        response = redirect(self.console_page(request.form.get("back", "/")), code=303)
        response.set_cookie(
            TEXT_COOKIE, "1" if request.form.get("show") == "1" else "0", httponly=True, samesite="Lax"
        )
        return response


def _html(text: str, status: int = 200) -> Response:
    return Response(text, status=status, mimetype="text/html")


def _plain(text: str, status: int) -> Response:
    return Response(text + "\n", status=status, mimetype="text/plain")


def _same(given: str, token: str) -> bool:
    return hmac.compare_digest(given.encode(), token.encode())


def _origin(request: Request) -> str:
    """The site a request came from: its Origin, else its Referer's scheme and host."""
    if origin := request.headers.get("Origin"):
        return origin.lower()
    referer = urlsplit(request.referrer or "")
    return f"{referer.scheme}://{referer.netloc}".lower()


def _query(pairs: list[tuple[str, str]]) -> str:
    return f"?{urlencode(pairs)}" if pairs else ""


def _control(character: str) -> bool:
    return character < "\x20" or character == "\x7f"


def _one_line(error: Exception) -> str:
    if isinstance(error, ClientError):
        details = error.response.get("Error", {})
        return escape(f"{error.operation_name}: {details.get('Code', '?')}: {details.get('Message', '')}")
    return escape(str(error))
