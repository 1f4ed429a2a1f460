"""The stage's logs are the stack's own: API Gateway writes a stage's execution logs to
`API-Gateway-Execution-Logs_<restApiId>/<stage>` and creates that group itself, outside any
stack, kept for ever and left after a destroy, unless it already exists
(https://docs.aws.amazon.com/apigateway/latest/developerguide/set-up-logging.html). So the
stack creates it, with a retention, deleted with it, before the stage that writes to it."""

from __future__ import annotations

from typing import Any

import pytest

pytestmark = pytest.mark.infra


def _of_type(template: dict[str, Any], kind: str) -> dict[str, dict[str, Any]]:
    return {k: v for k, v in template["Resources"].items() if v["Type"] == kind}


def _logging_stages(template: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The stages that write execution logs (a method setting with a LoggingLevel but OFF)."""
    return {
        logical_id: stage
        for logical_id, stage in _of_type(template, "AWS::ApiGateway::Stage").items()
        if any(s.get("LoggingLevel", "OFF") != "OFF" for s in stage["Properties"].get("MethodSettings", []))
    }


def test_every_stage_that_logs_writes_to_a_log_group_of_the_stack_kept_a_month_and_deleted_with_it(
    synthesized,
):
    template = synthesized[1]
    stages = _logging_stages(template)
    assert len(stages) == 1  # the webhooks' stage logs its errors
    groups = _of_type(template, "AWS::Logs::LogGroup")
    for logical_id, stage in stages.items():
        expected = {
            "Fn::Join": [
                "",
                [
                    "API-Gateway-Execution-Logs_",
                    stage["Properties"]["RestApiId"],
                    f"/{stage['Properties']['StageName']}",
                ],
            ]
        }
        (group_id,) = [
            g for g, group in groups.items() if group["Properties"].get("LogGroupName") == expected
        ]
        group = groups[group_id]
        assert group["Properties"]["RetentionInDays"] == 30
        assert (group["DeletionPolicy"], group["UpdateReplacePolicy"]) == ("Delete", "Delete")
        # Created before the stage: API Gateway finds it there and does not make its own.
        assert group_id in stage["DependsOn"], logical_id


def test_a_stage_that_writes_no_execution_logs_gets_no_group():
    from aws_cdk import App, Stack
    from aws_cdk import aws_apigateway as apigw
    from aws_cdk import aws_logs as logs
    from aws_cdk.assertions import Template

    from infra.constructs.api import _execution_logs

    made = {}
    for level in (apigw.MethodLoggingLevel.OFF, apigw.MethodLoggingLevel.ERROR):
        stack = Stack(App(), "Logs")
        api = apigw.RestApi(
            stack, "Api", cloud_watch_role=False, deploy_options=apigw.StageOptions(logging_level=level)
        )
        api.root.add_method("GET", apigw.MockIntegration())
        made[level] = _execution_logs(stack, api, "prod", level)
        groups = Template.from_stack(stack).find_resources("AWS::Logs::LogGroup")
        assert len(groups) == (0 if level == apigw.MethodLoggingLevel.OFF else 1)
    assert made[apigw.MethodLoggingLevel.OFF] is None
    assert isinstance(made[apigw.MethodLoggingLevel.ERROR], logs.LogGroup)
