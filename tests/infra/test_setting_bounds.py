"""Settings that reach AWS stop the synth, named, outside what AWS accepts: the wait task's
timeout (MAX_WAIT_SECONDS), a Twilio request inside its Lambda's timeout
(TWILIO_TIMEOUT_SECONDS), a cache age (SECRETS_MAX_AGE_SECONDS), and the functions' own
timeouts and memory (Lambda's 1 to 900 s, 128 to 10,240 MB). Each one read as a deployment's
settings file is (infra/deployment_settings.py validate, at synth)."""

from __future__ import annotations

from pathlib import Path

import pytest
from annotated_types import Le

from functions.batching.rules.burst import MAX_WAIT_LIMIT_SECONDS
from functions.registry import ALL_FUNCTIONS, ALL_SETTINGS, FunctionDefinition
from infra.deployment_settings import DeploymentSettingsError
from infra.stack_settings import StackSettings

pytestmark = pytest.mark.infra


def _synth_settings(tmp_path: Path, line: str) -> dict[str, str]:
    """The functions' settings a deployment given the file `line` would synthesize."""
    path = tmp_path / "deployment.env"
    path.write_text(line + "\n")
    context = {"settings_file": str(path)}
    return StackSettings.from_context(context.get, tmp_path, tmp_path).functions_environment()


@pytest.mark.parametrize(
    ("name", "refused", "accepted"),
    [
        ("MAX_WAIT_SECONDS", ["601", "0"], ["600", "0.5"]),
        ("TWILIO_TIMEOUT_SECONDS", ["10.5", "0", "-1"], ["10", "0.5"]),
        ("SECRETS_MAX_AGE_SECONDS", ["-1"], ["0", "86400"]),
    ],
)
def test_a_setting_outside_what_aws_accepts_stops_the_synth_naming_it(tmp_path, name, refused, accepted):
    for value in refused:
        with pytest.raises(DeploymentSettingsError, match=rf"\b{name}\b") as error:
            _synth_settings(tmp_path, f"{name}={value}")
        assert f"={value}" not in str(error.value) and f"'{value}'" not in str(error.value)  # never the value
    for value in accepted:
        assert _synth_settings(tmp_path, f"{name}={value}")[name] == value


def _upper_bound(name: str) -> float:
    (field,) = [model.model_fields[name] for model in ALL_SETTINGS if name in model.model_fields]
    (bound,) = [m.le for m in field.metadata if isinstance(m, Le)]
    return float(bound)


def test_max_wait_is_bounded_where_a_conversations_own_rules_are_clamped():
    assert _upper_bound("max_wait_seconds") == MAX_WAIT_LIMIT_SECONDS


def test_a_twilio_request_ends_inside_the_timeout_of_every_function_that_makes_one():
    callers = [f for f in ALL_FUNCTIONS if "TWILIO_TIMEOUT_SECONDS" in f.variables]
    assert {f.logical_id for f in callers} >= {"SendReply", "StatusCallback"}
    assert _upper_bound("twilio_timeout_seconds") < min(f.timeout_seconds for f in callers)


@pytest.mark.parametrize(
    ("timeout", "memory", "amiss"),
    [
        (901, 256, "timeout_seconds 901"),
        (0, 256, "timeout_seconds 0"),
        (30, 64, "memory_mb 64"),
        (30, 10_241, "memory_mb 10241"),
    ],
)
def test_a_function_lambda_would_refuse_stops_the_synth_naming_it(timeout, memory, amiss):
    from infra.constructs.functions import _within_lambdas_bounds

    with pytest.raises(ValueError, match=f"^Odd: {amiss}, Lambda accepts"):
        _within_lambdas_bounds(FunctionDefinition("Odd", timeout_seconds=timeout, memory_mb=memory))
    for definition in (*ALL_FUNCTIONS, FunctionDefinition("Edge", timeout_seconds=900, memory_mb=10_240)):
        assert _within_lambdas_bounds(definition) is definition
