"""The CDK app: `make synth` runs this module; `make deploy` runs it through the CDK CLI.

Context (cdk.json or `-c name=value`): batch_window_seconds, auto_create_conversations,
state_machine_log_level, api_rate_limit, api_burst_limit, webhook_base_url,
twilio_connection_overrides, alarm_email, openai_model, openai_fallback_model, stack_name.
A model that OpenAI shuts down within 30 days (or has shut down) is warned about on
standard error."""

from __future__ import annotations

import os
import sys
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

from aws_cdk import App, Aspects, Environment
from cdk_nag import AwsSolutionsChecks

from functions.integrations.openai_models import warn_if_retiring
from infra.names import STACK_NAME, StackSettings
from infra.stack import BurstReplyStack

ROOT = Path(__file__).resolve().parent.parent
BUILD = ROOT / "build" / "lambda"


def build_app(
    code_directory: Path,
    dependencies_directory: Path,
    outdir: str | None = None,
    context: dict[str, Any] | None = None,
) -> tuple[App, BurstReplyStack]:
    """The app and its stack; `context` adds to the CDK context (as `-c name=value` does)."""
    # Path metadata (as the CDK CLI adds) lets tests and the console name each resource.
    app = App(outdir=outdir, context={"aws:cdk:enable-path-metadata": True, **(context or {})})
    chosen = app.node.try_get_context
    settings = StackSettings.from_context(chosen, code_directory, dependencies_directory)
    stack = BurstReplyStack(
        app,
        str(chosen("stack_name") or STACK_NAME),
        settings,
        env=Environment(account=None, region=None),
        description="Batched AI replies for WhatsApp and SMS (burst-reply)",
    )
    Aspects.of(app).add(AwsSolutionsChecks(verbose=True))
    return app, stack


def model_warnings(settings: StackSettings, today: date) -> list[str]:
    """Warnings for the configured models that OpenAI shuts down within 30 days, or has."""
    chosen = {"OPENAI_MODEL": settings.openai_model, "OPENAI_FALLBACK_MODEL": settings.openai_fallback_model}
    warnings = (warn_if_retiring(model, today, setting=name) for name, model in chosen.items() if model)
    return [warning for warning in warnings if warning]


def warn_about_models(settings: StackSettings, today: date) -> None:
    for warning in model_warnings(settings, today):
        print(f"WARNING: {warning}", file=sys.stderr)


def main() -> int:
    code, dependencies = BUILD / "code", BUILD / "dependencies"
    if not (code / "functions").is_dir() or not (dependencies / "python").is_dir():
        print("Lambda code is not built: run `make build` (or `make synth`).", file=sys.stderr)
        return 2
    app, stack = build_app(code, dependencies, outdir=os.environ.get("CDK_OUTDIR", str(ROOT / "cdk.out")))
    warn_about_models(stack.settings, datetime.now(UTC).date())
    app.synth()
    return 0


if __name__ == "__main__":
    sys.exit(main())
