"""`make demo`: start the local stack, send one burst of WhatsApp messages as people send
them (a text, a photo, a location) over HTTP with valid Twilio signatures, wait for the
batch, and show what happened: the merged user turn, what the AI received in its one
call, the one reply, and the run state by state; last, the console's address for the
burst (infra/console)."""

from __future__ import annotations

import base64
import logging
import os
import secrets
import sys
import time
from typing import Any

os.environ.setdefault("POWERTOOLS_LOG_LEVEL", "WARNING")  # before the handlers import

from twilio.rest import Client  # noqa: E402

from functions.answer import turns
from functions.intake.inbound import Channel  # noqa: E402
from functions.stack_names import STACK_NAME  # noqa: E402
from functions.tenancy import conversations  # noqa: E402
from infra.console.__main__ import console_app  # noqa: E402
from infra.local.servers import Server  # noqa: E402
from infra.local.stack import LocalConfig, LocalStack  # noqa: E402
from infra.local.webhooks import inbound_form, post_webhook  # noqa: E402
from infra.replay.__main__ import main as replay  # noqa: E402
from infra.runs import Runs  # noqa: E402

USER = "whatsapp:+15551234567"
OUR_NUMBER = "whatsapp:+15557654321"
WINDOW_SECONDS = 3
# The photo the user sends: a dented parcel, 48x32 pixels.
PHOTO = base64.b64decode(
    "/9j/4AAQSkZJRgABAQAAAQABAAD/2wBDAA0JCgsKCA0LCgsODg0PEyAVExISEyccHhcgLikxMC4pLSwzOko+MzZGNywtQFdB"
    "RkxOUlNSMj5aYVpQYEpRUk//2wBDAQ4ODhMREyYVFSZPNS01T09PT09PT09PT09PT09PT09PT09PT09PT09PT09PT09PT09P"
    "T09PT09PT09PT09PT0//wAARCAAgADADASIAAhEBAxEB/8QAHwAAAQUBAQEBAQEAAAAAAAAAAAECAwQFBgcICQoL/8QAtRAA"
    "AgEDAwIEAwUFBAQAAAF9AQIDAAQRBRIhMUEGE1FhByJxFDKBkaEII0KxwRVS0fAkM2JyggkKFhcYGRolJicoKSo0NTY3ODk6"
    "Q0RFRkdISUpTVFVWV1hZWmNkZWZnaGlqc3R1dnd4eXqDhIWGh4iJipKTlJWWl5iZmqKjpKWmp6ipqrKztLW2t7i5usLDxMXG"
    "x8jJytLT1NXW19jZ2uHi4+Tl5ufo6erx8vP09fb3+Pn6/8QAHwEAAwEBAQEBAQEBAQAAAAAAAAECAwQFBgcICQoL/8QAtREA"
    "AgECBAQDBAcFBAQAAQJ3AAECAxEEBSExBhJBUQdhcRMiMoEIFEKRobHBCSMzUvAVYnLRChYkNOEl8RcYGRomJygpKjU2Nzg5"
    "OkNERUZHSElKU1RVVldYWVpjZGVmZ2hpanN0dXZ3eHl6goOEhYaHiImKkpOUlZaXmJmaoqOkpaanqKmqsrO0tba3uLm6wsPE"
    "xcbHyMnK0tPU1dbX2Nna4uPk5ebn6Onq8vP09fb3+Pn6/9oADAMBAAIRAxEAPwD0KiivMrezj+zxOiRksgJDrkE49eo/l7VF"
    "SpyWNIQ5z02ivNxHbAhZbaONjwMoMH6H/J9qDHbElYraORhwcIMD6n/J9qy+s+Rp7DzPSKK83FlExDSxx8chUUAD+p/l7V3e"
    "i/8AIDsP+vaP/wBBFaU6vOZzp8hdrzu1/wCPSH/rmv8AKvRK5CLw5qkcKR5sztUDPnNzj/gFRXhKVrFUZKN7mNf3aWkaNNEz"
    "ws22RgMhAe5H+f5A2EKGNTGVKEDbt6Y9q028O6m6lWWyZSMEGViCP++Kp2/hDVbS8eS2kskt5OWh8xiA3qvy8f59sYexlbY2"
    "9rG+5FXY6L/yA7D/AK9o/wD0EVgf8I/qn/Tn/wB/m/8AiK6TT4HtdOtbeQqXhhRGK9CQAOK2oQlFu6Mq01K1j//Z"
)


def burst(stack: LocalStack) -> list[tuple[float, str, dict[str, str]]]:
    """(pause before it, what it is, its form fields): as Twilio posts each message."""
    config = stack.config
    photo_sid = "MM" + secrets.token_hex(16)
    photo_path = stack.twilio.add_media(
        config.twilio_account_sid, config.twilio_auth_token, "image/jpeg", PHOTO, photo_sid
    )
    return [
        (
            0.0,
            "text     'Hi! My order #12345 arrived damaged'",
            {"Body": "Hi! My order #12345 arrived damaged"},
        ),
        (
            0.7,
            f"photo    image/jpeg, {len(PHOTO)} bytes, caption 'This is the box'",
            {
                "Body": "This is the box",
                "MessageType": "image",
                "MessageSid": photo_sid,
                "NumMedia": "1",
                "MediaUrl0": f"{stack.twilio_url}{photo_path}",
                "MediaContentType0": "image/jpeg",
            },
        ),
        (
            0.8,
            "location 37.787933, -122.393746 'Home'",
            {
                "Body": "",
                "MessageType": "location",
                "Latitude": "37.787933",
                "Longitude": "-122.393746",
                "Label": "Home",
                "Address": "101 Spear St, San Francisco",
            },
        ),
    ]


def main() -> int:
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    config = LocalConfig(
        aws_port=0, gateway_port=0, batch_window_seconds=WINDOW_SECONDS, twilio_numbers=(OUR_NUMBER,)
    )
    with LocalStack(config) as stack:
        print(f"Local stack up: webhook {stack.whatsapp_url}, batch window {WINDOW_SECONDS}s\n")
        print("One burst sent (signed like Twilio; the photo is served by the Twilio stand-in):")
        for pause, what, fields in burst(stack):
            time.sleep(pause)
            body = fields.pop("Body")
            sid = fields.pop("MessageSid", None)
            form = inbound_form(body, USER, OUR_NUMBER, config.twilio_account_sid, sid, **fields)
            response = post_webhook(stack.whatsapp_url, form, config.twilio_auth_token)
            print(f"  → {what:62} HTTP {response.status_code}")
            if response.status_code != 200:
                return 1

        conversation = conversations.find(Channel.WHATSAPP, USER, OUR_NUMBER, config.twilio_account_sid)
        assert conversation is not None
        runs = Runs(stack.state_machine_arn, "Turns")
        run = _wait_for_runs(runs, conversation.conversation_id)
        recorded = turns.list_of(conversation.conversation_id)
        ai_calls = [c for c in stack.openai.calls if c["status"] == 200]
        twilio = Client(config.twilio_account_sid, config.twilio_auth_token)
        twilio.api.base_url = stack.twilio_url
        sent = [m.body for m in twilio.messages.list(to=USER)]

        print(
            f"\nRuns started: {len(runs.list(conversation=conversation.conversation_id))} "
            f"(one batch window, one execution); AI calls: {len(ai_calls)}; replies: {len(sent)}"
        )
        print("\nMerged user turn (as recorded):")
        for turn in recorded:
            if turn.role == "user":
                print("\n".join(f"  | {line}" for line in turn.body.splitlines()))
        print("\nWhat the AI received, in order (one message, text and image):")
        for call in ai_calls:
            print("\n".join(f"  | {line}" for line in _described(call["input"])))
        print("\nReply sent through Twilio (the stand-in echoes what it was given):")
        for body in sent:
            print("\n".join(f"  | {line}" for line in body.splitlines()))
        print("\n" + "\n".join(runs.show(run["name"])))
        print("\nThe burst replayed under other batching rules, from the Turns table (make replay):")
        replay(["--since", "1h", "--conversation", conversation.conversation_id])
        _serve_console(conversation.conversation_id, run["name"])
        has_image = any("image:" in line for call in ai_calls for line in _described(call["input"]))
        return (
            0 if run["status"] == "SUCCEEDED" and len(sent) == 1 and len(ai_calls) == 1 and has_image else 1
        )


def _serve_console(conversation_id: str, run_name: str) -> None:
    """The console (infra/console) at this burst's page; at a terminal it is served until
    Enter, since the local stack ends with the demo."""
    app = console_app(STACK_NAME)
    console = Server("127.0.0.1", 0, app)
    console.start()
    try:
        window = run_name.removeprefix(f"{conversation_id}-")
        page = f"/conversations/{conversation_id}?window={window}"
        print(f"\nConsole (this burst): {app.served_at('127.0.0.1', console.server.server_port, page)}")
        if sys.stdin.isatty():
            input("Open it in a browser; press Enter to stop the demo. ")
    finally:
        console.stop()


def _described(model_input: Any) -> list[str]:
    """The model's input, readable: text as it is, an image by its type and size."""
    if isinstance(model_input, str):
        return model_input.splitlines()
    lines = []
    for part in model_input[0]["content"]:
        if part["type"] == "input_text":
            lines += part["text"].splitlines()
        else:
            head, _, data = part["image_url"].partition(",")
            lines.append(
                f"[image: {head[5:].split(';')[0]}, {len(base64.b64decode(data))} bytes, as a data URL]"
            )
    return lines


def _wait_for_runs(runs: Runs, conversation_id: str, timeout: float = 60) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = runs.list(conversation=conversation_id)
        if found and all(r["status"] != "RUNNING" for r in found):
            return found[0]
        time.sleep(0.3)
    raise TimeoutError("the batch did not finish in time")


if __name__ == "__main__":
    sys.exit(main())
