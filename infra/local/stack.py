"""Starts the whole local stack: moto in a process of its own (infra/local/moto_process.py),
and in this process our Lambda handlers (the runtime moto's interpreter invokes them
through), the webhook gateway, and the OpenAI and Twilio stand-ins; then provisions the
tables, the secrets and the state machine from the same definitions as the CDK stack."""

from __future__ import annotations

import json
import os
import threading
from dataclasses import dataclass, field
from typing import Any

import boto3
import requests

from functions.config import forget_settings, read_flag
from functions.delivery.settings import EventSettings
from functions.registry import TASKS
from functions.stack_names import STACK_NAME, event_bus_name, metrics_namespace, state_machine_name
from functions.storage.tables import ALL_TABLES, TENANTS
from functions.tenancy.settings import ConversationIdSettings, OpenAIKeySettings, TenancySettings
from infra.local import event_rules
from infra.local.aws_calls import RECORDER
from infra.local.gateway import Gateway
from infra.local.lambdas import LambdaRuntime, invoke
from infra.local.moto_process import RETRY_DELAY_SCALE_PATH, MotoProcess
from infra.local.servers import Server
from infra.local.standins import OpenAIStandIn, TwilioStandIn
from infra.local.tables import create_table_request
from infra.statemachine import definition_substitutions, render
from infra.tenants import Names, TenantAdmin

REGION = "us-east-1"
ACCOUNT = "123456789012"
# The local stack is a stack named like the default deployed one: its resources' names are
# that stack's (functions/stack_names.py).
STATE_MACHINE_NAME = state_machine_name(STACK_NAME)
EVENT_BUS_NAME = event_bus_name(STACK_NAME)
# Stand-in credentials: well-formed, obviously not real.
LOCAL_ACCOUNT_SID = "AC" + "0" * 32
LOCAL_AUTH_TOKEN = "local-twilio-auth-token"
LOCAL_OPENAI_KEY = "local-openai-key"
# The numbers of the default tenant: Twilio's WhatsApp sandbox number, for WhatsApp and SMS.
DEFAULT_NUMBERS = ("whatsapp:+14155238886", "+14155238886")


def _flag(value: str | None, default: bool) -> bool:
    """A yes-or-no variable, read as the functions read theirs; unset or empty: `default`."""
    return default if value is None or value == "" else read_flag(value)


@dataclass
class LocalConfig:
    host: str = "127.0.0.1"
    aws_port: int = 5000
    gateway_port: int = 3000
    openai_port: int = 0  # 0: any free port
    twilio_port: int = 0
    batch_window_seconds: int = 10
    auto_create_conversations: bool = True
    twilio_account_sid: str = LOCAL_ACCOUNT_SID
    twilio_auth_token: str = LOCAL_AUTH_TOKEN
    # The numbers the default tenant (the account above) owns: webhooks to others are refused.
    twilio_numbers: tuple[str, ...] = DEFAULT_NUMBERS
    openai_api_key: str = LOCAL_OPENAI_KEY
    # The public base URL signatures cover; empty: the local gateway's own URL.
    webhook_base_url: str = ""
    use_real_openai: bool = False
    use_real_twilio: bool = False
    # One "Generate Reply" attempt's time for OpenAI (None: the functions' default).
    openai_timeout_seconds: float | None = None
    # Run the reconciler this often, as the deployed schedule does (None: never).
    reconcile_every_seconds: float | None = None
    extra_env: dict[str, str] = field(default_factory=dict)

    @classmethod
    def from_env(cls, environ: dict[str, str] | None = None) -> LocalConfig:
        env = dict(os.environ if environ is None else environ)
        return cls(
            aws_port=int(env.get("AWS_PORT") or 5000),
            gateway_port=int(env.get("GATEWAY_PORT") or 3000),
            openai_port=int(env.get("OPENAI_STANDIN_PORT") or 0),
            twilio_port=int(env.get("TWILIO_STANDIN_PORT") or 0),
            batch_window_seconds=int(env.get("BATCH_WINDOW_SECONDS") or 10),
            auto_create_conversations=_flag(env.get("AUTO_CREATE_CONVERSATIONS"), True),
            twilio_account_sid=env.get("TWILIO_ACCOUNT_SID") or LOCAL_ACCOUNT_SID,
            twilio_auth_token=env.get("TWILIO_AUTH_TOKEN") or LOCAL_AUTH_TOKEN,
            twilio_numbers=tuple(
                n.strip()
                for n in (env.get("TWILIO_NUMBERS") or ",".join(DEFAULT_NUMBERS)).split(",")
                if n.strip()
            ),
            webhook_base_url=env.get("WEBHOOK_BASE_URL") or "",
            openai_api_key=env.get("OPENAI_API_KEY") or LOCAL_OPENAI_KEY,
            use_real_openai=_flag(env.get("USE_REAL_OPENAI"), False),
            use_real_twilio=_flag(env.get("USE_REAL_TWILIO"), False),
            openai_timeout_seconds=float(env["OPENAI_TIMEOUT_SECONDS"])
            if env.get("OPENAI_TIMEOUT_SECONDS")
            else None,
            reconcile_every_seconds=60,
        )

    def function_settings(self) -> dict[str, str]:
        """The functions' settings this configuration decides (the functions read the
        others from the environment as well)."""
        settings = {
            "BATCH_WINDOW_SECONDS": str(self.batch_window_seconds),
            "AUTO_CREATE_CONVERSATIONS": "true" if self.auto_create_conversations else "false",
        }
        if self.openai_timeout_seconds is not None:
            settings["OPENAI_TIMEOUT_SECONDS"] = str(self.openai_timeout_seconds)
        return settings


class LocalStack:
    def __init__(self, config: LocalConfig | None = None) -> None:
        self.config = config or LocalConfig()
        self.openai = OpenAIStandIn()
        self.twilio = TwilioStandIn()
        self._servers: list[Server] = []
        self._stopping = threading.Event()
        self._moto: MotoProcess | None = None
        self.state_machine_arn = f"arn:aws:states:{REGION}:{ACCOUNT}:stateMachine:{STATE_MACHINE_NAME}"

    # --- lifecycle ---------------------------------------------------------------------

    def start(self) -> LocalStack:
        try:
            self._start()
        except BaseException:
            self.stop()
            raise
        return self

    def _start(self) -> None:
        c = self.config
        RECORDER.install()  # every AWS call a function makes, for infra.iam
        self.runtime = Server(c.host, 0, LambdaRuntime())
        self.gateway = Server(
            c.host, c.gateway_port, Gateway(inbound=None if c.use_real_twilio else self.twilio.receive)
        )
        self._servers = [self.runtime, self.gateway]
        self.openai_server = self.twilio_server = None
        if not c.use_real_openai:
            self.openai_server = Server(c.host, c.openai_port, self.openai)
            self._servers.append(self.openai_server)
        if not c.use_real_twilio:
            self.twilio_server = Server(c.host, c.twilio_port, self.twilio)
            self._servers.append(self.twilio_server)
        for server in self._servers:
            server.start()
        self._moto = MotoProcess(c.host, c.aws_port, self.runtime.url).start()
        os.environ.update(self._environment())
        forget_settings()
        requests.post(
            f"{self.aws.url}/moto-api/config",
            json={"stepfunctions": {"execute_state_machine": True}},
            timeout=10,
        ).raise_for_status()
        self._provision()
        if c.reconcile_every_seconds:
            threading.Thread(target=self._reconcile_periodically, daemon=True).start()

    def _reconcile_periodically(self) -> None:
        """The deployed stack's schedule, locally: errors are reported and the next
        round tries again."""
        while not self._stopping.wait(self.config.reconcile_every_seconds or 60):
            invoke("Reconciler", {})

    def stop(self) -> None:
        self._stopping.set()
        if self._moto is not None:
            self._moto.stop()
        for server in reversed(self._servers):
            server.stop()
        self._servers = []

    def __enter__(self) -> LocalStack:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # --- what it offers ----------------------------------------------------------------

    @property
    def aws(self) -> MotoProcess:
        """moto, the AWS endpoint (`.url`), in its own process."""
        if self._moto is None:
            raise RuntimeError("the local stack is not started")
        return self._moto

    @property
    def whatsapp_url(self) -> str:
        return f"{self.gateway.url}/whatsapp"

    @property
    def sms_url(self) -> str:
        return f"{self.gateway.url}/sms"

    @property
    def openai_url(self) -> str | None:
        return f"{self.openai_server.url}/v1" if self.openai_server else None

    @property
    def twilio_url(self) -> str | None:
        return self.twilio_server.url if self.twilio_server else None

    def scale_retry_delays(self, scale: float) -> None:
        """Make the state machine's Retry wait `scale` times its delays (1: as written),
        so that a test spends every retry of a run in a moment (infra/local/moto_process.py)."""
        url = f"{self.aws.url}{RETRY_DELAY_SCALE_PATH}"
        requests.post(url, json={"scale": scale}, timeout=10).raise_for_status()

    def client(self, service: str) -> Any:
        return boto3.client(service, endpoint_url=self.aws.url, region_name=REGION)

    # --- setup -------------------------------------------------------------------------

    def _environment(self) -> dict[str, str]:
        c = self.config
        env = {
            "AWS_ACCESS_KEY_ID": "local",
            "AWS_SECRET_ACCESS_KEY": "local",
            "AWS_DEFAULT_REGION": REGION,
            "AWS_REGION": REGION,
            "AWS_ENDPOINT_URL": self.aws.url,
            "STATE_MACHINE_ARN": self.state_machine_arn,
            "EVENT_BUS_NAME": EVENT_BUS_NAME,
            "TWILIO_TENANT_READER_ROLE_ARN": f"arn:aws:iam::{ACCOUNT}:role/{STACK_NAME}-tenant-reader",
            "OPENAI_TENANT_READER_ROLE_ARN": f"arn:aws:iam::{ACCOUNT}:role/{STACK_NAME}-openai-tenant-reader",
            "TOOL_TENANT_READER_ROLE_ARN": f"arn:aws:iam::{ACCOUNT}:role/{STACK_NAME}-tool-tenant-reader",
            # The tool endpoints the tests run listen on loopback, over http.
            "TOOL_LOOPBACK_HTTP": "true",
            **c.function_settings(),
            "POWERTOOLS_METRICS_NAMESPACE": metrics_namespace(STACK_NAME),
            # EMF metrics are CloudWatch's; locally they would only clutter the output.
            "POWERTOOLS_METRICS_DISABLED": os.environ.get("POWERTOOLS_METRICS_DISABLED", "true"),
            "POWERTOOLS_SERVICE_NAME": "burst-reply",
            "WEBHOOK_BASE_URL": c.webhook_base_url or self.gateway.url,
        }
        env.update({t.env_var: t.logical_id for t in ALL_TABLES})
        if self.openai_server:
            env["OPENAI_BASE_URL"] = f"{self.openai_server.url}/v1"
        if self.twilio_server:
            env["TWILIO_API_BASE_URL"] = self.twilio_server.url
        env.update(c.extra_env)
        return env

    def _provision(self) -> None:
        dynamodb = self.client("dynamodb")
        for table in ALL_TABLES:
            dynamodb.create_table(**create_table_request(table))
            if table.ttl_attribute:
                dynamodb.update_time_to_live(
                    TableName=table.logical_id,
                    TimeToLiveSpecification={"Enabled": True, "AttributeName": table.ttl_attribute},
                )
        openai, twilio = OpenAIKeySettings.get(), TenancySettings.get()
        secrets = self.client("secretsmanager")
        c = self.config
        for name, value in (
            (openai.openai_secret_name, json.dumps({"api_key": c.openai_api_key})),
            (ConversationIdSettings.get().conversation_id_key_secret_name, os.urandom(32).hex()),  # its own
        ):
            secrets.create_secret(Name=name, SecretString=value)
        self.openai.add_key(c.openai_api_key)  # the stand-ins accept what the stack hands out
        self.tenants = LocalTenantAdmin(
            Names(TENANTS.logical_id, twilio.twilio_tenant_secret_prefix, openai.openai_tenant_secret_prefix),
            secrets,
            self,
        )
        self.tenants.add(c.twilio_account_sid, c.twilio_auth_token, list(c.twilio_numbers))
        event_rules.provision(self.client("events"), EventSettings.get().event_bus_name)
        arns = {f.logical_id: f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:{f.logical_id}" for f in TASKS}
        definition = render(definition_substitutions({t.logical_id: t.logical_id for t in ALL_TABLES}, arns))
        self.client("stepfunctions").create_state_machine(
            name=STATE_MACHINE_NAME,
            definition=json.dumps(definition),
            roleArn=f"arn:aws:iam::{ACCOUNT}:role/{STATE_MACHINE_NAME}",
            type="STANDARD",
        )


class LocalTenantAdmin(TenantAdmin):
    """`python -m infra.tenants`, as the local stack's tests and demo use it, with the
    stand-ins told of what exists at the vendors: a new tenant's account and token at
    Twilio (an account the Twilio stand-in knows keeps its token: rotating it there is the
    stand-in's `set_account`, apart from the secret), a tenant's own key at OpenAI."""

    def __init__(self, names: Names, secretsmanager: Any, stack: LocalStack) -> None:
        super().__init__(names, secretsmanager)
        self.stack = stack

    def add(self, account_sid: str, auth_token: str, numbers: list[str]) -> None:
        super().add(account_sid, auth_token, numbers)
        if not self.stack.twilio.knows(account_sid):
            self.stack.twilio.set_account(account_sid, auth_token)

    def set_openai_key(self, account_sid: str, api_key: str, name: str = "") -> str:
        secret_name = super().set_openai_key(account_sid, api_key, name)
        self.stack.openai.add_key(api_key)
        return secret_name
