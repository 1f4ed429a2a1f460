"""`make preflight` (which `make deploy` runs first, and `make test` runs last): what AWS
will check and the emulator does not, checked on the synthesized template (cdk.out; with
`--tested`, the one the test run synthesized and judged its calls against) and the built
asset (build/lambda). Prints a checklist; any red line fails it.

- IAM: every AWS call the functions made in the last test run, and every direct
  integration of the state machine, allowed by the deployed roles (infra/iam).
- Runtime: every function runs the Python this check (and the tests) run on.
- Asset: every module compiled for Lambda's Python (unchecked-hash bytecode, as Lambda's
  read-only /var/task and /opt need), nothing compiled or built for another Python or
  machine, code and layer within Lambda's 250 MB unzipped, and every handler imports from
  it alone.
- Lock: uv.lock matches pyproject.toml, and the layer holds what it pins.
- Alarms: every alarm notifies someone.
- Model: no configured OpenAI model (OPENAI_MODEL, OPENAI_FALLBACK_MODEL,
  TRANSCRIPTION_MODEL) is within 30 days of its shutdown: the date OpenAI's models API
  reports when OPENAI_API_KEY is set, else the announced one the project lists.
- Bus policy: the event bus's policy is in the form EventBridge accepts.
- WhatsApp template: found through Twilio's Content API, its variables given
  (preflight_template.py), when TWILIO_ACCOUNT_SID and TWILIO_AUTH_TOKEN are set.
- WhatsApp senders: the Messaging Service the template goes through holds a WhatsApp sender,
  and every one TWILIO_WHATSAPP_SENDERS lists (preflight_template.py), with the same
  credentials."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import openai

from functions.answer.openai_models import retiring_warning, shutdown_of
from functions.registry import ALL_SETTINGS
from infra import build_lambda, checks, preflight_template
from infra.iam import CALLS_FILE, TESTED_TEMPLATE_FILE, evaluate_recording, load_template, template_file
from infra.iam.template import Deployed
from infra.local.aws_calls import load

ROOT = Path(__file__).resolve().parent.parent
# What a recording of calls must be newer than: the code that makes the calls and the
# definitions of the grants.
SOURCES = ("functions", "infra", "statemachines")


@dataclass(frozen=True)
class Line:
    ok: bool
    what: str
    detail: str

    def __str__(self) -> str:
        return f"[{'ok' if self.ok else 'RED'}] {self.what}: {self.detail}"


def _functions(template: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Our functions (not CDK's own helpers), by their registry name."""
    found = {}
    for resource in Deployed(template).of_type("AWS::Lambda::Function").values():
        path = resource.get("Metadata", {}).get("aws:cdk:path", "")
        if "/Functions/" in path:
            found[path.split("/Functions/")[1].split("/")[0]] = resource
    return found


def iam(template: dict[str, Any]) -> Line:
    if not CALLS_FILE.exists():
        return Line(False, "IAM", "no calls recorded: run make test (the tests record them)")
    sources = [p for d in SOURCES for p in (ROOT / d).rglob("*") if p.suffix in (".py", ".json")]
    newest = max(p.stat().st_mtime for p in sources)
    if CALLS_FILE.stat().st_mtime < newest:
        return Line(False, "IAM", "the code changed after the calls were recorded: run make test")
    recording = load(CALLS_FILE)
    report = evaluate_recording(template, recording)
    if not report.ok:
        return Line(False, "IAM", "; ".join(report.lines()[: len(report.denied) + len(report.unmapped)]))
    return Line(
        True, "IAM", f"{len(report.evaluated)} requests from {len(recording.calls)} calls, all allowed"
    )


def runtime(template: dict[str, Any]) -> Line:
    tested = f"python{sys.version_info.major}.{sys.version_info.minor}"
    runtimes = {r["Properties"]["Runtime"] for r in _functions(template).values()}
    return Line(runtimes == {tested}, "Runtime", f"functions on {sorted(runtimes)}, tests on {tested}")


def bytecode(_: dict[str, Any]) -> Line:
    problems = build_lambda.verify()
    shown = "every module compiled for Lambda's Python, every handler imports; " + checks.describe_size(
        build_lambda.BUILD
    )
    return Line(not problems, "Asset", "; ".join(problems) or shown)


def lock(_: dict[str, Any]) -> Line:
    uv = ROOT / ".venv" / "bin" / "uv"
    checked = subprocess.run(
        [str(uv), "lock", "--locked", "--python", sys.executable], cwd=ROOT, capture_output=True, text=True
    )
    detail = "uv.lock matches pyproject.toml" if checked.returncode == 0 else checked.stderr.strip()
    return Line(checked.returncode == 0, "Lock", detail)


def alarms(template: dict[str, Any]) -> Line:
    every = Deployed(template).of_type("AWS::CloudWatch::Alarm")
    silent = sorted(k for k, v in every.items() if not v["Properties"].get("AlarmActions"))
    detail = f"{len(every) - len(silent)} of {len(every)} alarms notify" + (
        f"; silent: {silent}" if silent else ""
    )
    return Line(bool(every) and not silent, "Alarms", detail)


# The settings that name an OpenAI model (TRANSCRIPTION_MODEL: speech to text), as Generate
# Reply is given them, or their defaults.
MODEL_SETTINGS = ("OPENAI_MODEL", "OPENAI_FALLBACK_MODEL", "TRANSCRIPTION_MODEL")


def _default(name: str) -> Any:
    """A function setting's default, by its environment variable ("" if none)."""
    (field,) = [m.model_fields[name.lower()] for m in ALL_SETTINGS if name in m.variables()]
    return "" if field.is_required() else field.default or ""


def model(
    template: dict[str, Any], today: date | None = None, announced: dict[str, date | None] | None = None
) -> Line:
    """Every configured model, against its shutdown date: the one OpenAI's models API
    reports (`announced`; looked up when OPENAI_API_KEY is set), else the list's
    (functions/answer/openai_models.py)."""
    today = today or datetime.now(UTC).date()
    variables = _functions(template)["GenerateReply"]["Properties"]["Environment"]["Variables"]
    defaults = {name: str(_default(name)) for name in MODEL_SETTINGS}
    chosen = {k: m for k in MODEL_SETTINGS if (m := variables.get(k, defaults[k]))}
    if announced is None:
        announced = api_shutdowns(set(chosen.values()))
    warnings = [
        w
        for k, m in chosen.items()
        if (w := retiring_warning(m, announced[m] if m in announced else shutdown_of(m), today, setting=k))
    ]
    shown = ", ".join(f"{k}={m}" for k, m in chosen.items())
    source = " (dates from OpenAI's models API)" if announced else ""
    return Line(not warnings, "Model", "; ".join(warnings) or f"{shown}: no shutdown within 30 days{source}")


def api_shutdowns(models: set[str], client: Any = None) -> dict[str, date | None]:
    """The shutdown date OpenAI's models API reports for each model (`shutdown_date`, None:
    none announced), when OPENAI_API_KEY is set (OPENAI_BASE_URL, if set, is where); {}
    without a key. A model the API does not answer for is left to the list."""
    if client is None:
        if not os.environ.get("OPENAI_API_KEY"):
            return {}
        client = openai.OpenAI(max_retries=1, timeout=10)
    found: dict[str, date | None] = {}
    for name in sorted(models):
        try:
            shutdown = client.models.retrieve(name).shutdown_date
        except openai.OpenAIError:
            continue
        found[name] = date.fromisoformat(shutdown[:10]) if shutdown else None
    return found


def bus_policy(template: dict[str, Any]) -> Line:
    """Each statement in `Statement` (the properties Principal, Action and Condition are
    deprecated), Allow or Deny (EventBridge's own examples hold a Deny), on the bus."""
    deployed = Deployed(template)
    problems = []
    policies = deployed.of_type("AWS::Events::EventBusPolicy")
    for logical_id, policy in policies.items():
        properties = policy["Properties"]
        statements = properties.get("Statement")
        if statements is None or {"Principal", "Action", "Condition"} & properties.keys():
            problems.append(f"{logical_id}: not in the Statement form")
            continue
        for statement in statements if isinstance(statements, list) else [statements]:
            if statement.get("Effect") not in ("Allow", "Deny") or "Principal" not in statement:
                problems.append(f"{logical_id}: a statement without Effect or Principal")
    detail = "; ".join(problems) or f"{len(policies)} policy in the Statement form"
    return Line(bool(policies) and not problems, "Bus policy", detail)


def whatsapp_template(template: dict[str, Any]) -> Line:
    """The WhatsApp template, fetched through Twilio's Content API (preflight_template.py)."""
    variables = _functions(template)[preflight_template.SENDER]["Properties"]["Environment"]["Variables"]
    ok, detail = preflight_template.check(variables)
    return Line(ok, "WhatsApp template", detail)


def whatsapp_senders(template: dict[str, Any]) -> Line:
    """The Messaging Service the template goes through holds WhatsApp senders, and every one
    TWILIO_WHATSAPP_SENDERS lists (preflight_template.py)."""
    variables = _functions(template)[preflight_template.SENDER]["Properties"]["Environment"]["Variables"]
    ok, detail = preflight_template.check_senders(variables)
    return Line(ok, "WhatsApp senders", detail)


CHECKS: tuple[Callable[[dict[str, Any]], Line], ...] = (
    iam,
    runtime,
    bytecode,
    lock,
    alarms,
    model,
    bus_policy,
    whatsapp_template,
    whatsapp_senders,
)


def main(argv: list[str] | None = None) -> int:
    """`--tested`: the template the last test run synthesized and judged its calls against
    (make test), instead of cdk.out's (make preflight synthesizes it first)."""
    tested = "--tested" in (argv if argv is not None else sys.argv[1:])
    path = TESTED_TEMPLATE_FILE if tested else template_file()
    if not path.exists():
        print(f"No template at {path}: run make synth (make preflight does).", file=sys.stderr)
        return 2
    template = load_template(path)
    lines = [check(template) for check in CHECKS]
    print("Preflight (what AWS checks and the emulator does not):")
    for line in lines:
        print(f"  {line}")
    return 0 if all(line.ok for line in lines) else 1


if __name__ == "__main__":
    sys.exit(main())
