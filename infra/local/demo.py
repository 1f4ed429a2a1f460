"""`make demo`: start the local stack, send a burst of WhatsApp fragments over HTTP with
valid Twilio signatures, wait for the batch, and show what happened."""

from __future__ import annotations

import logging
import os
import sys
import time

os.environ.setdefault("POWERTOOLS_LOG_LEVEL", "WARNING")  # before the handlers import

from twilio.rest import Client  # noqa: E402

from functions.dal import conversations, turns  # noqa: E402
from functions.models import Channel  # noqa: E402
from infra.local.stack import LocalConfig, LocalStack  # noqa: E402
from infra.local.webhooks import inbound_form, post_webhook  # noqa: E402
from infra.runs import Runs  # noqa: E402

USER = "whatsapp:+15551234567"
OUR_NUMBER = "whatsapp:+15557654321"
FRAGMENTS = [
    (0.0, "Hey"),
    (0.6, "I have a question about my order"),
    (0.5, "Order #12345"),
    (0.7, "It hasn't arrived yet"),
]
WINDOW_SECONDS = 3


def main() -> int:
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    config = LocalConfig(
        aws_port=0, gateway_port=0, batch_window_seconds=WINDOW_SECONDS, twilio_numbers=(OUR_NUMBER,)
    )
    with LocalStack(config) as stack:
        print(f"Local stack up: webhook {stack.whatsapp_url}, batch window {WINDOW_SECONDS}s\n")
        print("Fragments sent (signed like Twilio):")
        for gap, body in FRAGMENTS:
            time.sleep(gap)
            form = inbound_form(body, USER, OUR_NUMBER, config.twilio_account_sid)
            response = post_webhook(stack.whatsapp_url, form, config.twilio_auth_token)
            print(f"  → {body!r:40} HTTP {response.status_code}")
            if response.status_code != 200:
                return 1

        conversation = conversations.find(Channel.WHATSAPP, USER, OUR_NUMBER, config.twilio_account_sid)
        assert conversation is not None
        runs = Runs(stack.state_machine_arn, "Turns")
        run = _wait_for_runs(runs, conversation.conversation_id)
        recorded = turns.list_of(conversation.conversation_id)
        twilio = Client(config.twilio_account_sid, config.twilio_auth_token)
        twilio.api.base_url = stack.twilio_url
        sent = [m.body for m in twilio.messages.list(to=USER)]

        print(
            f"\nRuns started: {len(runs.list(conversation=conversation.conversation_id))} "
            f"(one batch window, one execution)"
        )
        print("\nMerged user turn (what the AI received, once):")
        for turn in recorded:
            if turn.role == "user":
                print("\n".join(f"  | {line}" for line in turn.body.splitlines()))
        print("\nReply sent through Twilio:")
        for body in sent:
            print("\n".join(f"  | {line}" for line in body.splitlines()))
        print()
        print("\n".join(runs.show(run["name"])))
        return 0 if run["status"] == "SUCCEEDED" and len(sent) == 1 else 1


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
