"""The stand-ins served alone on 127.0.0.1 (no emulator), driven with the real SDKs."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import openai
import pytest
from twilio.http.http_client import TwilioHttpClient
from twilio.rest import Client
from werkzeug.serving import make_server
from werkzeug.wrappers import Request, Response

from infra.local.standins import OpenAIStandIn, TwilioStandIn

ACCOUNT_SID = "AC" + "1" * 32
AUTH_TOKEN = "standin-test-auth-token"
OPENAI_KEY = "local-openai-key"


class Served:
    """A WSGI app on an ephemeral port, in a thread."""

    def __init__(self, app: Any) -> None:
        self.server = make_server("127.0.0.1", 0, app, threaded=True)
        self.url = f"http://127.0.0.1:{self.server.server_port}"
        threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True).start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@dataclass
class Receiver:
    """A status callback endpoint: records each request, answers `status` after `pause`."""

    status: int = 204
    pause: float = 0.0
    received: list[dict[str, Any]] = field(default_factory=list)

    def __call__(self, environ: dict[str, Any], start_response: Any) -> Any:
        request = Request(environ)
        self.received.append(
            {
                "url": request.url,
                "form": request.form.to_dict(),
                "headers": dict(request.headers),
                "at": time.monotonic(),
            }
        )
        time.sleep(self.pause)
        return Response("", self.status)(environ, start_response)

    def statuses(self) -> list[str]:
        return [r["form"]["MessageStatus"] for r in self.received]


@pytest.fixture
def openai_standin() -> Iterator[tuple[OpenAIStandIn, str]]:
    standin = OpenAIStandIn()
    standin.add_key(OPENAI_KEY)
    served = Served(standin)
    yield standin, served.url
    served.stop()


@pytest.fixture
def ai(openai_standin: tuple[OpenAIStandIn, str]) -> openai.OpenAI:
    """The SDK as the service configures it: no retries of its own."""
    return openai.OpenAI(api_key=OPENAI_KEY, base_url=openai_standin[1] + "/v1", max_retries=0, timeout=3)


@pytest.fixture
def twilio_standin() -> Iterator[tuple[TwilioStandIn, str]]:
    standin = TwilioStandIn()
    standin.set_account(ACCOUNT_SID, AUTH_TOKEN)
    served = Served(standin)
    yield standin, served.url
    served.stop()


def twilio_client(url: str, timeout: float = 3) -> Client:
    client = Client(ACCOUNT_SID, AUTH_TOKEN, http_client=TwilioHttpClient(timeout=timeout))
    client.api.base_url = url
    return client


@pytest.fixture
def sms(twilio_standin: tuple[TwilioStandIn, str]) -> Client:
    return twilio_client(twilio_standin[1])


@pytest.fixture
def receiver() -> Iterator[tuple[Receiver, str]]:
    app = Receiver()
    served = Served(app)
    yield app, served.url + "/status"
    served.stop()
