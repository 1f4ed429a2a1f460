"""Watch the first message: send one signed test message to the deployed webhook, as
Twilio would, and follow the run it starts to the reply and its delivery.

    python -m infra.smoke --from whatsapp:+15551234567 [--to NUMBER] [--text TEXT] [--show-text]
                          [--stack NAME] [--url WEBHOOK_URL] [--timeout 300]

It signs the message as the tenant that owns `--to` (the tenant's Twilio auth token, read
from its secret <TwilioTenantSecretPrefix><AccountSid> and never printed), posts it to the
webhook (the stack's `WebhookBaseUrl` plus /whatsapp or /sms: the URL Twilio calls and its
signature covers; `--url` to post elsewhere), finds the run of the batch window the
message opened or joined, prints each state as it is entered and exited and each failed
attempt, then the reply: its parts and what Twilio reported of each. A failed run names the
state and the cause (an IAM denial, a missing secret, a model OpenAI does not serve).

`--to` is one of the registered numbers on the channel of `--from` (WhatsApp when it starts
with `whatsapp:`); without it, the only such number in the Tenants table. The reply goes
to `--from` for real: use your own phone. The texts are not printed unless `--show-text`
(the reply is written from the conversation's history: personal data when `--from` is
someone else's number).

Exit status 0 when the reply was sent and no part of it was reported failed or
undelivered; 1 otherwise. Names as for every operator command (infra/stack_lookup.py): on
AWS the stack's outputs; with AWS_ENDPOINT_URL set, the local stack's (`make local`; its
webhook on GATEWAY_PORT, 3000, or WEBHOOK_BASE_URL).

The message, signed and posted, is message.py; following its run to the reply, follow.py.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

from functions.answer import turns
from functions.storage.tables import assistant_turn_id
from functions.tenancy.secrets import TwilioCredentials
from infra import stack_lookup
from infra.smoke.follow import conversation_of, follow_run, report_reply, run_of, wait_for_deliveries
from infra.smoke.message import DEFAULT_TEXT, SmokeFailed, Target, find_target, post, tenant_credentials

__all__ = ["SmokeFailed", "main"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m infra.smoke", description=__doc__.split("\n\n")[0])
    parser.add_argument("--from", dest="user", required=True, help="the sender: whatsapp:+1... or +1...")
    parser.add_argument(
        "--to", dest="ours", help="the tenant's number (default: the only one on the channel)"
    )
    parser.add_argument("--text", default=DEFAULT_TEXT, help="the test message's text")
    parser.add_argument("--show-text", action="store_true", help="print the reply's text (personal data)")
    parser.add_argument("--url", help="post here instead of the stack's webhook URL")
    parser.add_argument(
        "--timeout", type=float, default=300, help="seconds to wait for the run and its reply"
    )
    parser.add_argument(
        "--delivery-wait", type=float, default=30, help="seconds to wait for Twilio's delivery reports"
    )
    stack_lookup.add_stack_option(parser)
    args = parser.parse_args(argv)
    return stack_lookup.one_line_errors("infra.smoke", lambda: _smoke(args))


def _smoke(args: argparse.Namespace) -> int:
    needed = [*stack_lookup.FUNCTION_SETTINGS, "TWILIO_TENANT_SECRET_PREFIX"]
    stack_lookup.use_stack(
        stack_lookup.chosen_stack(args.stack), needed + ["WEBHOOK_BASE_URL"] * (not args.url)
    )
    try:
        target = find_target(args.user, args.ours, args.url)
        credentials = tenant_credentials(target.account_sid)
        return _send_and_follow(target, credentials, args)
    except SmokeFailed as error:
        print(f"infra.smoke: {error}", file=sys.stderr)
        return 1


def _send_and_follow(target: Target, credentials: TwilioCredentials, args: argparse.Namespace) -> int:
    post(target, credentials, args.text)
    deadline = time.monotonic() + args.timeout
    conversation = conversation_of(target, deadline)
    execution_arn = run_of(conversation, deadline)
    print(f"Conversation {conversation.conversation_id}, run {execution_arn.rsplit(':', 1)[-1]}")
    described = follow_run(execution_arn, deadline)
    window_id = json.loads(described.get("input") or "{}").get("window_id", "")
    reply = turns.get(conversation.conversation_id, assistant_turn_id(window_id)) if window_id else None
    if described["status"] != "SUCCEEDED" or reply is None or reply.status != "sent":
        print(f"No reply sent{f' (the reply is {reply.status})' if reply else ''}.")
        return 1
    reply = wait_for_deliveries(reply, time.monotonic() + args.delivery_wait)
    return report_reply(reply, args.show_text)
