"""`python -m infra.account [--stack NAME] [-c name=value ...]` (`make account`; `make deploy`
runs it after `make preflight`, before `cdk deploy`): what a deploy needs of the AWS account
and Region of your credentials, checked before CloudFormation starts. One line per check:
`[ok]`, `[warn]` (the deploy works; something to do), `[FAIL]` (with what to do); exit 1
if any fails. Read-only: it changes nothing in the account (but for --put-openai-key).

- The settings: a stack deployed with a settings file records it (its name, the settings'
  sha256 and names: its output DeploymentSettings); a deploy given no settings file over it
  fails, naming them, and other settings than the deployed ones are reported.
- API Gateway's CloudWatch role is set on the account (the stage's logs need it), unless
  the deploy sets it (`MANAGE_API_GATEWAY_ACCOUNT_ROLE=true` in its settings file).
- Lambda concurrency: room for what the stack reserves, and the floor for real volume.
- CDK bootstrap: the version parameter `cdk deploy` reads.
- The OpenAI key's secret: created by the deploy; then the key must be put in it:
  `python -m infra.account --put-openai-key` (the key on standard input, or typed at its
  prompt; put_key.py), the one thing this command writes, and only when asked.
- AWS WAF (REGIONAL) answers in the Region (the stage's web ACL).
- Tables left behind by an earlier stack of that name (a failed create, a `make destroy`).
- The stage's execution log group, which the stack creates: one API Gateway made itself for
  the deployed stack would fail the update.

The stack: `--stack`, else the context's stack_name (the stack `cdk deploy` deploys), else
STACK_NAME, else BurstReply (infra/stack_lookup.py). The boto3 default credential chain and
Region; `AWS_ENDPOINT_URL` points it elsewhere (moto).

The checks are in checks.py, what they take and give in model.py, running them in run.py."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from infra import stack_lookup
from infra.account.checks import (
    DEFAULT_BOOTSTRAP_PARAMETER,
    bootstrap,
    cloudwatch_role,
    concurrency,
    execution_logs,
    firewall,
    openai_secret,
    orphan_tables,
    settings_given,
)
from infra.account.model import Clients, Deploy, Line
from infra.account.put_key import put_openai_key, read_key
from infra.account.run import check
from infra.iam import template_file
from infra.stack_settings import StackSettings

__all__ = [
    "DEFAULT_BOOTSTRAP_PARAMETER",
    "Clients",
    "Deploy",
    "Line",
    "bootstrap",
    "cdk_context",
    "check",
    "cloudwatch_role",
    "concurrency",
    "execution_logs",
    "firewall",
    "load_template",
    "main",
    "openai_secret",
    "orphan_tables",
    "settings_given",
]

ROOT = Path(__file__).resolve().parent.parent.parent


def cdk_context(given: list[str], root: Path = ROOT) -> dict[str, Any]:
    """The context `cdk deploy` sees: cdk.json's, cdk.context.json, then `-c name=value`."""
    context: dict[str, Any] = {}
    for path, key in ((root / "cdk.json", "context"), (root / "cdk.context.json", None)):
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        context.update(data.get(key, {}) if key else data)
    for pair in given:
        name, _, value = pair.partition("=")
        context[name] = value
    return context


def load_template(stack: str) -> dict[str, Any] | None:
    path = template_file(stack)
    try:
        template: dict[str, Any] = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return template


def main(argv: list[str] | None = None, clients: Clients | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m infra.account", description=__doc__.split("\n\n")[0])
    stack_lookup.add_stack_option(parser)
    parser.add_argument("-c", "--context", action="append", default=[], metavar="NAME=VALUE")
    parser.add_argument(
        "--put-openai-key",
        action="store_true",
        help="put the OpenAI key, read from standard input (or typed, not echoed), in the stack's secret",
    )
    args = parser.parse_args(argv)
    context = cdk_context(args.context)
    if args.put_openai_key:
        stack = stack_lookup.chosen_stack(args.stack or context.get("stack_name"))
        line = put_openai_key(clients or Clients(), stack, read_key())
        print(line)
        return 1 if line.failed else 0
    try:
        settings = StackSettings.from_context(context.get, Path("."), Path("."))
    except ValueError as error:
        print(f"[FAIL] CDK context: {error}")
        return 1
    # The stack `cdk deploy` deploys (its context's stack_name) before STACK_NAME.
    stack = stack_lookup.chosen_stack(args.stack or context.get("stack_name"))
    deploy = Deploy(
        stack, load_template(stack), settings.manage_api_gateway_account_role, settings=settings.recorded
    )
    lines = check(clients or Clients(), deploy)
    print(f"Account checks (what the deploy of {stack} needs of the account):")
    for line in lines:
        print(f"  {line}")
    return 1 if any(line.failed for line in lines) else 0
