"""Which stack an operator command works on, and the names it finds there: one way for
`infra.runs`, `infra.tenants`, `infra.replay` and `infra.smoke`.

The stack is `--stack NAME`, else the STACK_NAME environment variable, else BurstReply.
Each name a command needs (a table, the state machine, the secrets' prefixes, the webhook's
base URL) is, in this order:
- its environment variable, when set: the functions' own setting (TURNS_TABLE,
  STATE_MACHINE_ARN, WEBHOOK_BASE_URL, ...);
- with AWS_ENDPOINT_URL set (the local stack, `make local`): the local stack's, a stack
  named like the deployed one (functions/stack_names.py), with nothing to look up; its
  webhook is the gateway's default address (GATEWAY_PORT, 3000);
- else the stack's CloudFormation outputs (infra/stack.py `_outputs`).

An AWS error a command meets (no region, no credentials, an endpoint that does not answer,
a refusal, a run that does not exist) is one line on standard error and a non-zero exit,
never a traceback (`one_line_errors`)."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Iterable, Mapping

import boto3
from botocore.exceptions import (
    BotoCoreError,
    ClientError,
    EndpointConnectionError,
    NoCredentialsError,
    NoRegionError,
    PartialCredentialsError,
)

from functions.config import SettingsError, forget_settings
from functions.stack_names import (
    STACK_NAME,
    conversation_id_key_secret_name,
    event_bus_name,
    openai_secret_name,
    openai_tenant_secret_prefix,
    state_machine_name,
    tool_tenant_secret_prefix,
    twilio_tenant_secret_prefix,
)
from functions.storage.tables import ALL_TABLES

# Each output of the stack, and the environment variable (the functions' setting) it fills.
OUTPUTS: dict[str, str] = {
    **{f"{t.logical_id}TableName": t.env_var for t in ALL_TABLES},
    "StateMachineArn": "STATE_MACHINE_ARN",
    "EventBusName": "EVENT_BUS_NAME",
    "TwilioTenantSecretPrefix": "TWILIO_TENANT_SECRET_PREFIX",
    "OpenAITenantSecretPrefix": "OPENAI_TENANT_SECRET_PREFIX",
    "ToolTenantSecretPrefix": "TOOL_TENANT_SECRET_PREFIX",
    "OpenAISecretName": "OPENAI_SECRET_NAME",
    "ConversationIdKeySecretName": "CONVERSATION_ID_KEY_SECRET_NAME",
    "WebhookBaseUrl": "WEBHOOK_BASE_URL",
}
TABLES = tuple(t.env_var for t in ALL_TABLES)
# What the functions' settings require (TableSettings, EventSettings): the tables and the bus; and the
# state machine, which `redrive` starts a run on.
FUNCTION_SETTINGS = (*TABLES, "EVENT_BUS_NAME", "STATE_MACHINE_ARN")

# The local stack's account and region (infra/local/stack.py; moto's default account).
LOCAL_ACCOUNT = "123456789012"
LOCAL_REGION = "us-east-1"
LOCAL_GATEWAY_PORT = 3000  # `make local`'s, unless GATEWAY_PORT says otherwise


class LookupFailed(Exception):
    """A name the command needs is nowhere to be found; the message says what to do."""


def add_stack_option(parser: argparse.ArgumentParser, *subcommands: argparse.ArgumentParser) -> None:
    """`--stack NAME` on the command and on each of its subcommands, so that it may come
    before or after the subcommand's name."""
    help_text = "the stack whose names to use (default: STACK_NAME, or BurstReply)"
    parser.add_argument("--stack", default=None, help=help_text)
    for subcommand in subcommands:
        subcommand.add_argument("--stack", default=argparse.SUPPRESS, help=help_text)


def chosen_stack(given: str | None, environ: Mapping[str, str] | None = None) -> str:
    """The stack a command works on: `--stack`, else STACK_NAME, else the default."""
    env = os.environ if environ is None else environ
    return given or env.get("STACK_NAME") or STACK_NAME


def is_local(environ: Mapping[str, str] | None = None) -> bool:
    return bool((os.environ if environ is None else environ).get("AWS_ENDPOINT_URL"))


def local_names(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The names of the local stack (infra/local/stack.py), by environment variable: always
    those of the default stack name it runs under, whatever stack the shell names for AWS."""
    stack_name = STACK_NAME
    env = os.environ if environ is None else environ
    region = env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION") or LOCAL_REGION
    port = env.get("GATEWAY_PORT") or LOCAL_GATEWAY_PORT
    return {
        **{t.env_var: t.logical_id for t in ALL_TABLES},
        "STATE_MACHINE_ARN": f"arn:aws:states:{region}:{LOCAL_ACCOUNT}:stateMachine:"
        + state_machine_name(stack_name),
        "EVENT_BUS_NAME": event_bus_name(stack_name),
        "TWILIO_TENANT_SECRET_PREFIX": twilio_tenant_secret_prefix(stack_name),
        "OPENAI_TENANT_SECRET_PREFIX": openai_tenant_secret_prefix(stack_name),
        "TOOL_TENANT_SECRET_PREFIX": tool_tenant_secret_prefix(stack_name),
        "OPENAI_SECRET_NAME": openai_secret_name(stack_name),
        "CONVERSATION_ID_KEY_SECRET_NAME": conversation_id_key_secret_name(stack_name),
        "WEBHOOK_BASE_URL": f"http://127.0.0.1:{port}",
    }


def outputs_of(stack_name: str) -> dict[str, str]:
    """The stack's CloudFormation outputs, by environment variable (LookupFailed: no such
    stack)."""
    client = boto3.client("cloudformation")
    try:
        stack = client.describe_stacks(StackName=stack_name)["Stacks"][0]
    except ClientError as error:
        if "does not exist" not in str(error.response.get("Error", {}).get("Message", "")):
            raise
        region = client.meta.region_name
        raise LookupFailed(
            f"no stack {stack_name} in {region}: name yours with --stack or STACK_NAME, or set AWS_REGION"
        ) from None
    outputs = {o["OutputKey"]: o["OutputValue"] for o in stack.get("Outputs", [])}
    return {env: outputs[key] for key, env in OUTPUTS.items() if key in outputs}


def names(stack_name: str, needed: Iterable[str], environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """Every name the stack gives that could be found, by environment variable: the
    environment's where set, the others looked up only when one of `needed` is not set
    (LookupFailed if one of `needed` is still missing)."""
    env = os.environ if environ is None else environ
    given = {var: env[var] for var in OUTPUTS.values() if env.get(var)}
    missing = [var for var in needed if var not in given]
    if not missing:
        return given
    found = local_names(env) if is_local(env) else outputs_of(stack_name)
    resolved = {**found, **given}
    if absent := [var for var in missing if var not in resolved]:
        raise LookupFailed(f"stack {stack_name} has no output for {', '.join(absent)}: deploy it again")
    return resolved


def use_stack(stack_name: str, needed: Iterable[str]) -> dict[str, str]:
    """Put the stack's names in this process's environment, where the functions' settings
    read them (functions/config.py), and the local stack's stand-in credentials when
    AWS_ENDPOINT_URL points at it. The names."""
    local_credentials()
    found = names(stack_name, needed)
    os.environ.update(found)
    forget_settings()
    return found


def local_credentials() -> None:
    """The local stack takes any credentials: give boto3 some, and its region, unless set."""
    if not is_local():
        return
    region = os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION") or LOCAL_REGION
    for name, value in (
        ("AWS_DEFAULT_REGION", region),
        ("AWS_ACCESS_KEY_ID", "local"),
        ("AWS_SECRET_ACCESS_KEY", "local"),
    ):
        os.environ.setdefault(name, value)


def one_line_errors(prog: str, command: Callable[[], int]) -> int:
    """Run `command`; an AWS error, or a name not found, is one line on standard error and
    exit status 1."""
    try:
        return command()
    except LookupFailed as error:
        problem = str(error)
    except NoRegionError:
        problem = "no AWS region: set AWS_REGION (or AWS_DEFAULT_REGION, or a profile's region)"
    except (NoCredentialsError, PartialCredentialsError):
        problem = "no AWS credentials: set AWS_PROFILE (aws configure, aws sso login) or AWS_ACCESS_KEY_ID"
    except EndpointConnectionError as error:
        local = " (is the local stack running? make local)" if is_local() else ""
        problem = f"{error}{local}"
    except ClientError as error:
        problem = f"{error.operation_name}: {error.response['Error'].get('Code', '?')}: " + str(
            error.response["Error"].get("Message", "")
        )
    except (BotoCoreError, SettingsError) as error:
        problem = str(error)
    print(f"{prog}: {problem}", file=sys.stderr)
    return 1
