"""The local stack for the emulator and end-to-end tests (ephemeral ports, a 1-second
batch window) and a harness to drive and inspect it. tests/conftest.py imports this
module only when a test asks for the stack, so unit tests never load the emulator."""

from __future__ import annotations

import secrets
import time
from typing import Any

import requests

from functions import clock
from functions.batching import batch_windows
from functions.batching.windows import execution_name
from functions.entry_points.reconciler import open_window_due_now
from functions.intake import staged_messages
from functions.intake.inbound import Channel, InboundMessage
from functions.tenancy import conversations, tenants
from infra.local.stack import LocalConfig, LocalStack
from infra.local.webhooks import inbound_form, post_webhook
from tests.support import media

BATCH_WINDOW_SECONDS = 1
OUR_WHATSAPP = "whatsapp:+15550000001"
OUR_SMS = "+15550000002"


class Harness:
    def __init__(self, stack: LocalStack) -> None:
        self.stack = stack
        self.sfn = stack.client("stepfunctions")
        self.dynamodb = stack.client("dynamodb")

    # --- conversations and messages -----------------------------------------------------

    @staticmethod
    def new_user() -> str:
        return f"whatsapp:+1555{secrets.randbelow(10**7):07d}"

    def send(
        self, user: str, body: str, message_sid: str | None = None, url: str | None = None
    ) -> requests.Response:
        """A signed WhatsApp webhook from `user` to our number, over HTTP."""
        config = self.stack.config
        form = inbound_form(body, user, OUR_WHATSAPP, config.twilio_account_sid, message_sid)
        return post_webhook(url or self.stack.whatsapp_url, form, config.twilio_auth_token)

    def send_while_generating(
        self, user: str, first: str, newer: str, seconds: float = 3, fault: dict[str, Any] | None = None
    ) -> str:
        """Send `first`, wait until its reply is being generated (the OpenAI stand-in slowed
        to `seconds` through its /_control API, with `fault` too), then send `newer`; the
        conversation's id."""
        control = f"{(self.stack.openai_url or '').removesuffix('/v1')}/_control"
        faults = {"faults": [{"delay": seconds, **(fault or {})}]}
        assert requests.post(f"{control}/faults", json=faults, timeout=5).status_code == 200
        assert self.send(user, first).status_code == 200
        conversation_id = self.conversation_of(user).conversation_id  # type: ignore[union-attr]
        deadline = time.monotonic() + 15
        while not self.ai_inputs(conversation_id):
            assert time.monotonic() < deadline, "the reply was never asked for"
            time.sleep(0.05)
        assert self.send(user, newer).status_code == 200
        return conversation_id

    def send_event(self, event: dict[str, str], user: str, **changes: str) -> requests.Response:
        """A webhook of the corpus (tests/events), as Twilio would post it from `user` to
        our number on its channel: a new MessageSid, the stack's tenant, and each of its
        media stored on the Twilio stand-in (a voice note says media.VOICE_NOTE_SAYS)."""
        config, sms = self.stack.config, not event["To"].startswith("whatsapp:")
        sender = user.removeprefix("whatsapp:") if sms else user
        ours = OUR_SMS if sms else OUR_WHATSAPP
        message_sid = event["MessageSid"][:2] + secrets.token_hex(16)
        form = {**event, "From": sender, "To": ours, "AccountSid": config.twilio_account_sid}
        for field in ("MessageSid", "SmsSid", "SmsMessageSid"):
            if field in form:
                form[field] = message_sid
        if "WaId" in form:
            form["WaId"] = sender.removeprefix("whatsapp:+")
        if form.get("OriginalRepliedMessageSender") == event["To"]:
            form["OriginalRepliedMessageSender"] = ours
        for n in range(int(form.get("NumMedia") or 0)):
            content_type = form[f"MediaContentType{n}"]
            data = media.BY_TYPE[content_type]
            path = self.stack.twilio.add_media(
                config.twilio_account_sid, config.twilio_auth_token, content_type, data, message_sid
            )
            form[f"MediaUrl{n}"] = f"{self.stack.twilio_url}{path}"
            if content_type.startswith("audio/"):
                self.stack.openai.say(data, media.VOICE_NOTE_SAYS)
        form.update(changes)
        url = self.stack.sms_url if sms else self.stack.whatsapp_url
        return post_webhook(url, form, config.twilio_auth_token)

    def conversation_of(
        self, user: str, our_address: str = OUR_WHATSAPP, account_sid: str | None = None
    ) -> Any:
        """The conversation of `user` with our number, of the default tenant unless named."""
        channel = Channel.WHATSAPP if our_address.startswith("whatsapp:") else Channel.SMS
        return conversations.find(
            channel, user, our_address, account_sid or self.stack.config.twilio_account_sid
        )

    def conversation_item(self, conversation_id: str) -> dict[str, Any]:
        return self.dynamodb.get_item(
            TableName="Conversations", Key={"conversation_id": {"S": conversation_id}}, ConsistentRead=True
        )["Item"]

    def staged(self, conversation_id: str) -> list[dict[str, Any]]:
        """Every staged-message item of the conversation (answered tombstones included)."""
        return self.dynamodb.query(
            TableName="StagedMessages",
            KeyConditionExpression="conversation_id = :c",
            ExpressionAttributeValues={":c": {"S": conversation_id}},
            ConsistentRead=True,
        )["Items"]

    def stage_directly(self, user: str, bodies: list[str], received_at: str | None = None) -> str:
        """Create the conversation and stage messages without the webhook (for runs
        started by hand). Returns the conversation id."""
        conversation = conversations.create(
            Channel.WHATSAPP, user, OUR_WHATSAPP, clock.iso(clock.now()), self.stack.config.twilio_account_sid
        )
        for body in bodies:
            form = inbound_form(body, user, OUR_WHATSAPP, self.stack.config.twilio_account_sid)
            message = InboundMessage.from_form(form)
            staged_messages.stage(
                conversation.conversation_id, message, received_at or clock.iso(clock.now())
            )
        return conversation.conversation_id

    def expire_ttl(self, table: str, as_of: float) -> int:
        """Delete the items whose TTL (`expires_at`) has passed at `as_of` (epoch seconds),
        as DynamoDB's TTL would have by then (moto keeps expired items). How many."""
        keys = [
            k["AttributeName"] for k in self.dynamodb.describe_table(TableName=table)["Table"]["KeySchema"]
        ]
        expired = self.dynamodb.scan(
            TableName=table,
            FilterExpression="expires_at < :t",
            ExpressionAttributeValues={":t": {"N": str(int(as_of))}},
        )["Items"]
        for item in expired:
            self.dynamodb.delete_item(TableName=table, Key={k: item[k] for k in keys})
        return len(expired)

    def window_of(self, conversation_id: str) -> dict[str, Any] | None:
        return batch_windows.get(conversation_id)

    def set_conversation(self, conversation_id: str, **fields: Any) -> None:
        """Change fields of a conversation record, as a tenant's admin would."""
        conversations.update(conversation_id, **fields)

    # --- tenants ------------------------------------------------------------------------

    def add_tenant(self, *numbers: str) -> tuple[str, str]:
        """Register a new tenant with these numbers, as `python -m infra.tenants add`
        does; its (AccountSid, auth token)."""
        account_sid, token = "AC" + secrets.token_hex(16), secrets.token_hex(16)
        self.stack.tenants.add(account_sid, token, list(numbers))
        return account_sid, token

    @staticmethod
    def forget_tenants() -> None:
        """What a minute does to the webhook's tenant cache (or a new Lambda instance)."""
        tenants.forget()

    # --- runs ---------------------------------------------------------------------------

    def start_run(self, conversation_id: str) -> str:
        """Open a window that is due at once and start its run, as the reconciler does;
        the run's ARN."""
        window_id = open_window_due_now(conversation_id)
        assert window_id is not None, "a window is open already"
        name = execution_name(conversation_id, window_id)
        return self.stack.state_machine_arn.replace(":stateMachine:", ":execution:") + ":" + name

    def all_runs(self) -> list[dict[str, Any]]:
        pages = self.sfn.get_paginator("list_executions").paginate(
            stateMachineArn=self.stack.state_machine_arn
        )
        return [e for page in pages for e in page["executions"]]

    def runs(self, conversation_id: str) -> list[dict[str, Any]]:
        executions = self.all_runs()
        return sorted(
            (e for e in executions if e["name"].startswith(conversation_id + "-")),
            key=lambda e: e["startDate"],
        )

    def wait_for_run(self, execution_arn: str, timeout: float = 60) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            described = self.sfn.describe_execution(executionArn=execution_arn)
            if described["status"] != "RUNNING":
                return described
            time.sleep(0.2)
        raise AssertionError(f"{execution_arn} still running after {timeout}s")

    def wait_until_quiet(self, conversation_id: str, runs: int, timeout: float = 60) -> list[dict[str, Any]]:
        """Wait until the conversation has at least `runs` executions and none running."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = self.runs(conversation_id)
            if len(found) >= runs and all(e["status"] != "RUNNING" for e in found):
                return found
            time.sleep(0.2)
        raise AssertionError(
            f"{conversation_id}: wanted {runs} finished runs, have {self.runs(conversation_id)}"
        )

    def wait_until_no_run_is_running(self, timeout: float = 60) -> None:
        """Until every run of the stack has ended, those earlier tests started included. The
        handlers share this process, and with it Powertools' metrics: a test that reads the
        metrics printed waits, so that no other invocation prints (or clears) its metrics."""
        deadline = time.monotonic() + timeout
        while running := self.sfn.list_executions(
            stateMachineArn=self.stack.state_machine_arn, statusFilter="RUNNING"
        )["executions"]:
            assert time.monotonic() < deadline, f"still running: {[r['name'] for r in running]}"
            time.sleep(0.2)

    def history(self, execution_arn: str) -> list[dict[str, Any]]:
        return self.sfn.get_execution_history(executionArn=execution_arn, maxResults=1000)["events"]

    def failures_in(self, execution_arn: str) -> list[str]:
        """The error names of the failed task attempts, in order."""
        return [
            e["taskFailedEventDetails"]["error"]
            for e in self.history(execution_arn)
            if e["type"] == "TaskFailed"
        ]

    def states_entered(self, execution_arn: str) -> list[str]:
        return [
            e["stateEnteredEventDetails"]["name"]
            for e in self.history(execution_arn)
            if e["type"].endswith("StateEntered")
        ]

    # --- the stand-ins --------------------------------------------------------------------

    def ai_inputs(self, conversation_id: str, answered_only: bool = False) -> list[Any]:
        """The inputs of the AI calls for the conversation, in order (with those that a
        fault failed, unless `answered_only`)."""
        item = self.conversation_item(conversation_id)
        openai_conversation = item.get("openai_conversation_id", {}).get("S")
        return [
            c["input"]
            for c in self.stack.openai.calls
            if c["conversation"] == openai_conversation and (c["status"] == 200 or not answered_only)
        ]

    def replies_to(self, user: str) -> list[str]:
        """The bodies of the messages sent to `user` (templates aside), in order."""
        return [m["body"] for m in self.stack.twilio.messages if m["to"] == user and not m["content_sid"]]


def local_stack() -> LocalStack:
    return LocalStack(
        LocalConfig(
            aws_port=0,
            gateway_port=0,
            batch_window_seconds=BATCH_WINDOW_SECONDS,
            twilio_numbers=(OUR_WHATSAPP, OUR_SMS),
            # A reply's parts a tenth of a second apart, not a second: the tests of pacing
            # set their own interval (tests/e2e/delivery/test_twilio_fine_print.py).
            extra_env={"REPLY_PART_INTERVAL_SECONDS": "0.1"},
        )
    )
