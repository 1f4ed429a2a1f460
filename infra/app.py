"""The CDK app: `make synth` runs this module; `make deploy` runs it through the CDK CLI.

Context (cdk.json or `-c name=value`, which `python -m infra.app` takes too): the fields of
`infra.stack_settings.StackSettings` (api_rate_limit, alarm_email, ...), any function setting
by its name in lower case (batch_window_seconds, openai_model, ...), stack_name, and
settings_file: a file of `NAME=value` lines giving any documented setting (`make synth
SETTINGS=FILE`; infra/deployment_settings.py). A setting amiss fails synth, naming it. A
model that OpenAI shuts down within 30 days (or has shut down) is warned about on standard
error."""

from __future__ import annotations

import os
import sys
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

from aws_cdk import App, Aspects, Environment
from cdk_nag import AwsSolutionsChecks

from functions.answer.openai_models import warn_if_retiring
from functions.answer.settings import AnswerSettings
from infra.names import STACK_NAME
from infra.stack import BurstReplyStack
from infra.stack_settings import StackSettings

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
        # -c stack_name, or STACK_NAME as every operator command reads it (infra/stack_lookup.py).
        str(chosen("stack_name") or os.environ.get("STACK_NAME") or STACK_NAME),
        settings,
        env=Environment(account=None, region=None),
        description="Batched AI replies for WhatsApp and SMS (burst-reply)",
    )
    Aspects.of(app).add(AwsSolutionsChecks(verbose=True))
    return app, stack


def model_warnings(settings: StackSettings, today: date) -> list[str]:
    """Warnings for the configured models that OpenAI shuts down within 30 days, or has."""
    answer = settings.functions(AnswerSettings)
    chosen = {"OPENAI_MODEL": answer.openai_model, "OPENAI_FALLBACK_MODEL": answer.openai_fallback_model}
    warnings = (warn_if_retiring(model, today, setting=name) for name, model in chosen.items() if model)
    return [warning for warning in warnings if warning]


def warn_about_models(settings: StackSettings, today: date) -> None:
    for warning in model_warnings(settings, today):
        print(f"WARNING: {warning}", file=sys.stderr)


def context_arguments(argv: list[str]) -> dict[str, str]:
    """`-c name=value` arguments, as the CDK CLI takes them."""
    context: dict[str, str] = {}
    for flag, pair in zip(argv[::2], argv[1::2], strict=False):
        if flag not in ("-c", "--context") or "=" not in pair:
            raise ValueError(f"expected -c name=value, got {flag} {pair}")
        name, _, value = pair.partition("=")
        context[name] = value
    return context


def main(argv: list[str] | None = None) -> int:
    code, dependencies = BUILD / "code", BUILD / "dependencies"
    if not (code / "functions").is_dir() or not (dependencies / "python").is_dir():
        print("Lambda code is not built: run `make build` (or `make synth`).", file=sys.stderr)
        return 2
    try:
        context = context_arguments(sys.argv[1:] if argv is None else argv)
        app, stack = build_app(
            code, dependencies, os.environ.get("CDK_OUTDIR", str(ROOT / "cdk.out")), context
        )
    except ValueError as error:  # a setting amiss, named (never its value)
        print(f"Not synthesized: {error}", file=sys.stderr)
        return 2
    warn_about_models(stack.settings, datetime.now(UTC).date())
    app.synth()
    return 0


if __name__ == "__main__":
    sys.exit(main())
