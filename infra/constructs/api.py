"""The REST API Twilio calls: POST /whatsapp and POST /sms (the webhook), and POST
/twilio/status/{conversation}/{window}/{message} (status callbacks of the messages we send)."""

from __future__ import annotations

import json

from aws_cdk import Aws, Duration, RemovalPolicy, Stack
from aws_cdk import aws_apigateway as apigw
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_wafv2 as wafv2
from cdk_nag import NagPackSuppression, NagSuppressions
from constructs import Construct

from functions.registry import STATUS_CALLBACK
from infra.names import metrics_namespace
from infra.stack_settings import StackSettings

# The web ACL's one rule, and the header that exempts a request from it: Twilio signs every
# request it sends (https://www.twilio.com/docs/usage/webhooks/webhooks-security).
UNSIGNED_RULE = "UnsignedPerIpRate"
SIGNATURE_HEADER = "x-twilio-signature"
# The metric the access log's throttled requests are counted in (a metric filter).
THROTTLED_METRIC = "EdgeThrottled"
# The stage's execution logs: errors only, never a body (data_trace_enabled is off).
EXECUTION_LOG_LEVEL = apigw.MethodLoggingLevel.ERROR


def execution_log_group_name(rest_api_id: str, stage_name: str) -> str:
    """Where API Gateway writes a stage's execution logs, creating the group itself (kept for
    ever, outside any stack) when it does not exist:
    https://docs.aws.amazon.com/apigateway/latest/developerguide/set-up-logging.html"""
    return f"API-Gateway-Execution-Logs_{rest_api_id}/{stage_name}"


class WebhookApi(Construct):
    """Regional REST API with POST /whatsapp, POST /sms and the status callbacks' resource,
    throttled, access-logged, behind a web ACL.

    Nothing here refuses Twilio's signed traffic short of AWS's own quotas: Twilio never
    retries a 429 (https://www.twilio.com/docs/api/errors/11217: "Twilio's webhooks do not
    support rate limiting"), so each one is a message lost. The stage's throttle defaults to
    the account's Region quota (`api_rate_limit`, `api_burst_limit`), the web ACL's rate rule
    counts only requests without a Twilio signature, and the cost cap is the webhook's
    reserved concurrency (`webhook_reserved_concurrency`): a request over it gets API
    Gateway's 500, which Twilio retries under the URL's connection overrides
    (docs/adr/0090-nothing-refused-at-the-edge-for-twilios.md)."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        settings: StackSettings,
        handler: lambda_.IFunction,
        status_handler: lambda_.IFunction,
    ):
        super().__init__(scope, construct_id)
        self.stage_name = "prod"
        access_logs = logs.LogGroup(
            self, "AccessLogs", retention=logs.RetentionDays.ONE_MONTH, removal_policy=RemovalPolicy.DESTROY
        )
        self.api = _rest_api(self, _stage_options(self.stage_name, settings, access_logs))
        self.execution_logs = _execution_logs(self, self.api, self.stage_name, EXECUTION_LOG_LEVEL)
        self._add_routes(handler, status_handler)
        self.firewall_name = f"{Stack.of(self).stack_name}-webhooks"
        self.firewall = _unsigned_per_ip_rate_rule(self, self.firewall_name, settings.api_rate_limit_per_ip)
        wafv2.CfnWebACLAssociation(
            self,
            "FirewallOnStage",
            resource_arn=self.api.deployment_stage.stage_arn,
            web_acl_arn=self.firewall.attr_arn,
        )
        _explain(self.api)
        if settings.webhook_reserved_concurrency:
            _reserve_concurrency(handler, settings.webhook_reserved_concurrency)
        self.throttled_requests = _throttled_requests(self, access_logs)
        self.unsigned_requests_blocked = _unsigned_requests_blocked(self.firewall_name)

    def _add_routes(self, handler: lambda_.IFunction, status_handler: lambda_.IFunction) -> None:
        """POST /whatsapp and POST /sms to the webhook, the status callbacks' path to theirs."""
        integration = apigw.LambdaIntegration(handler)
        self.whatsapp = self.api.root.add_resource("whatsapp")
        self.sms = self.api.root.add_resource("sms")
        for resource in (self.whatsapp, self.sms):
            resource.add_method("POST", integration)
        (status_path,) = STATUS_CALLBACK.routes
        self.status = self.api.root.resource_for_path(status_path.lstrip("/"))
        self.status.add_method("POST", apigw.LambdaIntegration(status_handler))

    def url_of(self, resource: apigw.Resource) -> str:
        return self.api.url_for_path(resource.path)


def _rest_api(scope: Construct, stage: apigw.StageOptions) -> apigw.RestApi:
    """The regional REST API and its one stage."""
    return apigw.RestApi(
        scope,
        "Api",
        # Its metrics' ApiName dimension: unique per stack, so that two deployments in one
        # account and Region do not sum into each other's alarms.
        rest_api_name=f"{Stack.of(scope).stack_name}-webhooks",
        description="Twilio Messaging webhooks",
        # API Gateway's CloudWatch role is one per account and Region: the API does not
        # make its own. Logging needs it set once (docs/deploying.md), or the stack sets it
        # with manage_api_gateway_account_role (infra/constructs/api_gateway_account.py).
        cloud_watch_role=False,
        endpoint_types=[apigw.EndpointType.REGIONAL],  # Twilio calls from its own Regions
        deploy_options=stage,
    )


def _execution_logs(
    scope: Construct, api: apigw.RestApi, stage_name: str, level: apigw.MethodLoggingLevel
) -> logs.LogGroup | None:
    """The stage's execution log group, the stack's own: with a retention, deleted with the
    stack, and there before the stage (which depends on it), so that API Gateway never
    creates it itself. None when the stage writes no execution logs."""
    if level == apigw.MethodLoggingLevel.OFF:
        return None
    group = logs.LogGroup(
        scope,
        "ExecutionLogs",
        log_group_name=execution_log_group_name(api.rest_api_id, stage_name),
        retention=logs.RetentionDays.ONE_MONTH,
        removal_policy=RemovalPolicy.DESTROY,
    )
    api.deployment_stage.node.add_dependency(group)
    return group


def _unsigned_requests_blocked(firewall_name: str) -> cloudwatch.Metric:
    """The requests the web ACL's rule refused, every 5 minutes."""
    return cloudwatch.Metric(
        namespace="AWS/WAFV2",
        metric_name="BlockedRequests",
        # https://docs.aws.amazon.com/waf/latest/developerguide/waf-metrics.html; the web
        # ACL's name and metric name are the same, so either is the WebACL dimension.
        dimensions_map={"WebACL": firewall_name, "Rule": UNSIGNED_RULE, "Region": Aws.REGION},
        statistic="Sum",
        period=Duration.minutes(5),
    )


def _stage_options(
    stage_name: str, settings: StackSettings, access_logs: logs.LogGroup
) -> apigw.StageOptions:
    """Throttled, traced and access-logged; never a body in the logs."""
    return apigw.StageOptions(
        stage_name=stage_name,
        throttling_rate_limit=settings.api_rate_limit,
        throttling_burst_limit=settings.api_burst_limit,
        tracing_enabled=True,
        logging_level=EXECUTION_LOG_LEVEL,
        data_trace_enabled=False,  # bodies are personal data
        access_log_destination=apigw.LogGroupLogDestination(access_logs),
        access_log_format=_access_log_format(),
    )


def _access_log_format() -> apigw.AccessLogFormat:
    """API Gateway's standard JSON fields, and the gateway response's type: `THROTTLED` for a
    request refused by a throttle (the stage's or the account's), as
    https://docs.aws.amazon.com/apigateway/latest/developerguide/supported-gateway-response-types.html
    names it, told apart from the web ACL's refusals (`WAF_FILTERED`) and the webhook's 4xx."""
    standard = apigw.AccessLogFormat.json_with_standard_fields(
        caller=False,
        http_method=True,
        ip=True,
        protocol=True,
        request_time=True,
        resource_path=True,
        response_length=True,
        status=True,
        user=False,
    )
    fields = json.loads(standard.to_string())
    fields["responseType"] = apigw.AccessLogField.context_error_response_type()
    return apigw.AccessLogFormat.custom(json.dumps(fields, separators=(",", ":")))


def _throttled_requests(scope: Construct, access_logs: logs.LogGroup) -> cloudwatch.Metric:
    """The requests API Gateway throttled, counted from the access log (API Gateway's own
    metrics count a 429 only within 4XXError), in the stack's own namespace: a metric filter
    sets no dimension without a field of the log for it, so the namespace keeps two stacks'
    counts apart."""
    counted = logs.MetricFilter(
        scope,
        "ThrottledRequests",
        log_group=access_logs,
        filter_pattern=logs.FilterPattern.string_value("$.responseType", "=", "THROTTLED"),
        metric_namespace=metrics_namespace(Stack.of(scope).stack_name),
        metric_name=THROTTLED_METRIC,
        metric_value="1",
    )
    return counted.metric(statistic="Sum", period=Duration.minutes(5))


def _reserve_concurrency(handler: lambda_.IFunction, executions: int) -> None:
    """The webhook's reserved concurrency: at most this many run at once, whoever calls."""
    function = handler.node.default_child
    assert isinstance(function, lambda_.CfnFunction)
    function.reserved_concurrent_executions = executions


def _unsigned_per_ip_rate_rule(scope: Construct, name: str, limit: int) -> wafv2.CfnWebACL:
    """A web ACL on the stage with one rule: an address that sends more than `limit`
    requests without an X-Twilio-Signature header in 5 minutes is answered 429 until its
    rate falls below it. A request that carries the header is not counted, whatever its
    address: Twilio's addresses are shared and unpublished, and it never retries a 429. The
    scope-down statement is AWS's own example for "requests that are missing a specific
    header" (https://docs.aws.amazon.com/waf/latest/developerguide/waf-rate-based-example-limit-missing-header.html).
    A forger who adds the header passes: the webhook refuses it without a Secrets Manager
    call, and the webhook's reserved concurrency bounds what such a flood costs."""
    return wafv2.CfnWebACL(
        scope,
        "Firewall",
        name=name,
        scope="REGIONAL",
        default_action=wafv2.CfnWebACL.DefaultActionProperty(allow={}),
        visibility_config=wafv2.CfnWebACL.VisibilityConfigProperty(
            cloud_watch_metrics_enabled=True, sampled_requests_enabled=False, metric_name=name
        ),
        rules=[_unsigned_rate_rule(limit)],
    )


def _unsigned_rate_rule(limit: int) -> wafv2.CfnWebACL.RuleProperty:
    """More than `limit` unsigned requests from one address in 5 minutes: 429."""
    return wafv2.CfnWebACL.RuleProperty(
        name=UNSIGNED_RULE,
        priority=0,
        statement=wafv2.CfnWebACL.StatementProperty(
            rate_based_statement=wafv2.CfnWebACL.RateBasedStatementProperty(
                aggregate_key_type="IP",
                limit=limit,
                evaluation_window_sec=300,
                scope_down_statement=wafv2.CfnWebACL.StatementProperty(
                    not_statement=wafv2.CfnWebACL.NotStatementProperty(statement=_has_signature())
                ),
            )
        ),
        action=wafv2.CfnWebACL.RuleActionProperty(
            block=wafv2.CfnWebACL.BlockActionProperty(
                custom_response=wafv2.CfnWebACL.CustomResponseProperty(response_code=429)
            )
        ),
        visibility_config=wafv2.CfnWebACL.VisibilityConfigProperty(
            cloud_watch_metrics_enabled=True,
            sampled_requests_enabled=False,
            metric_name=UNSIGNED_RULE,
        ),
    )


def _has_signature() -> wafv2.CfnWebACL.StatementProperty:
    """The request carries a non-empty X-Twilio-Signature header."""
    return wafv2.CfnWebACL.StatementProperty(
        size_constraint_statement=wafv2.CfnWebACL.SizeConstraintStatementProperty(
            field_to_match=wafv2.CfnWebACL.FieldToMatchProperty(single_header={"Name": SIGNATURE_HEADER}),
            comparison_operator="GT",
            size=0,
            text_transformations=[wafv2.CfnWebACL.TextTransformationProperty(priority=0, type="NONE")],
        )
    )


def _explain(api: apigw.RestApi) -> None:
    """Why cdk-nag's findings on the API do not apply."""
    NagSuppressions.add_resource_suppressions(
        api,
        [
            NagPackSuppression(
                id="AwsSolutions-APIG2",
                reason="Twilio posts a signed form; the webhook and the status callbacks validate the "
                "signature over the whole form, which a request validator cannot do.",
            ),
            NagPackSuppression(
                id="AwsSolutions-APIG4",
                reason="Twilio cannot send IAM or Cognito credentials; every request is authenticated by "
                "its X-Twilio-Signature in the function, and refused with 403 otherwise.",
            ),
            NagPackSuppression(id="AwsSolutions-COG4", reason="Same as APIG4: Twilio signs its requests."),
        ],
        apply_to_children=True,
    )
