"""`python -m infra.iam [--template FILE] [--calls FILE]`: IAM's decision on every call
the last test run recorded (build/iam/aws-calls.json) and on the state machine's direct
integrations, against the synthesized template (cdk.out, `make synth`; synthesized here
when absent). Prints every denial and every grant nothing used; exits 1 on a denial."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from infra.iam import CALLS_FILE, evaluate_recording, load_template, synthesize, template_file
from infra.local.aws_calls import load


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m infra.iam", description=__doc__)
    parser.add_argument("--template", type=Path, default=None)
    parser.add_argument("--calls", type=Path, default=CALLS_FILE)
    args = parser.parse_args(argv)
    if not args.calls.exists():
        print(f"No recorded calls in {args.calls}: run the tests first (make test).", file=sys.stderr)
        return 2
    path = args.template or template_file()
    template = load_template(path) if path.exists() else synthesize()
    recording = load(args.calls)
    report = evaluate_recording(template, recording)
    for line in report.lines():
        print(line)
    print(
        f"IAM: {len(report.evaluated)} requests from {len(recording.calls)} recorded calls and the "
        f"state machine's integrations; {len(report.denied)} denied, {len(report.unmapped)} unknown, "
        f"{len(report.unused)} roles with grants no call used."
    )
    return 0 if report.ok else 1


if __name__ == "__main__":
    sys.exit(main())
