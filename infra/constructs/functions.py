"""The Lambda functions, one per row of functions/registry.py."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from aws_cdk import Duration, RemovalPolicy, Stack, Token
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from cdk_nag import NagPackSuppression, NagSuppressions
from constructs import Construct

from functions.registry import ALL_FUNCTIONS, FunctionDefinition
from infra.deployment_settings import for_function
from infra.names import SERVICE, metrics_namespace
from infra.stack_settings import StackSettings

# The Python the tests run on (the Makefile finds it) and the layer is built for
# (infra/build_lambda.py, LAMBDA_PYTHON in infra/checks.py): tests/infra keeps them equal.
RUNTIME = lambda_.Runtime.PYTHON_3_13


class Functions(Construct):
    """One Lambda function per registry entry, arm64, with Powertools, X-Ray and JSON logs.
    Each is given the settings of the models its row declares (functions/registry.py), and
    no other: of the stack's own names (`environment`, and those `give` adds later), and of
    the deployment's choices (`chosen`)."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        settings: StackSettings,
        environment: dict[str, str],
        chosen: Mapping[str, str],
    ):
        super().__init__(scope, construct_id)
        code = lambda_.Code.from_asset(str(settings.code_directory))
        dependencies = lambda_.LayerVersion(
            self,
            "Dependencies",
            code=lambda_.Code.from_asset(str(settings.dependencies_directory)),
            compatible_runtimes=[RUNTIME],
            compatible_architectures=[lambda_.Architecture.ARM_64],
            description="boto3, aws-lambda-powertools, pydantic, openai, twilio and dependencies (uv.lock)",
        )
        self.by_logical_id: dict[str, lambda_.Function] = {}
        for definition in map(_within_lambdas_bounds, ALL_FUNCTIONS):
            own = {**for_function(definition, environment), **for_function(definition, chosen)}
            self.by_logical_id[definition.logical_id] = self._function(definition, code, dependencies, own)

    def _function(
        self,
        definition: FunctionDefinition,
        code: lambda_.Code,
        dependencies: lambda_.ILayerVersion,
        environment: dict[str, str],
    ) -> lambda_.Function:
        log_group = logs.LogGroup(
            self,
            f"{definition.logical_id}Logs",
            retention=logs.RetentionDays.ONE_MONTH,
            removal_policy=RemovalPolicy.DESTROY,
        )
        function = lambda_.Function(
            self,
            definition.logical_id,
            runtime=RUNTIME,
            architecture=lambda_.Architecture.ARM_64,
            handler=definition.handler,
            code=code,
            layers=[dependencies],
            timeout=Duration.seconds(definition.timeout_seconds),
            memory_size=definition.memory_mb,
            tracing=lambda_.Tracing.ACTIVE,
            log_group=log_group,
            logging_format=lambda_.LoggingFormat.JSON,
            environment=_within_lambdas_limit(
                definition,
                {
                    **environment,
                    "POWERTOOLS_SERVICE_NAME": SERVICE,
                    # The stack's own: its alarms read its functions' metrics only.
                    "POWERTOOLS_METRICS_NAMESPACE": metrics_namespace(Stack.of(self).stack_name),
                    "POWERTOOLS_LOG_LEVEL": "INFO",
                },
            ),
        )
        _explain(function)
        return function

    def __getitem__(self, logical_id: str) -> lambda_.Function:
        return self.by_logical_id[logical_id]

    def give(self, name: str, value: str, readers: Iterable[str] | None = None) -> list[str]:
        """Give the stack's own setting `name` (a resource made after the functions) to the
        functions whose models hold it; their logical ids. `readers`: the functions the stack's
        grants let use what it names; synth fails, naming both, unless they are the same."""
        declaring = [d.logical_id for d in ALL_FUNCTIONS if name in d.variables]
        if readers is not None and set(readers) != set(declaring):
            raise ValueError(
                f"{name}: granted to {sorted(readers)}, but declared by {sorted(declaring)} "
                "(the settings of their rows in functions/registry.py)"
            )
        for logical_id in declaring:
            self[logical_id].add_environment(name, value)
        return declaring


# What Lambda accepts: a timeout of 1 to 900 seconds, 128 to 10,240 MB of memory
# (https://docs.aws.amazon.com/lambda/latest/dg/gettingstarted-limits.html).
TIMEOUT_SECONDS = (1, 900)
MEMORY_MB = (128, 10_240)


def _within_lambdas_bounds(definition: FunctionDefinition) -> FunctionDefinition:
    """The function's timeout and memory, if Lambda accepts them; otherwise synth fails,
    naming the function (CloudFormation would fail its create and roll the stack back)."""
    for what, value, (low, high) in (
        ("timeout_seconds", definition.timeout_seconds, TIMEOUT_SECONDS),
        ("memory_mb", definition.memory_mb, MEMORY_MB),
    ):
        if not low <= value <= high:
            raise ValueError(f"{definition.logical_id}: {what} {value}, Lambda accepts {low} to {high}")
    return definition


# Lambda's quota on a function's environment: 4 KB, names and values together
# (https://docs.aws.amazon.com/lambda/latest/dg/gettingstarted-limits.html). A name or ARN
# CloudFormation fills in at deploy is counted at the longest it gets here.
ENVIRONMENT_LIMIT_BYTES = 4096
_UNRESOLVED_BYTES = 160


def _within_lambdas_limit(definition: FunctionDefinition, environment: dict[str, str]) -> dict[str, str]:
    """The environment, if it fits Lambda's 4 KB; otherwise synth fails, naming the function."""
    size = sum(
        len(name.encode()) + (_UNRESOLVED_BYTES if Token.is_unresolved(value) else len(value.encode()))
        for name, value in environment.items()
    )
    if size > ENVIRONMENT_LIMIT_BYTES:
        raise ValueError(
            f"{definition.logical_id}: its settings take about {size} bytes, over Lambda's "
            f"{ENVIRONMENT_LIMIT_BYTES}-byte limit on a function's environment; shorten the longest "
            "(OPENAI_INSTRUCTIONS: give a conversation or project its own instead)"
        )
    return environment


def _explain(function: lambda_.Function) -> None:
    """Why cdk-nag's findings on a function do not apply."""
    NagSuppressions.add_resource_suppressions(
        function,
        [
            NagPackSuppression(
                id="AwsSolutions-IAM4",
                reason="AWSLambdaBasicExecutionRole only lets the function write its own logs.",
                applies_to=[
                    "Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole"
                ],
            ),
            NagPackSuppression(
                id="AwsSolutions-L1",
                reason="Python 3.13, the Python the tests run on; Lambda supports it until 2029.",
            ),
            NagPackSuppression(
                id="AwsSolutions-IAM5",
                reason="X-Ray trace and telemetry actions, and states:SendTaskSuccess (a run is woken by "
                "its task token), support no resource-level permissions.",
                applies_to=["Resource::*"],
            ),
        ],
        apply_to_children=True,
    )
