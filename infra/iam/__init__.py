"""Least privilege, evaluated: every AWS call the functions make on the local stack, and
every direct integration of the state machine, judged against the synthesized template's
policies as IAM would judge it (`python -m infra.iam`, and at the end of every test run)."""

from __future__ import annotations

import functools
import json
import os
import tempfile
from pathlib import Path
from typing import Any

from functions.stack_names import STACK_NAME
from infra.iam.evaluate import Report, evaluate
from infra.iam.template import Deployed
from infra.local.aws_calls import Recording
from infra.statemachine import DEFINITION_FILE

ROOT = Path(__file__).resolve().parent.parent.parent
# Where a test run leaves the calls its functions made, for `python -m infra.iam`.
CALLS_FILE = ROOT / "build" / "iam" / "aws-calls.json"


def template_file(stack: str | None = None) -> Path:
    """The template `make synth` wrote for the stack: `stack`, else STACK_NAME, else
    BurstReply (as infra/app.py names it), in CDK_OUTDIR, else cdk.out."""
    name = stack or os.environ.get("STACK_NAME") or STACK_NAME
    return Path(os.environ.get("CDK_OUTDIR") or ROOT / "cdk.out") / f"{name}.template.json"


# The template a test run synthesized and judged its calls against (make test's preflight
# reads it rather than synthesizing the same code again).
TESTED_TEMPLATE_FILE = ROOT / "build" / "iam" / "template.json"


@functools.cache
def synthesize_stack() -> tuple[Any, dict[str, Any], Path]:
    """The stack, its template and its cdk.out folder, synthesized offline with empty assets (the code is not
    what IAM evaluates); once per process."""
    from aws_cdk.assertions import Template

    from infra.app import build_app

    root = Path(tempfile.mkdtemp(prefix="burst-reply-synth-"))
    (root / "code" / "functions").mkdir(parents=True)
    (root / "code" / "functions" / "__init__.py").write_text("")
    (root / "dependencies" / "python").mkdir(parents=True)
    _, stack = build_app(root / "code", root / "dependencies", outdir=str(root / "cdk.out"))
    template = dict(Template.from_stack(stack).to_json())
    return stack, template, root / "cdk.out"


def synthesize() -> dict[str, Any]:
    return synthesize_stack()[1]


def evaluate_recording(template: dict[str, Any], recording: Recording) -> Report:
    return evaluate(Deployed(template), DEFINITION_FILE.read_text(), recording)


def load_template(path: Path) -> dict[str, Any]:
    template: dict[str, Any] = json.loads(path.read_text())
    return template


__all__ = [
    "CALLS_FILE",
    "TESTED_TEMPLATE_FILE",
    "template_file",
    "Report",
    "evaluate_recording",
    "load_template",
    "synthesize",
]
