"""A deployment's settings file (`make synth SETTINGS=FILE`, CDK context `settings_file`):
every documented setting can be given, reaches the functions whose rows declare its model
and no other, and is validated at synth by the model the functions read it with."""

from __future__ import annotations

import typing
from pathlib import Path
from typing import Any

import pytest
from annotated_types import Ge, Gt, Le

from functions.config import read_settings
from functions.registry import ALL_FUNCTIONS, ALL_SETTINGS
from infra.deployment_settings import LOCAL_ONLY, SET_BY_STACK, function_setting_names

# infra.app imports the CDK: on the worker that synthesizes (tests/conftest.py SHARED_FIXTURES).
pytestmark = [pytest.mark.infra, pytest.mark.xdist_group("synthesized")]


def _other_value(name: str) -> str:
    """A valid value of the setting other than its default, from its type and bounds."""
    (field,) = [model.model_fields[name] for model in ALL_SETTINGS if name in model.model_fields]
    default, annotation = field.default, field.annotation
    if typing.get_origin(annotation) is typing.Literal:
        return str(next(v for v in typing.get_args(annotation) if v != default))
    if annotation is bool:
        return "false" if default else "true"
    if annotation in (int, float):
        low = next((m.ge if isinstance(m, Ge) else m.gt for m in field.metadata if isinstance(m, Ge | Gt)), 0)
        high = next((m.le for m in field.metadata if isinstance(m, Le)), None)
        value = default + 1 if high is None or default + 1 <= high else max(low + 1, default - 1)
        return str(value)
    if name.endswith("_HOSTS".lower()):
        return f"{name.replace('_', '-')}.example"
    return f"the deployment's {name}"


def _file_with_every_setting(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    chosen = {
        name.upper(): _other_value(name)
        for model in ALL_SETTINGS
        for name in model.model_fields
        if name.upper() not in SET_BY_STACK | LOCAL_ONLY
    }
    chosen["WHATSAPP_TEMPLATE_VARIABLES"] = '{"1": "there"}'  # a JSON object of strings
    chosen["TWILIO_CONNECTION_OVERRIDES"] = "rc=3&rp=all"
    chosen["WEBHOOK_BASE_URL"] = "https://hooks.example.com/burst"
    read_settings({**{n: "x" for n in SET_BY_STACK}, **chosen}, ALL_SETTINGS)  # every value valid
    lines = [f"{name}={value!r}" if " " in value else f"{name}={value}" for name, value in chosen.items()]
    path = tmp_path / "deployment.env"
    path.write_text("# every setting, none at its default\n" + "\n".join(lines) + "\n")
    return path, chosen


def _synthesized(tmp_path: Path, context: dict[str, Any]) -> dict[str, Any]:
    from infra import app as cdk_app

    (tmp_path / "code" / "functions").mkdir(parents=True, exist_ok=True)
    (tmp_path / "code" / "functions" / "__init__.py").write_text("")
    (tmp_path / "dependencies" / "python").mkdir(parents=True, exist_ok=True)
    app, stack = cdk_app.build_app(
        tmp_path / "code", tmp_path / "dependencies", str(tmp_path / "cdk.out"), context
    )
    template: dict[str, Any] = app.synth().get_stack_by_name(stack.stack_name).template
    return template


def _environments(template: dict[str, Any]) -> dict[str, dict[str, Any]]:
    found = {}
    for resource in template["Resources"].values():
        if resource["Type"] == "AWS::Lambda::Function":
            for definition in ALL_FUNCTIONS:
                if f"/Functions/{definition.logical_id}/" in resource["Metadata"]["aws:cdk:path"]:
                    found[definition.logical_id] = resource["Properties"]["Environment"]["Variables"]
    return found


# What Lambda's runtime and Powertools read, set by the stack on every function: no setting of ours.
RUNTIME = {"POWERTOOLS_SERVICE_NAME", "POWERTOOLS_METRICS_NAMESPACE", "POWERTOOLS_LOG_LEVEL"}


def test_every_setting_in_the_file_reaches_every_function_that_declares_it_and_no_other(tmp_path):
    path, chosen = _file_with_every_setting(tmp_path)

    environments = _environments(_synthesized(tmp_path, {"settings_file": str(path)}))

    assert set(environments) == {d.logical_id for d in ALL_FUNCTIONS}
    reached = set()
    for definition in ALL_FUNCTIONS:
        environment = environments[definition.logical_id]
        for name, value in chosen.items():
            if name in definition.variables:
                assert environment.get(name) == value, (definition.logical_id, name)
                reached.add(name)
            else:
                assert name not in environment, (definition.logical_id, name)
    assert reached == set(chosen)  # each setting is read by some function


def test_each_functions_environment_holds_exactly_its_declared_models_settings(tmp_path, synthesized):
    """Every setting chosen: each function holds the variables of the models its row in
    functions/registry.py declares, every one, and no other (the local stack's own left out).
    Nothing chosen: it holds those the stack sets itself, of its models only."""
    path, _ = _file_with_every_setting(tmp_path)
    every = _environments(_synthesized(tmp_path, {"settings_file": str(path)}))
    default = _environments(synthesized[1])

    given_by_the_stack = SET_BY_STACK | {"WEBHOOK_BASE_URL", "TWILIO_CONNECTION_OVERRIDES"}
    for definition in ALL_FUNCTIONS:
        assert definition.settings, definition.logical_id
        declared = definition.variables - LOCAL_ONLY
        assert set(every[definition.logical_id]) - RUNTIME == declared, definition.logical_id
        assert set(default[definition.logical_id]) - RUNTIME == declared & given_by_the_stack, (
            definition.logical_id
        )


def test_the_old_cdk_context_keys_still_choose_the_functions_settings_over_the_file(tmp_path):
    """`-c batch_window_seconds=5`, `-c openai_model=...`, `-c webhook_base_url=...` and the
    other settings that were the stack's own: any function setting is a context key in lower
    case, which wins over the file's line, reaches the functions that declare it, and is
    recorded with the deployment."""
    path = tmp_path / "deployment.env"
    path.write_text("BATCH_WINDOW_SECONDS=7\nAUTO_CREATE_CONVERSATIONS=true\nMAX_BATCH_SIZE=20\n")
    context = {
        "settings_file": str(path),
        "batch_window_seconds": "5",
        "openai_model": "gpt-5-mini",
        "openai_fallback_model": "o3",
        "webhook_base_url": "https://hooks.example.com/burst#rc=3&rp=all",
        "auto_create_conversations": False,  # cdk.json's JSON
    }

    environments = _environments(_synthesized(tmp_path, context))

    webhook, generate = environments["Webhook"], environments["GenerateReply"]
    assert (webhook["BATCH_WINDOW_SECONDS"], webhook["MAX_BATCH_SIZE"]) == ("5", "20")
    assert webhook["AUTO_CREATE_CONVERSATIONS"] == "false"
    assert (webhook["WEBHOOK_BASE_URL"], webhook["TWILIO_CONNECTION_OVERRIDES"]) == (
        "https://hooks.example.com/burst",
        "rc=3&rp=all",
    )
    assert (generate["OPENAI_MODEL"], generate["OPENAI_FALLBACK_MODEL"]) == ("gpt-5-mini", "o3")
    assert "OPENAI_MODEL" not in webhook and "BATCH_WINDOW_SECONDS" not in generate
    from infra.stack_settings import StackSettings

    recorded = StackSettings.from_context(context.get, Path("."), Path(".")).recorded
    assert recorded is not None
    assert set(recorded.names) == {
        "BATCH_WINDOW_SECONDS",
        "AUTO_CREATE_CONVERSATIONS",
        "MAX_BATCH_SIZE",
        "OPENAI_MODEL",
        "OPENAI_FALLBACK_MODEL",
        "WEBHOOK_BASE_URL",
    }


@pytest.mark.parametrize("key", ["turns_table", "state_machine_arn", "tool_loopback_http"])
def test_a_setting_the_stack_sets_itself_is_refused_as_cdk_context_too(key):
    from infra.deployment_settings import DeploymentSettingsError
    from infra.stack_settings import StackSettings

    with pytest.raises(DeploymentSettingsError, match=key.upper()):
        StackSettings.from_context({key: "x"}.get, Path("."), Path("."))


def test_a_stack_setting_in_the_file_is_the_context_unless_c_gives_it(tmp_path):
    from infra.stack_settings import StackSettings

    path = tmp_path / "deployment.env"
    path.write_text("API_RATE_LIMIT=2000\nALARM_EMAIL=oncall@example.com\nBATCH_MODE=quiet\n")

    from_file = StackSettings.from_context({"settings_file": str(path)}.get, Path("."), Path("."))
    overridden = StackSettings.from_context(
        {"settings_file": str(path), "api_rate_limit": "3000"}.get, Path("."), Path(".")
    )

    assert (from_file.api_rate_limit, from_file.alarm_email) == (2000, "oncall@example.com")
    assert from_file.function_settings == {"BATCH_MODE": "quiet"}
    assert overridden.api_rate_limit == 3000


def test_a_misspelt_value_fails_synth_naming_the_variable_and_not_the_value(tmp_path):
    path = tmp_path / "deployment.env"
    path.write_text("BATCH_MODE=adaptve\nMAX_AI_CALLS_PER_HOUR=-5\n")

    with pytest.raises(ValueError) as raised:
        _synthesized(tmp_path, {"settings_file": str(path)})

    message = str(raised.value)
    assert "BATCH_MODE" in message and "MAX_AI_CALLS_PER_HOUR" in message
    assert "adaptve" not in message and "-5" not in message


def test_make_synth_says_which_setting_is_amiss_in_one_line(tmp_path, monkeypatch, capsys):
    from infra import app as cdk_app

    build = tmp_path / "lambda"
    (build / "code" / "functions").mkdir(parents=True)
    (build / "dependencies" / "python").mkdir(parents=True)
    monkeypatch.setattr(cdk_app, "BUILD", build)
    path = tmp_path / "deployment.env"
    path.write_text("BATCH_MODE=adaptve\n")

    assert cdk_app.main(["-c", f"settings_file={path}"]) == 2

    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith("Not synthesized:") and "BATCH_MODE" in line


@pytest.mark.parametrize(
    ("line", "why"),
    [
        ("OPENAI_API_KEY=sk-proj-abcdefghijklmnopqrstuvwxyz0123", "not a setting"),
        ("TURNS_TABLE=MyTurns", "set by the stack"),
        ("FALLBACK_REPLY=sk-proj-abcdefghijklmnopqrstuvwxyz0123", "looks like a secret"),
        ("BATCH_MODE", "no value"),
    ],
)
def test_a_file_that_names_no_setting_the_stacks_own_name_or_a_secret_is_refused(tmp_path, line, why):
    from infra.deployment_settings import DeploymentSettingsError, read_file
    from infra.stack_settings import stack_setting_names

    path = tmp_path / "deployment.env"
    path.write_text(line + "\n")

    with pytest.raises(DeploymentSettingsError, match=why) as raised:
        read_file(path, stack_setting_names())
    assert "abcdefghij" not in str(raised.value)


def test_settings_too_large_for_lambdas_environment_fail_synth_naming_the_function(tmp_path):
    path = tmp_path / "deployment.env"
    path.write_text(f"OPENAI_INSTRUCTIONS={'Be brief. ' * 450}\n")

    with pytest.raises(ValueError, match="GenerateReply.*4096"):
        _synthesized(tmp_path, {"settings_file": str(path)})


def test_a_model_a_function_read_while_the_tests_ran_that_its_row_does_not_declare_is_named():
    from infra.deployment_settings import settings_not_given

    assert settings_not_given([("GenerateReply", "AnswerSettings"), ("Webhook", "BatchingSettings")]) == []
    assert settings_not_given([("Webhook", "MediaSettings"), ("Webhook", "Made up")]) == [
        "NOT GIVEN Webhook: read MediaSettings (MEDIA_IMAGE_INPUT, MEDIA_MAX_BATCH_BYTES, MEDIA_MAX_BYTES, "
        "MEDIA_REDIRECT_HOSTS, MEDIA_TIME_BUDGET_SECONDS, MEDIA_VOICE_TRANSCRIPTION, TRANSCRIPTION_MODEL, "
        "TWILIO_MEDIA_HOSTS), which its row in functions/registry.py does not declare",
        "NOT GIVEN Webhook: read Made up (not in ALL_SETTINGS), which its row in functions/registry.py "
        "does not declare",
    ]


@pytest.mark.parametrize(
    "line",
    [
        "WEBHOOK_RESERVED_CONCURRENCY=-1",
        "API_RATE_LIMIT=0",
        "STATE_MACHINE_LOG_LEVEL=ALLL",
        # AWS WAF's rate-based statement: Limit from 10 to 2,000,000,000 (else the create fails
        # and the stack rolls back)
        "API_RATE_LIMIT_PER_IP=5",
        "API_RATE_LIMIT_PER_IP=2000000001",
    ],
)
def test_a_stack_setting_amiss_in_the_file_is_refused_naming_it(tmp_path, line):
    from infra.stack_settings import StackSettings

    path = tmp_path / "deployment.env"
    path.write_text(line + "\n")
    name = line.partition("=")[0].lower()

    with pytest.raises(ValueError, match=name):
        StackSettings.from_context({"settings_file": str(path)}.get, Path("."), Path("."))


def test_settings_that_contradict_each_other_stop_the_synth_naming_both(tmp_path):
    """Adaptive mode's least quiet wait above its longest would learn nothing: refused."""
    from infra.deployment_settings import DeploymentSettingsError, validate

    with pytest.raises(DeploymentSettingsError, match="QUIET_MIN_SECONDS.*QUIET_MAX_SECONDS"):
        validate({"QUIET_MIN_SECONDS": "30", "QUIET_MAX_SECONDS": "20"})
    validate({"QUIET_MIN_SECONDS": "2", "QUIET_MAX_SECONDS": "20"})


def test_the_docs_give_a_deployments_settings_as_lines_of_its_file_never_as_cdk_context():
    """`make deploy` passes no `-c`: a setting the docs gave as `-c name=value` was a deploy
    without the settings file, which dropped every other setting of the deployment."""
    import re

    from infra.stack_settings import stack_setting_names

    root = Path(__file__).resolve().parent.parent.parent
    names = {name.lower() for name in (*function_setting_names(), *stack_setting_names())} | {"settings_file"}
    context = re.compile(r"(?:-c|--context)[ =]+`?([A-Za-z_]+)=")
    found = [
        f"{page.relative_to(root)}: -c {match[1]}="
        # Not docs/adr/: a decision tells what was done then, and is not rewritten.
        for page in (root / "README.md", *sorted((root / "docs").glob("*.md")))
        for match in context.finditer(page.read_text())
        if match[1] in names or match[1] == "alarmEmail"
    ]
    assert found == []


def test_the_local_stack_records_each_settings_model_a_function_reads_while_it_runs():
    """What settings_not_given judges: infra/local/aws_calls.py wraps SettingsModel.get, and
    keeps (function, model) for a read made inside a handler's invocation, none outside."""
    from functions.answer.settings import MediaSettings
    from infra.local.aws_calls import RECORDER, made_by

    RECORDER._record_settings_read()  # as the local stack's start does (once)
    RECORDER._record_settings_read()
    outside = RECORDER.settings_read()
    MediaSettings.get()
    assert RECORDER.settings_read() == outside

    with made_by("NoSuchFunction"):  # not in the registry: the end-of-session check ignores it
        MediaSettings.get()

    assert ("NoSuchFunction", "MediaSettings") in RECORDER.settings_read()
