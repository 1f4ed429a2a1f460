"""The CDK app: `make synth` runs this module; `make deploy` runs it through the CDK CLI.

Context (cdk.json or `-c name=value`): batch_window_seconds, auto_create_conversations,
state_machine_log_level, api_rate_limit, api_burst_limit, webhook_base_url,
twilio_connection_overrides, alarm_email, stack_name."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from aws_cdk import App, Aspects, Environment
from cdk_nag import AwsSolutionsChecks

from infra.names import STACK_NAME, StackSettings
from infra.stack import BurstReplyStack

ROOT = Path(__file__).resolve().parent.parent
BUILD = ROOT / "build" / "lambda"


def build_app(
    code_directory: Path,
    dependencies_directory: Path,
    outdir: str | None = None,
    extra_context: dict[str, object] | None = None,
) -> tuple[App, BurstReplyStack]:
    # Path metadata (as the CDK CLI adds) lets tests and the console name each resource.
    app = App(outdir=outdir, context={"aws:cdk:enable-path-metadata": True, **(extra_context or {})})
    context = app.node.try_get_context
    settings = StackSettings.from_context(context, code_directory, dependencies_directory)
    stack = BurstReplyStack(
        app,
        str(context("stack_name") or STACK_NAME),
        settings,
        env=Environment(account=None, region=None),
        description="Batched AI replies for WhatsApp and SMS (burst-reply)",
    )
    Aspects.of(app).add(AwsSolutionsChecks(verbose=True))
    return app, stack


def main() -> int:
    code, dependencies = BUILD / "code", BUILD / "dependencies"
    if not (code / "functions").is_dir() or not (dependencies / "python").is_dir():
        print("Lambda code is not built: run `make build` (or `make synth`).", file=sys.stderr)
        return 2
    app, _ = build_app(code, dependencies, outdir=os.environ.get("CDK_OUTDIR", str(ROOT / "cdk.out")))
    app.synth()
    return 0


if __name__ == "__main__":
    sys.exit(main())
