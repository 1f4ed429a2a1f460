"""The REST API Twilio calls: POST /whatsapp and POST /sms (the webhook), and POST
/twilio/status/{conversation}/{window}/{message} (status callbacks of the messages we send)."""

from __future__ import annotations

from aws_cdk import RemovalPolicy, Stack
from aws_cdk import aws_apigateway as apigw
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_wafv2 as wafv2
from cdk_nag import NagPackSuppression, NagSuppressions
from constructs import Construct

from functions.registry import STATUS_CALLBACK
from infra.names import StackSettings


class WebhookApi(Construct):
    """Regional REST API with POST /whatsapp, POST /sms and the status callbacks' resource,
    throttled, access-logged."""

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
        self.api = apigw.RestApi(
            self,
            "Api",
            # Its metrics' ApiName dimension: unique per stack, so that two deployments in one
            # account and Region do not sum into each other's alarms.
            rest_api_name=f"{Stack.of(self).stack_name}-webhooks",
            description="Twilio Messaging webhooks",
            # API Gateway's CloudWatch role is one per account and Region: the stack neither
            # creates, replaces nor deletes it. Logging needs it set once (README, Deploy).
            cloud_watch_role=False,
            endpoint_types=[apigw.EndpointType.REGIONAL],  # Twilio calls from its own Regions
            deploy_options=_stage_options(self.stage_name, settings, access_logs),
        )
        integration = apigw.LambdaIntegration(handler)
        self.whatsapp = self.api.root.add_resource("whatsapp")
        self.sms = self.api.root.add_resource("sms")
        for resource in (self.whatsapp, self.sms):
            resource.add_method("POST", integration)
        (status_path,) = STATUS_CALLBACK.routes
        self.status = self.api.root.resource_for_path(status_path.lstrip("/"))
        self.status.add_method("POST", apigw.LambdaIntegration(status_handler))
        self.firewall = _per_ip_rate_rule(self, settings.api_rate_limit_per_ip)
        wafv2.CfnWebACLAssociation(
            self,
            "FirewallOnStage",
            resource_arn=self.api.deployment_stage.stage_arn,
            web_acl_arn=self.firewall.attr_arn,
        )
        _explain(self.api)

    def url_of(self, resource: apigw.Resource) -> str:
        return self.api.url_for_path(resource.path)


def _stage_options(
    stage_name: str, settings: StackSettings, access_logs: logs.LogGroup
) -> apigw.StageOptions:
    """Throttled, traced and access-logged; never a body in the logs."""
    return apigw.StageOptions(
        stage_name=stage_name,
        throttling_rate_limit=settings.api_rate_limit,
        throttling_burst_limit=settings.api_burst_limit,
        tracing_enabled=True,
        logging_level=apigw.MethodLoggingLevel.ERROR,
        data_trace_enabled=False,  # bodies are personal data
        access_log_destination=apigw.LogGroupLogDestination(access_logs),
        access_log_format=apigw.AccessLogFormat.json_with_standard_fields(
            caller=False,
            http_method=True,
            ip=True,
            protocol=True,
            request_time=True,
            resource_path=True,
            response_length=True,
            status=True,
            user=False,
        ),
    )


def _per_ip_rate_rule(scope: Construct, limit: int) -> wafv2.CfnWebACL:
    """A web ACL on the stage with one rule: an address that sends more than `limit`
    requests in 5 minutes is answered 429 until its rate falls below it, so that one
    outsider's flood cannot use up the stage's throttle that Twilio's requests share.
    Twilio calls from many addresses, each far below the limit."""
    visibility = wafv2.CfnWebACL.VisibilityConfigProperty(
        cloud_watch_metrics_enabled=True, sampled_requests_enabled=False, metric_name="PerIpRate"
    )
    return wafv2.CfnWebACL(
        scope,
        "Firewall",
        scope="REGIONAL",
        default_action=wafv2.CfnWebACL.DefaultActionProperty(allow={}),
        visibility_config=wafv2.CfnWebACL.VisibilityConfigProperty(
            cloud_watch_metrics_enabled=True, sampled_requests_enabled=False, metric_name="Webhooks"
        ),
        rules=[
            wafv2.CfnWebACL.RuleProperty(
                name="PerIpRate",
                priority=0,
                statement=wafv2.CfnWebACL.StatementProperty(
                    rate_based_statement=wafv2.CfnWebACL.RateBasedStatementProperty(
                        aggregate_key_type="IP", limit=limit, evaluation_window_sec=300
                    )
                ),
                action=wafv2.CfnWebACL.RuleActionProperty(
                    block=wafv2.CfnWebACL.BlockActionProperty(
                        custom_response=wafv2.CfnWebACL.CustomResponseProperty(response_code=429)
                    )
                ),
                visibility_config=visibility,
            )
        ],
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
